"""What the flow-matching VLA configs (SmolVLA, π0, π0.5) share beyond their fields: blank
cameras, the input check against an env, and LeRobot's cosine learning-rate preset.

Kept free of torch and transformers, as every config module is (they register `--policy.type`
when `lerobot.policies` is imported).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from lerobot.configs.optim import AdamWConfig, CosineDecayWithWarmupSchedulerConfig
from lerobot.configs.types import PolicyFeature
from lerobot.utils.constants import OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import ConfigError

logger = logging.getLogger(__name__)

EMPTY_CAMERA_PREFIX = f"{OBS_IMAGES}.empty_camera_"
"""The features `empty_cameras` declares: blank, masked images, never in a batch."""


class VLAConfigMixin:
    """Methods for a config with `image_features`, `input_features`, `empty_cameras`, the
    chunk's fields (`chunk_size`, `n_action_steps`, `n_obs_steps`) and LeRobot's
    `optimizer_lr` / `scheduler_*` fields; the policies differ only in what happens to a
    camera the env lacks (`dropped_cameras_message`)."""

    @property
    def camera_features(self) -> dict[str, PolicyFeature]:
        """The real cameras: image features other than the declared blank ones."""
        return {k: ft for k, ft in self.image_features.items() if not k.startswith(EMPTY_CAMERA_PREFIX)}

    def check_env_inputs(
        self, env_features: Mapping[str, PolicyFeature], rename_map: Mapping[str, str]
    ) -> None:
        """The state must reach the policy, and at least one camera; cameras the env lacks
        are logged with what the policy does instead."""
        provided = {rename_map.get(key, key): ft for key, ft in env_features.items()}
        if OBS_STATE in self.input_features and OBS_STATE not in provided:
            raise ConfigError(
                f"--policy.path: the checkpoint reads {OBS_STATE}, which the env does not provide "
                f"(it provides {', '.join(provided)}); choose --env.obs_type with the agent state"
            )
        cameras = self.camera_features
        if cameras and not any(key in provided for key in cameras):
            example = next((k for k in provided if k.startswith("observation.image")), "observation.image")
            raise ConfigError(
                f"--rename_map: the checkpoint reads cameras {', '.join(cameras)}, the env provides "
                f'{", ".join(provided)}; map at least one, e.g. --rename_map=\'{{"{example}": "{next(iter(cameras))}"}}\''
            )
        dropped = [key for key in cameras if key not in provided]
        if dropped:
            logger.warning(self.dropped_cameras_message(dropped))

    def dropped_cameras_message(self, dropped: Sequence[str]) -> str:
        """What the policy does without the cameras `dropped`, for the warning."""
        raise NotImplementedError

    def check_chunk_ranges(self, positive_flags: Sequence[str], policy_name: str) -> None:
        """n_action_steps within the chunk, each of `positive_flags` at least 1, and one
        observation step (these policies read the latest only)."""
        if not 1 <= self.n_action_steps <= self.chunk_size:
            raise ConfigError(
                f"--policy.n_action_steps={self.n_action_steps}: must be between 1 and "
                f"--policy.chunk_size={self.chunk_size}"
            )
        for flag in positive_flags:
            if getattr(self, flag) < 1:
                raise ConfigError(f"--policy.{flag}={getattr(self, flag)}: must be a positive integer")
        if self.n_obs_steps != 1:
            raise ConfigError(
                f"--policy.n_obs_steps={self.n_obs_steps}: {policy_name} reads one observation step; use 1"
            )

    def get_optimizer_preset(self) -> AdamWConfig:
        """LeRobot's preset: AdamW at `optimizer_lr`, its betas, eps and weight decay, the
        gradient clipped to `optimizer_grad_clip_norm`."""
        return AdamWConfig(
            lr=self.optimizer_lr,
            betas=tuple(self.optimizer_betas),
            eps=self.optimizer_eps,
            weight_decay=self.optimizer_weight_decay,
            grad_clip_norm=self.optimizer_grad_clip_norm,
        )

    def get_scheduler_preset(self) -> CosineDecayWithWarmupSchedulerConfig:
        """LeRobot's preset: warm-up, then cosine decay to `scheduler_decay_lr`."""
        return CosineDecayWithWarmupSchedulerConfig(
            num_warmup_steps=self.scheduler_warmup_steps,
            num_decay_steps=self.scheduler_decay_steps,
            peak_lr=self.optimizer_lr,
            decay_lr=self.scheduler_decay_lr,
        )
