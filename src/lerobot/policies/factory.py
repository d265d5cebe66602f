"""Build a policy from its config: a built-in, a LeRobot checkpoint (`--policy.path`) or a plugin.

The public functions have LeRobot 0.6.1's names and signatures (`make_policy`,
`make_pre_post_processors`, `get_policy_class`, `make_policy_config`), so code written against
`lerobot.policies.factory` runs unchanged.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

from lerobot.configs.env import EnvConfig
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.processor.policy_processors import ProcessorConfigKwargs, make_pre_post_processors
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_STATE
from lerobot.utils.device_utils import check_device_available, resolve_device
from lerobot.utils.errors import ConfigError
from lerobot.utils.not_in_this_build import refused_names

__all__ = [
    "ProcessorConfigKwargs",
    "get_policy_class",
    "make_policy",
    "make_policy_config",
    "make_pre_post_processors",
    "policy_class",
]

logger = logging.getLogger(__name__)


def make_policy(
    cfg: PreTrainedConfig,
    ds_meta: Any | None = None,
    env_cfg: EnvConfig | None = None,
    rename_map: dict[str, str] | None = None,
) -> PreTrainedPolicy:
    """The policy for `cfg`, on its device and in eval mode.

    Checkpoint policies get their weights from the checkpoint's model.safetensors, loaded with
    strict key matching; their statistics live in the processors (`make_pre_post_processors`),
    not in the policy. A checkpoint-type config without `pretrained_path` builds a fresh model
    whose features come from `ds_meta` (a dataset's metadata, LeRobot's `features` dict) when
    the config has none. With `env_cfg`, a checkpoint's inputs are checked against what the env
    provides (after `rename_map`) before anything is built.
    """
    check_device_available(cfg.device)
    device = resolve_device(cfg.device)
    if cfg.use_amp and device.type == "mps":
        logger.warning("--policy.use_amp: mixed precision is not available on mps; running in float32")
        cfg.use_amp = False
    if isinstance(cfg, CheckpointPolicyConfig):
        if not cfg.input_features:
            _set_fresh_features(cfg, ds_meta, env_cfg)
        if env_cfg is not None:
            cfg.check_env_inputs(env_cfg.policy_features(), rename_map or {})
    policy = _build(cfg, env_cfg)
    policy.to(device)
    policy.eval()
    return policy


def get_policy_class(name: str) -> type[PreTrainedPolicy]:
    """The policy class of a registered `--policy.type`, imported only when asked for.

    By LeRobot's convention the model lives next to its config: `<pkg>.configuration_<x>`
    registers the config, `<pkg>.modeling_<x>` defines the policy whose `config_class` it is.
    That covers the built-in types and plugins alike.
    """
    config_class = _config_class(name)
    module_name = config_class.__module__.replace(".configuration_", ".modeling_")
    if module_name == config_class.__module__:
        raise ValueError(f"--policy.type={name!r}: {module_name} is not a configuration_<name> module")
    module = importlib.import_module(module_name)
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, PreTrainedPolicy)
            and getattr(value, "config_class", None) is config_class
        ):
            return value
    raise ValueError(f"--policy.type={name!r}: {module_name} defines no policy for {config_class.__name__}")


policy_class = get_policy_class
"""Our earlier name for `get_policy_class`."""


def make_policy_config(policy_type: str, **kwargs: Any) -> PreTrainedConfig:
    """The config registered under `policy_type`, built with `kwargs`."""
    return _config_class(policy_type)(**kwargs)


def dataset_policy_features(
    features: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, PolicyFeature], dict[str, PolicyFeature]]:
    """(inputs, outputs) from a LeRobot dataset's `features` (info.json): camera frames
    (stored height x width x channels) become channel-first VISUAL inputs, the state vectors
    STATE or ENV inputs, `action` the output; bookkeeping columns are left out."""
    inputs: dict[str, PolicyFeature] = {}
    outputs: dict[str, PolicyFeature] = {}
    for key, feature in features.items():
        shape = tuple(feature["shape"])
        if feature.get("dtype") in ("video", "image"):
            inputs[key] = PolicyFeature(FeatureType.VISUAL, (shape[2], shape[0], shape[1]))
        elif key == OBS_STATE:
            inputs[key] = PolicyFeature(FeatureType.STATE, shape)
        elif key == OBS_ENV_STATE:
            inputs[key] = PolicyFeature(FeatureType.ENV, shape)
        elif key == ACTION:
            outputs[key] = PolicyFeature(FeatureType.ACTION, shape)
    return inputs, outputs


def _set_fresh_features(cfg: CheckpointPolicyConfig, ds_meta: Any | None, env_cfg: EnvConfig | None) -> None:
    """A fresh model's features: the dataset's (as LeRobot prefers), else the env's."""
    if ds_meta is not None:
        inputs, outputs = dataset_policy_features(ds_meta.features)
    elif env_cfg is not None:
        features = env_cfg.policy_features()
        inputs = {k: ft for k, ft in features.items() if ft.type is not FeatureType.ACTION}
        outputs = {k: ft for k, ft in features.items() if ft.type is FeatureType.ACTION}
    else:
        return
    cfg.input_features = inputs
    cfg.output_features = cfg.output_features or outputs


def _config_class(policy_type: str) -> type[PreTrainedConfig]:
    try:
        return PreTrainedConfig.get_choice_class(policy_type)
    except (KeyError, ValueError):
        known = ", ".join(PreTrainedConfig.get_known_choices())
        raise ConfigError(
            f"--policy.type={policy_type!r}: unknown policy type; choose one of {known}"
        ) from None


def _build(cfg: PreTrainedConfig, env_cfg: EnvConfig | None) -> PreTrainedPolicy:
    if isinstance(cfg, CheckpointPolicyConfig):
        return _load_checkpoint(cfg)
    return get_policy_class(cfg.type).for_env(cfg, env_cfg)


def _load_checkpoint(cfg: CheckpointPolicyConfig) -> PreTrainedPolicy:
    """The checkpoint's model with its weights (strict names), or a fresh one when there is no
    checkpoint."""
    cls = get_policy_class(cfg.type)
    if cfg.pretrained_path is None:
        logger.warning("--policy.type=%s without --policy.path: a freshly initialised model", cfg.type)
        return cls(cfg)
    return cls.from_pretrained(
        cfg.pretrained_path, config=cfg, strict=True, device=resolve_device(cfg.device)
    )


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
