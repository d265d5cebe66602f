"""What `lerobot-record-sim --resume=true` checks of --root before torch or a simulator loads:
that it holds a recording this command can continue. That is a dataset (meta/info.json) with
the log lerobot-record-sim keeps beside it (meta/recording.json), recorded with the same
settings (those that could change an episode: the fields say which, `configs.fields`), at the
env's frame rate and with the features the env gives. Each refusal is one line saying why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lerobot.configs.env import EnvConfig
from lerobot.configs.fields import changed_settings, result_neutral_keys
from lerobot.configs.record import RecordSimConfig
from lerobot.configs.types import FeatureType
from lerobot.datasets import layout
from lerobot.datasets.reader import DatasetError, read_info
from lerobot.evaluation.store.output_dir import encode_config
from lerobot.utils.errors import ConfigError

NEUTRAL_KEYS = result_neutral_keys(RecordSimConfig)
"""Settings a resume may change: where the dataset is, how many episodes, batch size, logging."""


def recording_settings(cfg: RecordSimConfig) -> dict[str, Any]:
    """The resolved flags, as meta/recording.json keeps them (secrets redacted)."""
    return encode_config(cfg)


def check_resumable(cfg: RecordSimConfig) -> None:
    """ConfigError (one line) unless --root holds a recording that `cfg` continues."""
    root, prefix = cfg.root, f"--resume=true: --root={cfg.root}"
    if not (root / layout.INFO_PATH).is_file():
        raise ConfigError(
            f"{prefix} holds no dataset (no {layout.INFO_PATH}: no episode was kept before it stopped); "
            "delete it and record again without --resume=true"
        )
    if not (root / layout.RECORDING_LOG_PATH).is_file():
        raise ConfigError(
            f"{prefix} has no {layout.RECORDING_LOG_PATH}, so lerobot-record-sim did not record it "
            "(or recorded it before it could resume); record into a new directory"
        )
    try:
        info = read_info(root)
        saved = json.loads((root / layout.RECORDING_LOG_PATH).read_text())["settings"]
    except (DatasetError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{prefix}: its metadata is unreadable ({exc})") from None
    (task,) = cfg.env.tasks()
    if info.get("fps") != task.fps:
        raise ConfigError(f"{prefix} was recorded at {info.get('fps')} fps; --env.fps={task.fps} now")
    differences = settings_differences(saved, recording_settings(cfg))
    if differences:
        raise ConfigError(
            f"{prefix} was recorded with other settings ({'; '.join(differences)}); use those, "
            "or record into a new directory"
        )
    differences = feature_differences(info.get("features", {}), cfg.env)
    if differences:
        raise ConfigError(f"{prefix}: its info.json features are not the env's ({'; '.join(differences)})")


def settings_differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """'--flag: was X, now Y' for each setting that could change an episode."""
    return [
        f"--{k}: was {was!r}, now {now!r}"
        for k, (was, now) in changed_settings(dict(saved), dict(current)).items()
        if k not in NEUTRAL_KEYS
    ]


def feature_differences(features: Mapping[str, Mapping[str, Any]], env: EnvConfig) -> list[str]:
    """Each recorded feature the env no longer gives, or gives in another shape."""
    given = {}
    for key, feature in env.policy_features().items():
        shape = tuple(feature.shape)
        given[key] = (*shape[1:], shape[0]) if feature.type is FeatureType.VISUAL else shape
    differences = []
    for key, feature in features.items():
        if key in layout.INDEX_FEATURES:
            continue
        if key not in given:
            differences.append(f"{key}: recorded, not given by the env")
        elif tuple(feature["shape"]) != given[key]:
            differences.append(
                f"{key}: recorded as {list(feature['shape'])}, the env gives {list(given[key])}"
            )
    return differences
