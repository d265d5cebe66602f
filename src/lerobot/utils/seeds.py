"""The one seed rule: episode e of a task starts from seed `start_seed + e`.

Every result's reproducibility rests on it: the rollout seeds each episode's env and policy
row with it, the Ray backend names the seeds of episodes its dead workers lost with it, and
the eval config bounds `--seed` so that every seed it gives lies where simulators take them.
"""

from __future__ import annotations

SEED_LIMIT = 2**32
"""Simulators seed NumPy generators, which take seeds in [0, 2**32)."""


def episode_seed(start_seed: int, episode: int) -> int:
    """The seed episode `episode` starts from (its env and its policy row)."""
    return start_seed + episode


def last_episode_seed(start_seed: int, n_episodes: int) -> int:
    """The largest seed a run of `n_episodes` per task gives."""
    return episode_seed(start_seed, n_episodes - 1)
