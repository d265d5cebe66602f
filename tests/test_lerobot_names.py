"""Every public name of LeRobot 0.6.1 a user touches for evaluation and loading resolves here.

tests/fixtures/lerobot_0_6_1_names.json lists them by module, as LeRobot's own package defines
them (scripts/make_lerobot_names.py). Each one either exists, a function taking the calls
LeRobot's takes, or is refused in one line on use that names it and what to use instead
(lerobot.utils.not_in_this_build).
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path

import pytest

from lerobot.utils.errors import NotInThisBuildError
from lerobot.utils.not_in_this_build import REFUSED, Refused

NAMES = json.loads((Path(__file__).parent / "fixtures" / "lerobot_0_6_1_names.json").read_text())["modules"]
ENTRIES = [(module, name, spec) for module, names in NAMES.items() for name, spec in names.items()]
POSITIONAL = {"POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"}


def resolve(module: str, name: str):
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("module", "name", "spec"), ENTRIES, ids=[f"{m}.{n}" for m, n, _ in ENTRIES])
def test_every_lerobot_name_exists_or_is_refused_in_one_line(module, name, spec):
    value = resolve(module, name)
    if isinstance(value, Refused):
        with pytest.raises(NotInThisBuildError) as error:
            value()
        message = str(error.value)
        assert message.startswith(f"{module}.{name}: ") and "\n" not in message
        assert "use" in message or "takes" in message, message
        return
    assert name not in REFUSED.get(module, {}), f"{module}.{name} exists: drop it from the refusal table"
    if spec["kind"] == "function" and "params" in spec and callable(value):
        assert_accepts_lerobots_calls(inspect.signature(value), spec["params"])


def assert_accepts_lerobots_calls(ours: inspect.Signature, theirs: list[list[str]]) -> None:
    """LeRobot's positional parameters come first, in its order; every parameter it takes by
    name, we take by name (or through **kwargs)."""
    params = list(ours.parameters.values())
    takes_any_keyword = any(p.kind is p.VAR_KEYWORD for p in params)
    takes_more_positionals = any(p.kind is p.VAR_POSITIONAL for p in params)
    ours_positional = [p.name for p in params if p.kind.name in POSITIONAL]
    their_positional = [name for name, kind in theirs if kind in POSITIONAL]
    if not takes_more_positionals:
        assert ours_positional[: len(their_positional)] == their_positional, (
            ours_positional,
            their_positional,
        )
    ours_by_name = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
    for name, kind in theirs:
        if kind in ("VAR_POSITIONAL", "VAR_KEYWORD", "POSITIONAL_ONLY"):
            continue
        assert name in ours_by_name or takes_any_keyword, f"parameter {name!r} is not accepted"


def test_the_refusal_table_names_only_lerobots_names():
    """No stale entries: every refused name is one LeRobot has, in the module LeRobot has it."""
    listed = {(module, name) for module, name, _ in ENTRIES}
    assert [(m, n) for m, names in REFUSED.items() for n in names if (m, n) not in listed] == []


def test_a_refused_name_imports_and_fails_only_on_use():
    from lerobot.processor import GripperPenaltyProcessorStep  # a hardware step: not in this build

    assert "not in this build" in repr(GripperPenaltyProcessorStep)
    with pytest.raises(
        NotInThisBuildError, match=r"^lerobot.processor.GripperPenaltyProcessorStep: real robots"
    ):
        GripperPenaltyProcessorStep.from_pretrained("x")
    with pytest.raises(NotInThisBuildError):

        class Mine(GripperPenaltyProcessorStep):  # subclassing is a use too
            pass

    with pytest.raises(AttributeError):
        importlib.import_module("lerobot.processor").NoSuchName  # noqa: B018


def test_the_docs_list_every_refused_name_with_its_reason():
    page = (Path(__file__).parents[1] / "docs" / "source" / "refused_names.mdx").read_text()
    for module, names in REFUSED.items():
        section = page.split(f"## `{module}`\n", 1)[1].split("\n## ", 1)[0]
        for name, reason in names.items():
            line = next(line for line in section.splitlines() if f"`{name}`" in line)
            assert line.endswith(f": {reason}."), (module, name)
