"""PushT: push a T-shaped block onto a T-shaped target with a round pusher (2-D, pymunk).

Tasks: one, `PushT-v0` (LeRobot's name; `gym_pusht/PushT-v0` works too), gym-pusht 0.1.8's
`PushTEnv`. The instruction is the one LeRobot's `lerobot/pusht` datasets store.
Randomisation: at every reset the pusher's position (x, y in [50, 450)) and the block's
position (x, y in [100, 400)) and angle (uniform in [-pi, pi)) are drawn from the env's
generator; the target pose is fixed (256, 256, pi/4).
Seeding: `reset(seed=s)` re-seeds that generator, so an episode's initial state depends on its
seed alone, whatever ran before in the same env. LeRobot seeds its batch of envs the same way
(episode e of a run gets seed + e), so both start episode e from the same state.
Success: the block covers more than 95% of the target's area (gym-pusht's threshold); the
reward is gym-pusht's, the coverage divided by 0.95 and capped at 1, so a success scores 1.0.
Like gym-pusht and LeRobot, the episode ends at its first success.
Horizon: 300 steps at 10 Hz (LeRobot's setting; each step runs 10 physics steps of 10 ms).
Observations (LeRobot's PushT format, as in its `lerobot/pusht` data): `pixels_agent_pos` gives
`pixels`, a 96x96 drawing of the scene (`observation.image`), and `agent_pos`, the pusher's x, y
(`observation.state`); `environment_state_agent_pos` gives the 16 coordinates of the block's 8
keypoints instead of the image (`observation.environment_state`); `state` gives gym-pusht's 5-d
state vector (pusher x, y, block x, y, angle) as `observation.state`.
Actions: 2-d, the pusher's target position in pixels of the 512x512 workspace ([0, 512]).
Protocol (Diffusion Policy, Chi et al. 2023): 50 episodes from fixed seeds, reporting success rate
and the mean of the episodes' maximum coverage reward.

The package: this module holds the config, `tasks` the task and constants (neither imports
gymnasium nor NumPy, so a command line is checked before either loads), `env` the gymnasium env,
which the config names by its entry point.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

from lerobot.configs.env import EnvConfig, env_class_getter
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.pusht.tasks import (
    ACTION_DIM,
    AGENT_POS_DIM,
    DESCRIPTION,
    EPISODE_LENGTH,
    FPS,
    KEYPOINTS_DIM,
    MIN_VISUALIZATION_SIZE,
    OBS_TYPES,
    STATE_DIM,
    TASK,
    resolve_task,
)
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGE, OBS_STATE
from lerobot.utils.errors import require_at_least, require_choice

# pygame (gym-pusht draws with it) prints a banner on import unless told not to.
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


@EnvConfig.register_subclass("pusht")
@dataclass
class PushtEnvConfig(EnvConfig):
    worker_preload: ClassVar[tuple[str, ...]] = ("gym_pusht.envs.pusht",)
    simulator_distributions: ClassVar[tuple[str, ...]] = ("gym-pusht",)
    env_entry_point: ClassVar[str] = "lerobot.envs.pusht.env:PushtEnv"
    extra: ClassVar[str] = "pusht"
    extra_modules: ClassVar[tuple[str, ...]] = ("gym_pusht",)

    task: str = TASK
    """The one PushT task, `PushT-v0`."""
    fps: int = FPS
    """Control and video frame rate (gym-pusht's 10 Hz)."""
    obs_type: str = "pixels_agent_pos"
    """`pixels_agent_pos` (96x96 image + pusher x, y), `environment_state_agent_pos` (16 block
    keypoint coordinates + pusher x, y) or `state` (pusher x, y, block x, y, angle)."""
    observation_height: int = 96
    """Height of the `pixels` image the policy sees (LeRobot's PushT data: 96)."""
    observation_width: int = 96
    """Width of the `pixels` image the policy sees."""
    visualization_height: int = 384
    """Height of the video frames (LeRobot's setting; at least 96)."""
    visualization_width: int = 384
    """Width of the video frames (LeRobot's setting; at least 96)."""
    episode_length: int = EPISODE_LENGTH
    """Step limit per episode."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require_choice("--env.obs_type", self.obs_type, OBS_TYPES)
        for flag, low in (
            ("observation_height", 1),
            ("observation_width", 1),
            ("visualization_height", MIN_VISUALIZATION_SIZE),
            ("visualization_width", MIN_VISUALIZATION_SIZE),
            ("episode_length", 1),
        ):
            require_at_least(f"--env.{flag}", getattr(self, flag), low)
        self.task = resolve_task(self.task)

    @classmethod
    def tiny_config(cls) -> PushtEnvConfig:
        return cls(
            observation_height=32,
            observation_width=32,
            visualization_height=MIN_VISUALIZATION_SIZE,
            visualization_width=MIN_VISUALIZATION_SIZE,
            episode_length=3,
        )

    def task_groups(self) -> dict[str, list[str]]:
        """One group named after the benchmark, as LeRobot's eval names it (`pusht`, task 0), so
        eval_info.json and the video folder (`videos/pusht_0/`) are laid out as LeRobot's."""
        return {"pusht": [TASK]}

    def task_description(self, task_name: str) -> str:
        return DESCRIPTION

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        return {
            "obs_type": self.obs_type,
            "observation_height": self.observation_height,
            "observation_width": self.observation_width,
            "visualization_height": self.visualization_height,
            "visualization_width": self.visualization_width,
            "episode_length": self.episode_length,
        }

    def policy_features(self) -> dict[str, PolicyFeature]:
        features = {ACTION: PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
        if self.obs_type == "state":
            features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
            return features
        features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (AGENT_POS_DIM,))
        if self.obs_type == "environment_state_agent_pos":
            features[OBS_ENV_STATE] = PolicyFeature(FeatureType.ENV, (KEYPOINTS_DIM,))
        else:
            features[OBS_IMAGE] = PolicyFeature(
                FeatureType.VISUAL, (3, self.observation_height, self.observation_width)
            )
        return features


__getattr__ = env_class_getter(__name__, "PushtEnv", PushtEnvConfig)  # LeRobot's import path of the env class
