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
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.configs.env import EnvConfig
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGE, OBS_STATE
from lerobot.utils.errors import ConfigError

logger = logging.getLogger(__name__)

# pygame (gym-pusht draws with it) prints a banner on import unless told not to.
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

TASK = "PushT-v0"
TASK_PREFIX = "gym_pusht/"
DESCRIPTION = "Push the T-shaped block onto the T-shaped target."
FPS = 10
EPISODE_LENGTH = 300
ACTION_DIM = 2
AGENT_POS_DIM = 2
STATE_DIM = 5
KEYPOINTS_DIM = 16
WORKSPACE_SIZE = 512.0
INSTALL_HINT = "install the extra: pip install 'lerobot[pusht]'"
ObsType = Literal["pixels_agent_pos", "environment_state_agent_pos", "state"]
OBS_TYPES: tuple[str, ...] = ("pixels_agent_pos", "environment_state_agent_pos", "state")


def resolve_task(task_arg: str) -> str:
    """`PushT-v0` or `gym_pusht/PushT-v0` -> `PushT-v0`; anything else is a one-line error."""
    if task_arg.strip().removeprefix(TASK_PREFIX) != TASK:
        raise ConfigError(f"--env.task={task_arg!r}: unknown PushT task; the one task is {TASK!r}")
    return TASK


class PushtEnv(gym.Env):
    """gym-pusht's PushT in LeRobot's observation format, built on first reset.

    The simulator is cheap to build, but building it lazily keeps `import lerobot.envs` and
    the parent process of the vector env free of pygame and pymunk.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": FPS}

    def __init__(
        self,
        obs_type: str = "pixels_agent_pos",
        observation_height: int = 96,
        observation_width: int = 96,
        visualization_height: int = 384,
        visualization_width: int = 384,
        episode_length: int = EPISODE_LENGTH,
    ):
        self.task = TASK
        self.task_description = DESCRIPTION
        self.obs_type = obs_type
        self.observation_height, self.observation_width = observation_height, observation_width
        self.visualization_height, self.visualization_width = visualization_height, visualization_width
        self.episode_length = episode_length
        self.render_mode = "rgb_array"
        self.observation_space = build_observation_space(obs_type, observation_height, observation_width)
        self.action_space = build_action_space()
        self._sim = None
        self._steps = 0

    def _ensure_sim(self):
        if self._sim is None:
            from gym_pusht.envs.pusht import PushTEnv

            self._sim = PushTEnv(
                obs_type=self.obs_type,
                render_mode="rgb_array",
                observation_width=self.observation_width,
                observation_height=self.observation_height,
                visualization_width=self.visualization_width,
                visualization_height=self.visualization_height,
            )
        return self._sim

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        raw_obs, _ = self._ensure_sim().reset(seed=seed)
        self._steps = 0
        return self._format(raw_obs), {"is_success": False, "task": self.task}

    def step(self, action: np.ndarray):
        action = np.asarray(action)
        if action.shape != (ACTION_DIM,):
            raise ValueError(f"PushT expects one action of shape ({ACTION_DIM},), got {action.shape}")
        raw_obs, reward, terminated, _, sim_info = self._ensure_sim().step(action)
        self._steps += 1
        info = {"is_success": bool(sim_info["is_success"]), "coverage": float(sim_info["coverage"])}
        info["task"] = self.task
        truncated = self._steps >= self.episode_length
        return self._format(raw_obs), float(reward), bool(terminated), truncated, info

    def render(self) -> np.ndarray:
        """gym-pusht's view for videos: the scene at the visualisation size, the action marked."""
        return self._ensure_sim().render()

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None

    def _format(self, raw_obs: Any) -> dict[str, np.ndarray]:
        if self.obs_type == "state":
            return {"agent_pos": np.asarray(raw_obs, dtype=np.float32)}
        obs = {"agent_pos": np.asarray(raw_obs["agent_pos"], dtype=np.float32)}
        if self.obs_type == "environment_state_agent_pos":
            obs["environment_state"] = np.asarray(raw_obs["environment_state"], dtype=np.float32)
        else:
            obs["pixels"] = raw_obs["pixels"]
        return obs


def build_observation_space(obs_type: str, height: int, width: int) -> spaces.Dict:
    # Unbounded: the pusher is kinematic, so a target outside the walls takes it there.
    def vector(dim: int) -> spaces.Box:
        return spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float32)

    if obs_type == "state":
        return spaces.Dict({"agent_pos": vector(STATE_DIM)})
    entries: dict[str, spaces.Space] = {"agent_pos": vector(AGENT_POS_DIM)}
    if obs_type == "environment_state_agent_pos":
        entries["environment_state"] = vector(KEYPOINTS_DIM)
    else:
        entries["pixels"] = spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)
    return spaces.Dict(entries)


def build_action_space() -> spaces.Box:
    return spaces.Box(0.0, WORKSPACE_SIZE, shape=(ACTION_DIM,), dtype=np.float32)


def check_installed() -> None:
    """Fail in one line, before any worker starts, when the `pusht` extra is missing."""
    if importlib.util.find_spec("gym_pusht") is None:
        raise ConfigError(f"--env.type=pusht: gym-pusht is not installed; {INSTALL_HINT}")


@EnvConfig.register_subclass("pusht")
@dataclass
class PushtEnvConfig(EnvConfig):
    worker_preload: ClassVar[tuple[str, ...]] = ("gym_pusht.envs.pusht",)

    task: str = TASK
    """The one PushT task, `PushT-v0`."""
    fps: int = FPS
    """Control and video frame rate (gym-pusht's 10 Hz)."""
    obs_type: ObsType = "pixels_agent_pos"
    """`pixels_agent_pos` (96x96 image + pusher x, y), `environment_state_agent_pos` (16 block
    keypoint coordinates + pusher x, y) or `state` (pusher x, y, block x, y, angle)."""
    observation_height: int = 96
    observation_width: int = 96
    visualization_height: int = 384
    """Height of the video frames (LeRobot's setting)."""
    visualization_width: int = 384
    episode_length: int = EPISODE_LENGTH
    """Step limit per episode."""

    def __post_init__(self) -> None:
        if self.obs_type not in OBS_TYPES:
            raise ConfigError(f"--env.obs_type={self.obs_type!r}: must be one of {', '.join(OBS_TYPES)}")
        for flag in (
            "observation_height",
            "observation_width",
            "visualization_height",
            "visualization_width",
            "episode_length",
        ):
            if getattr(self, flag) < 1:
                raise ConfigError(f"--env.{flag}={getattr(self, flag)}: must be an integer >= 1")
        self.task = resolve_task(self.task)
        check_installed()

    def task_groups(self) -> dict[str, list[str]]:
        """One group named after the benchmark, as LeRobot's eval names it (`pusht`, task 0), so
        eval_info.json and the video folder (`videos/pusht_0/`) are laid out as LeRobot's."""
        return {"pusht": [TASK]}

    def task_description(self, task_name: str) -> str:
        return DESCRIPTION

    def env_factory(self, task_name: str):
        return functools.partial(
            PushtEnv,
            obs_type=self.obs_type,
            observation_height=self.observation_height,
            observation_width=self.observation_width,
            visualization_height=self.visualization_height,
            visualization_width=self.visualization_width,
            episode_length=self.episode_length,
        )

    def observation_space(self) -> spaces.Dict:
        return build_observation_space(self.obs_type, self.observation_height, self.observation_width)

    def action_space(self) -> spaces.Box:
        return build_action_space()

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
