"""Facts about a config field, kept on the field itself: `field(default=..., metadata=facts(...))`.

A list of field names kept elsewhere goes stale when a field is added or moved; a fact on the
field cannot. The lists the code needs (the settings a resume may change, those only the Ray
backend reads) are read off the fields.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

RESULT_NEUTRAL = "result_neutral"
ONLY_BACKEND = "only_backend"
SECRET = "secret"
REDACTED = "<redacted>"
SHOWN_DEFAULT = "shown_default"


def facts(
    *,
    result_neutral: bool = False,
    only_backend: str | None = None,
    secret: bool = False,
    shown_default: str | None = None,
) -> dict[str, Any]:
    """The metadata of a config field.

    `result_neutral`: changing the setting cannot change any episode's outcome (batch size,
    workers, timeouts, videos, where results go), so a resumed run may change it.
    `only_backend`: the setting is read by that `--eval.backend` alone; with another it is an
    error rather than silently ignored.
    `secret`: a credential (an API key): never written to a result file, a report or a log.
    `shown_default`: what `--help` prints as the default of a field computed at run time
    (`outputs/train/<date>/<time>_<job_name>`).
    """
    metadata: dict[str, Any] = {}
    if shown_default is not None:
        metadata[SHOWN_DEFAULT] = shown_default
    if secret:
        metadata[SECRET] = True
    if result_neutral:
        metadata[RESULT_NEUTRAL] = True
    if only_backend is not None:
        metadata[ONLY_BACKEND] = only_backend
    return metadata


def result_neutral_keys(config_class: type) -> frozenset[str]:
    """The dotted names (`eval.batch_size`, `policy.device`, ...) of every result-neutral field
    of `config_class` and of the config classes its fields hold (their base classes' fields,
    which every subclass has)."""
    return frozenset(
        name for name, field in _dotted_fields(config_class) if field.metadata.get(RESULT_NEUTRAL)
    )


def secret_paths(config: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths (`("policy", "api_key")`) of the secret fields that hold a value in `config`,
    found on the instance: a `--policy.type`'s own fields are not on the declared base class."""
    found: list[tuple[str, ...]] = []
    for field in dataclasses.fields(config):
        value = getattr(config, field.name, None)
        if field.metadata.get(SECRET) and value is not None:
            found.append((*prefix, field.name))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            found.extend(secret_paths(value, (*prefix, field.name)))
    return found


def redact(encoded: dict[str, Any], paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """`encoded` (a config as plain values) with the value at each path replaced by REDACTED."""
    for path in paths:
        node = encoded
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node:
            node[path[-1]] = REDACTED
    return encoded


def backend_only_fields(config_class: type, backend: str) -> list[str]:
    """The fields of `config_class` (not nested) that only `backend` reads."""
    return [f.name for f in dataclasses.fields(config_class) if f.metadata.get(ONLY_BACKEND) == backend]


def _dotted_fields(config_class: type, prefix: str = "") -> list[tuple[str, dataclasses.Field]]:
    hints = typing.get_type_hints(config_class)
    found = []
    for field in dataclasses.fields(config_class):
        name = f"{prefix}{field.name}"
        nested = _dataclass_in(hints.get(field.name))
        if nested is not None:
            found.extend(_dotted_fields(nested, f"{name}."))
        else:
            found.append((name, field))
    return found


def _dataclass_in(annotation: Any) -> type | None:
    """The dataclass an annotation holds: `EvalConfig`, or `EnvConfig | None`."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    options = typing.get_args(annotation) if union else (annotation,)
    return next((o for o in options if isinstance(o, type) and dataclasses.is_dataclass(o)), None)


def changed_settings(saved: dict[str, Any], current: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{dotted flag: (saved value, current value)} for every setting that differs between two
    encoded configs (a resume's saved config against the flags given now)."""
    old, new = flatten_config(saved), flatten_config(current)
    return {k: (old.get(k), new.get(k)) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}


def flatten_config(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """An encoded config as {dotted flag: value} (`rename_map` stays one value)."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and key != "rename_map":
            flat.update(flatten_config(value, f"{name}."))
        else:
            flat[name] = value
    return flat
