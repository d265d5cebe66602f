"""Base of every policy config: a draccus choice registry selected with `--policy.type=`.

`CheckpointPolicyConfig` adds what LeRobot's checkpoint configs (config.json) carry: the
policy's input and output features and how each kind is normalised. Its subclasses (`act`,
`diffusion`) are the types `--policy.path` can load.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import draccus

from lerobot.configs.env import EnvConfig
from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.utils.constants import ACTION, OBS_STATE
from lerobot.utils.errors import ConfigError


@dataclass
class PreTrainedConfig(draccus.ChoiceRegistry, abc.ABC):
    device: str | None = None
    """Torch device; None picks cuda, else mps, else cpu."""
    use_amp: bool = False
    """Run inference under torch autocast (mixed precision) on devices that support it."""

    @property
    def type(self) -> str:
        return self.get_choice_name(self.__class__)

    def check_env(self, env: EnvConfig) -> None:
        """Fail before anything starts when this policy cannot run on `env` (default: it can)."""


@dataclass
class CheckpointPolicyConfig(PreTrainedConfig):
    """A policy whose weights and statistics come from a LeRobot checkpoint directory.

    Field names follow LeRobot's config.json, so a checkpoint's config loads unchanged and
    any field can be overridden from the command line (`--policy.n_action_steps=10`).
    """

    n_obs_steps: int = 1
    """Observations (current and past) the policy reads per decision."""
    input_features: dict[str, PolicyFeature] = field(default_factory=dict)
    """Batch keys the policy reads, with their kind and shape (images channel-first)."""
    output_features: dict[str, PolicyFeature] = field(default_factory=dict)
    """Batch keys the policy writes; `action` for every policy here."""
    normalization_mapping: dict[str, NormalizationMode] = field(default_factory=dict)
    """Normalisation per feature kind (VISUAL, STATE, ENV, ACTION); missing kinds are left as is."""
    empty_cameras: int = 0
    """Camera inputs the env may lack; each missing one gets a black frame instead of an error."""
    pretrained_path: str | None = None
    """The checkpoint directory this config was read from (set by `--policy.path`)."""
    pretrained_revision: str | None = None
    """The hub revision the checkpoint was fetched at (`--policy.revision`)."""

    def __post_init__(self) -> None:
        if self.empty_cameras < 0:
            raise ConfigError(f"--policy.empty_cameras={self.empty_cameras}: must be 0 or more")

    @property
    def image_features(self) -> dict[str, PolicyFeature]:
        return {k: ft for k, ft in self.input_features.items() if ft.type is FeatureType.VISUAL}

    @property
    def robot_state_feature(self) -> PolicyFeature | None:
        feature = self.input_features.get(OBS_STATE)
        return feature if feature is not None and feature.type is FeatureType.STATE else None

    @property
    def env_state_feature(self) -> PolicyFeature | None:
        return next((ft for ft in self.input_features.values() if ft.type is FeatureType.ENV), None)

    @property
    def action_feature(self) -> PolicyFeature | None:
        feature = self.output_features.get(ACTION)
        return feature if feature is not None and feature.type is FeatureType.ACTION else None

    def check_env_inputs(
        self, env_features: Mapping[str, PolicyFeature], rename_map: Mapping[str, str]
    ) -> None:
        """Fail before any simulator starts when the env cannot feed this policy.

        Every input must reach the policy under its own key (after `--rename_map`) with the same
        vector length or image channel count; up to `empty_cameras` cameras may be missing.
        """
        provided = {rename_map.get(key, key): ft for key, ft in env_features.items()}
        missing = [key for key in self.input_features if key not in provided]
        missing_images = [key for key in missing if key in self.image_features]
        missing_other = [key for key in missing if key not in self.image_features]
        if missing_other or len(missing_images) > self.empty_cameras:
            raise ConfigError(_missing_inputs_message(missing, provided, self.empty_cameras))
        for key, feature in self.input_features.items():
            if key in provided and _input_size(feature) != _input_size(provided[key]):
                raise ConfigError(
                    f"--policy.path: the checkpoint reads {key!r} with shape {list(feature.shape)}, "
                    f"the env gives {list(provided[key].shape)}; choose env settings that match the "
                    "policy's training data"
                )


def _input_size(feature: PolicyFeature) -> int:
    """What must agree between env and policy: channels for images, length for vectors."""
    return feature.shape[0] if feature.shape else 0


def _missing_inputs_message(missing: list[str], provided: Mapping[str, PolicyFeature], empty: int) -> str:
    example = json.dumps({next(iter(provided), "observation.image"): missing[0]})
    return (
        f"--policy.path: the checkpoint reads {', '.join(missing)}, which the env does not provide "
        f"(it provides {', '.join(provided)}); map keys with --rename_map='{example}' or feed blank "
        f"cameras with --policy.empty_cameras=N (now {empty})"
    )
