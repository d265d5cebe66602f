"""`--help` for the config-driven commands: every flag with its value type, default and meaning.

draccus builds its help with argparse, which reads `%` in a field's docstring as a format
directive and crashes, lists the fields of every policy type in one block without saying which
type owns which, and omits the default of fields it has no docstring for. This module writes
the help from the dataclasses themselves instead: one section per config, and for a choice
(`--env.type`, `--policy.type`) one section per registered type, or only the chosen type's
when the command line names one. Nothing here imports torch or a simulator.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import inspect
import textwrap
import types
import typing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import draccus
from draccus.wrappers.docstring import get_attribute_docstring

from lerobot.configs.fields import SHOWN_DEFAULT

WIDTH = 100
INDENT = "      "


@dataclasses.dataclass(frozen=True)
class Flag:
    """One command-line flag: `--name=<kind>`, its default and what it means."""

    name: str
    kind: str
    default: str
    meaning: str


@dataclasses.dataclass(frozen=True)
class Section:
    title: str
    flags: tuple[Flag, ...]
    note: str = ""


def wants_help(args: Sequence[str]) -> bool:
    return any(arg in ("-h", "--help") for arg in args)


def format_help(config_class: type, args: Sequence[str], prog: str, description: str = "") -> str:
    """The help text of a command whose flags parse into `config_class`."""
    chosen = chosen_types(args)
    parts = [f"usage: {prog} [--flag=value ...]  (also --flag value)"]
    if description:
        parts.append(description.strip())
    parts.append(
        'Lists and dicts take JSON (\'[0,1]\', \'["a","b"]\', \'{"a": "b"}\'), booleans true/false. A choice such as '
        "--env.type shows only that type's flags when given, e.g. "
        f"`{prog} --env.type=metaworld --help`."
    )
    for section in sections(config_class, "", chosen, title="General flags"):
        parts.append(render_section(section))
    return "\n\n".join(parts) + "\n"


def chosen_types(args: Sequence[str]) -> dict[str, str]:
    """{"env": "metaworld", ...} from `--env.type=metaworld` (or `--env.type metaworld`)."""
    chosen = {}
    tokens = list(args)
    for index, arg in enumerate(tokens):
        name, sep, value = arg.partition("=")
        if name.startswith("--") and name.endswith(".type"):
            if not sep and index + 1 < len(tokens):
                value = tokens[index + 1]
            chosen[name[2:].removesuffix(".type")] = value
    return chosen


def sections(cls: type, prefix: str, chosen: dict[str, str], title: str | None = None) -> Iterator[Section]:
    """The config's own flags first, then one section per nested config or choice."""
    hints = typing.get_type_hints(cls)
    own: list[Flag] = []
    nested: list[tuple[dataclasses.Field, type]] = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        annotation = _strip_optional(hints.get(field.name, Any))
        if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
            nested.append((field, annotation))
        else:
            own.append(leaf_flag(cls, field, annotation, prefix))
    yield Section(title or f"{cls.__name__} flags", tuple(own))
    for field, annotation in nested:
        name = f"{prefix}{field.name}"
        if issubclass(annotation, draccus.ChoiceRegistry):
            yield from choice_sections(cls, field, annotation, name, chosen)
        else:
            yield from sections(annotation, f"{name}.", chosen, f"--{name}.*: {_meaning(cls, field.name)}")


def choice_sections(
    owner: type, field: dataclasses.Field, base: type, name: str, chosen: dict[str, str]
) -> Iterator[Section]:
    """`--<name>.type` and the flags of each registered type (only the chosen one, if any)."""
    known = list(base.get_known_choices())
    default = field.default if field.default is not dataclasses.MISSING else None
    required = "required" if default is None else _type_name(default)
    type_flag = Flag(f"--{name}.type", "{" + ",".join(known) + "}", required, _meaning(owner, field.name))
    picked = chosen.get(name)
    note = ""
    if picked is not None and picked not in known:
        note = f"--{name}.type={picked} is not one of {', '.join(known)}; the flags of every type follow."
    yield Section(f"--{name}: {_first_sentence(_meaning(owner, field.name))}", (type_flag,), note)
    for choice in [picked] if picked in known else known:
        choice_class = base.get_choice_class(choice)
        title = f"--{name}.type={choice} ({choice_class.__name__})"
        for section in sections(choice_class, f"{name}.", chosen, title):
            yield dataclasses.replace(
                section, flags=tuple(f for f in section.flags if f.name != f"--{name}.type")
            )


def leaf_flag(cls: type, field: dataclasses.Field, annotation: Any, prefix: str) -> Flag:
    return Flag(
        name=f"--{prefix}{field.name}",
        kind=kind_of(annotation),
        default=default_text(field),
        meaning=_meaning(cls, field.name),
    )


def kind_of(annotation: Any) -> str:
    """What a flag's value looks like: `int`, `true|false`, `{a,b}`, `[int,...]`, ..."""
    annotation = _strip_optional(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "{" + ",".join(str(value) for value in typing.get_args(annotation)) + "}"
    if annotation is bool:
        return "true|false"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "{" + ",".join(str(member.value) for member in annotation) + "}"
    if origin in (list, tuple, Sequence):
        inner = typing.get_args(annotation)
        return f"[{kind_of(inner[0]) if inner else 'value'},...]"
    if origin is dict:
        return "json-object"
    if origin in (typing.Union, types.UnionType):
        return "|".join(kind_of(arg) for arg in typing.get_args(annotation))
    if annotation is Path:
        return "path"
    if isinstance(annotation, type):
        return annotation.__name__
    return "value"


def default_text(field: dataclasses.Field) -> str:
    if SHOWN_DEFAULT in field.metadata:  # computed at run time (see the field's docstring)
        return field.metadata[SHOWN_DEFAULT]
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    return _value_text(value)


def render_section(section: Section) -> str:
    lines = [section.title]
    if section.note:
        lines.append(f"  ({section.note})")
    for flag in section.flags:
        lines.append(f"  {flag.name}={flag.kind}  (default: {flag.default})")
        meaning = flag.meaning or "(no description)"
        lines.extend(textwrap.wrap(meaning, WIDTH, initial_indent=INDENT, subsequent_indent=INDENT))
    return "\n".join(lines)


def _meaning(cls: type, field_name: str) -> str:
    """The field's docstring (or, as LeRobot writes them, its comment), on one line."""
    text = field_docstrings(cls).get(field_name)
    if text is None:
        doc = get_attribute_docstring(cls, field_name)
        text = doc.docstring_below or doc.comment_above or doc.comment_inline or ""
    return " ".join(text.split())


@functools.cache
def field_docstrings(cls: type) -> dict[str, str]:
    """{field: the string literal right below its definition}, a subclass's over its bases'."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        except (OSError, TypeError, SyntaxError, IndexError, AttributeError):
            continue
        for node, following in zip(body, body[1:], strict=False):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _first_sentence(text: str) -> str:
    return text.split(". ")[0].rstrip(".")


def _value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if dataclasses.is_dataclass(value):
        return _type_name(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_value_text(v) for v in value) + "]"
    return str(value)


def _type_name(value: Any) -> str:
    choice = getattr(value, "type", None)
    return choice if isinstance(choice, str) else type(value).__name__


def _strip_optional(annotation: Any) -> Any:
    """`X | None` -> X (the default says when None is allowed)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation
