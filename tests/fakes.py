"""A tiny, instant env for testing loop logic (never the only test of a feature).

Its episodes are a pure function of the seed, so tests can predict every result: episode
length 2 + seed % 5, success on the last step when the seed is even, reward 1 per step.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class FakeEnv(gym.Env):
    metadata = {"render_fps": 10}

    def __init__(
        self,
        task: str = "fake-task",
        crash_seeds: tuple[int, ...] = (),
        die_seeds: tuple[int, ...] = (),
        fail_once: tuple[str, int, str] | None = None,
        start_s: float = 0.0,
    ):
        """`fail_once=(mode, seed, marker_path)`: on the first step of episode `seed`, "die"
        (exit the worker) or "hang" (sleep far past any timeout), only while the marker file
        does not exist yet; it is created just before, so the re-run goes through."""
        self.task = task
        self.fail_once = fail_once
        self.start_s = start_s
        self.task_description = f"do the {task}"
        self.crash_seeds, self.die_seeds = crash_seeds, die_seeds
        self.observation_space = spaces.Dict({"agent_pos": spaces.Box(-np.inf, np.inf, (2,), np.float32)})
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.seed_, self.t = 0, 0
        self.episode_index = None
        self.pid = os.getpid()

    def reset(self, *, seed=None, options=None):
        if self.start_s:  # a simulator that takes this long to build, on the first reset only
            time.sleep(self.start_s)
            self.start_s = 0.0
        if seed in self.crash_seeds:
            raise RuntimeError(f"fake crash at seed {seed}")
        if seed in self.die_seeds:
            os._exit(3)
        self.seed_, self.t = seed or 0, 0
        self.episode_index = (options or {}).get("episode_index")
        # Like LIBERO: a fixed initial state picked by episode index.
        return self._obs(), {
            "init_state_index": None if self.episode_index is None else self.episode_index % 3
        }

    def step(self, action):
        self._maybe_fail_once()
        self.t += 1
        done = self.t >= self.length
        success = done and self.seed_ % 2 == 0
        return self._obs(), 1.0, done, False, {"is_success": success}

    @property
    def length(self) -> int:
        return 2 + self.seed_ % 5

    def _maybe_fail_once(self) -> None:
        if self.fail_once is None:
            return
        mode, seed, marker = self.fail_once
        if self.seed_ != seed or self.t != 0 or os.path.exists(marker):
            return
        open(marker, "w").close()
        if mode == "die":
            os._exit(9)
        time.sleep(600)

    def render(self):
        return np.full((8, 8, 3), self.t * 10, dtype=np.uint8)

    def _obs(self):
        return {"agent_pos": np.array([self.seed_, self.t], dtype=np.float32)}


def fake_spaces():
    env = FakeEnv()
    return env.observation_space, env.action_space
