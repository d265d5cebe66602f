"""PushT's gym env in LeRobot's observation format, and its spaces (the benchmark's config is
`lerobot.envs.pusht`, its task and constants `lerobot.envs.pusht.tasks`; neither imports
gymnasium nor NumPy)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.envs.pusht.tasks import (
    ACTION_DIM,
    AGENT_POS_DIM,
    DESCRIPTION,
    EPISODE_LENGTH,
    FPS,
    KEYPOINTS_DIM,
    STATE_DIM,
    TASK,
    WORKSPACE_SIZE,
)


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
        self._max_episode_steps = episode_length  # where LeRobot's rollout reads the limit
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
