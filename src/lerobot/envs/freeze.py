"""LeRobot's wrapper for a finished sub-env (`lerobot.envs.utils.FreezeAfterEpisodeEnd`).

LeRobot's rollout steps the whole batch until every sub-env is done, so a sub-env that ended
must not simulate on. Our rollout never steps a finished slot; the wrapper is here for code
written against LeRobot. It lives apart from `lerobot.envs.utils`, which forwards the names,
because it needs gymnasium and `utils` must not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import gymnasium as gym

NEW_ROLLOUT_OPTION = "lerobot_new_rollout"
"""The `reset(options=...)` key that thaws a `FreezeAfterEpisodeEnd` env (LeRobot's name)."""


class FreezeAfterEpisodeEnd(gym.Wrapper):
    """LeRobot's wrapper for its whole-batch rollout: once an episode ends, further steps and
    gymnasium's autoreset replay the terminal transition (reward 0) instead of simulating, until
    a reset whose options carry NEW_ROLLOUT_OPTION. Our rollout never steps a finished slot."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._terminal: tuple | None = None

    @property
    def is_frozen(self) -> bool:
        return self._terminal is not None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if self._terminal is not None and not (options or {}).get(NEW_ROLLOUT_OPTION):
            observation, _, _, _, info = self._terminal
            return observation, info
        self._terminal = None
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self._terminal is not None:
            return self._terminal
        observation, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            self._terminal = (observation, 0.0, terminated, truncated, info)
        return observation, reward, terminated, truncated, info


def freeze_after_episode_end(env_fn: Callable[[], gym.Env]) -> Callable[[], gym.Env]:
    """`env_fn`, its env wrapped in FreezeAfterEpisodeEnd (picklable for worker processes)."""
    return functools.partial(_frozen_env, env_fn)


def _frozen_env(env_fn: Callable[[], gym.Env]) -> gym.Env:
    return FreezeAfterEpisodeEnd(env_fn())
