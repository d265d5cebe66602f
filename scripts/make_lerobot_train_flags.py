"""Write tests/fixtures/lerobot_0_6_1_train_flags.json: every flag of LeRobot 0.6.1's
`lerobot-train`, with LeRobot's default.

Run once, by hand, with LeRobot 0.6.1 in a scratch virtual environment outside this repository
(never a dependency of this project):

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python -c <(echo mujoco==3.3.0) "lerobot[metaworld,diffusion]==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_lerobot_train_flags.py

The flags are the fields of LeRobot's `TrainPipelineConfig`, nested configs flattened with dots
(`dataset.image_transforms.enable`); a dict or list field is one flag (`rename_map`). A choice
field is `<name>.type` (`optimizer.type`), or its bare name for `policy`, `env` and
`reward_model`, whose types live in their own registries; the optimizer and scheduler types are
listed under `choices` with their fields. `policy.*` adds the fields of LeRobot's base
`PreTrainedConfig`, which every policy type has, and `policy.path` / `reward_model.path`, the
checkpoint flags LeRobot's parser reads.

A default is JSON (tuples as lists, a factory's value when it is JSON), or a marker:
`<required>` (no default), `<choice>` (a registry of types), `<path>` (a checkpoint flag),
`<platform>` (LeRobot picks it on the machine it runs on). tests/configs/test_train_flags.py
checks that each one is accepted here with LeRobot's meaning and default, or refused in one line.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import json
import types
import typing
from pathlib import Path
from typing import Any

import draccus

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lerobot_0_6_1_train_flags.json"
REGISTRY_FIELDS = ("policy", "env", "reward_model")
"""Choice fields named bare: their types and fields are the policy, env and reward registries'."""
PLATFORM_DEPENDENT = {"dataset.video_backend"}
"""torchcodec where it loads, else pyav (LeRobot's `get_safe_default_video_backend`)."""
REQUIRED, CHOICE, PATH, PLATFORM, FACTORY = "<required>", "<choice>", "<path>", "<platform>", "<factory>"


def nested_dataclass(annotation: Any) -> type | None:
    """The dataclass a field holds directly (`EvalConfig`, `PeftConfig | None`); not one inside
    a dict or list, whose field is a single flag."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    options = typing.get_args(annotation) if union else (annotation,)
    return next((o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)), None)


def default_of(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return encode(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return encode(field.default_factory())
    return REQUIRED


def encode(value: Any) -> Any:
    try:
        return json.loads(json.dumps(draccus.encode(value)))
    except (TypeError, ValueError):
        return FACTORY


def flags_of(config_class: type, prefix: str = "") -> dict[str, Any]:
    hints = typing.get_type_hints(config_class)
    found: dict[str, Any] = {}
    for field in dataclasses.fields(config_class):
        if not field.init:
            continue
        name = f"{prefix}{field.name}"
        nested = nested_dataclass(hints[field.name])
        if name in REGISTRY_FIELDS:
            found[name] = CHOICE
        elif nested is not None and issubclass(nested, draccus.ChoiceRegistry):
            found[f"{name}.type"] = CHOICE
        elif nested is not None:
            found.update(flags_of(nested, f"{name}."))
        else:
            found[name] = PLATFORM if name in PLATFORM_DEPENDENT else default_of(field)
    return found


def choices_of(registry: type) -> dict[str, dict[str, Any]]:
    return {
        name: {f.name: default_of(f) for f in dataclasses.fields(cls) if f.init}
        for name, cls in registry.get_known_choices().items()
    }


def reference(module: str, name: str) -> Any:
    """A name of LeRobot's package (this script runs in LeRobot's environment, not ours)."""
    return getattr(importlib.import_module(module), name)


def main() -> None:
    for registering in ("lerobot.optim.optimizers", "lerobot.optim.schedulers", "lerobot.rewards"):
        importlib.import_module(registering)  # the optimizer, scheduler and reward model types
    train_config = reference("lerobot.configs.train", "TrainPipelineConfig")
    flags = flags_of(train_config)
    base = {f.name: f for f in dataclasses.fields(reference("lerobot.configs.policies", "PreTrainedConfig"))}
    flags.update({f"policy.{name}": default_of(field) for name, field in base.items() if field.init})
    flags.update({f"{name}.path": PATH for name in train_config.__get_path_fields__()})
    document = {
        "lerobot_version": importlib.metadata.version("lerobot"),
        "flags": dict(sorted(flags.items())),
        "choices": {
            "optimizer.type": choices_of(reference("lerobot.optim", "OptimizerConfig")),
            "scheduler.type": choices_of(reference("lerobot.optim", "LRSchedulerConfig")),
        },
        "reward_model_types": sorted(
            reference("lerobot.configs.rewards", "RewardModelConfig").get_known_choices()
        ),
    }
    OUT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {len(flags)} flags to {OUT}")


if __name__ == "__main__":
    main()
