"""LeRobot checkpoint directories: find them (disk or hub cache) and read their config.

A checkpoint is a directory with `config.json` (a `type` field and the policy's settings),
`model.safetensors` and, since LeRobot 0.4, `policy_preprocessor.json` /
`policy_postprocessor.json` with their `.safetensors` statistics. Older checkpoints keep the
statistics inside model.safetensors (`normalize_inputs.buffer_observation_state.mean`, ...).

Only safetensors files are read: no pickle, and no code from a checkpoint is ever imported.
Every problem a user can fix becomes a one-line `CheckpointError` naming `--policy.path`.
Nothing here imports torch: the command line resolves `--policy.path` before anything starts.
This module knows the files; which policy types load and the config a config.json makes are
the policy registry's (`lerobot.configs.policies`), and the weights are loaded by
`lerobot.policies.checkpoint`.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lerobot.configs.hub import DEFAULT_HUB, REPO_ID, HubOptions, snapshot
from lerobot.configs.types import PolicyFeature
from lerobot.utils.errors import ConfigError

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
PREPROCESSOR_FILE = "policy_preprocessor.json"
POSTPROCESSOR_FILE = "policy_postprocessor.json"
# What a snapshot download fetches: configs and safetensors, never pickles or code.
HUB_PATTERNS = ["*.json", "*.safetensors"]
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
LEGACY_NORM_PREFIXES = ("normalize_inputs.", "normalize_targets.", "unnormalize_outputs.")


class CheckpointError(ConfigError):
    """A checkpoint that cannot be found, read or loaded; the message is one line."""


def resolve_checkpoint(path: str, revision: str | None = None, hub: HubOptions = DEFAULT_HUB) -> Path:
    """The local directory of `--policy.path`: the directory itself, or the hub snapshot."""
    local = Path(path).expanduser()
    if local.exists():
        if not local.is_dir():
            raise CheckpointError(
                f"--policy.path={path}: is a file; pass the checkpoint directory that holds {CONFIG_FILE}"
            )
        return local.resolve()
    if not REPO_ID.match(path) or path.startswith((".", "~")):
        raise CheckpointError(
            f"--policy.path={path}: no such directory (and not a hub repo id like 'user/model')"
        )
    return snapshot(
        path,
        flag="--policy.path",
        what="checkpoint",
        local_hint="pass a local directory",
        revision=revision,
        patterns=HUB_PATTERNS,
        error=CheckpointError,
        hub=hub,
    )


def read_any_policy_type(directory: Path, flag: str) -> str:
    """The `type` of a checkpoint's config.json, of any LeRobot policy type (the bridge runs
    types this build lacks), after checking that its weights are safetensors."""
    policy_type = read_config_json(directory, flag)["type"]
    check_weights_file(directory, flag)
    return str(policy_type)


def read_config_json(directory: Path, flag: str) -> dict[str, Any]:
    """config.json as a dict with a `type`, or a one-line CheckpointError."""
    config_path = directory / CONFIG_FILE
    if not config_path.is_file():
        raise CheckpointError(
            f"--policy.path={flag}: no {CONFIG_FILE} in {directory}; is this a LeRobot checkpoint?"
        )
    try:
        config = json.loads(config_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"--policy.path={flag}: {CONFIG_FILE} is not valid JSON ({exc})") from None
    if not isinstance(config, dict) or "type" not in config:
        raise CheckpointError(f"--policy.path={flag}: {CONFIG_FILE} has no 'type' field (e.g. \"act\")")
    return config


def check_weights_file(directory: Path, flag: str) -> None:
    if (directory / WEIGHTS_FILE).is_file():
        return
    pickles = sorted(p.name for p in directory.iterdir() if p.suffix in PICKLE_SUFFIXES)
    hint = f"; pickle files ({', '.join(pickles)}) are never loaded" if pickles else ""
    raise CheckpointError(f"--policy.path={flag}: no {WEIGHTS_FILE} in {directory}{hint}")


def config_fields(config_class: type, checkpoint_config: Mapping[str, Any]) -> dict[str, Any]:
    """The config.json entries `config_class` knows; training-only settings are dropped.

    The saved device is dropped too: evaluation picks the best device of this machine unless
    `--policy.device` says otherwise.
    """
    known = set(config_class.__dataclass_fields__)
    kept = {
        k: v for k, v in checkpoint_config.items() if k in known and k not in ("device", "pretrained_path")
    }
    ignored = sorted(set(checkpoint_config) - set(kept) - {"type"})
    if ignored:
        logger.debug("config.json settings not used at evaluation: %s", ", ".join(ignored))
    return kept


def encode_json_value(value: Any) -> Any:
    """A config value as JSON: features as {type, shape}, enums by value, paths as strings."""
    if isinstance(value, PolicyFeature):
        return {"type": str(value.type), "shape": list(value.shape)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): encode_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode_json_value(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
