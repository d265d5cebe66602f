"""Uniform random actions, seeded per episode."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.utils.constants import OBS_PREFIX


class RandomPolicy(PreTrainedPolicy):
    """Each row draws from its own generator, seeded with the row's episode seed.

    Seeding per row (not per batch) is what makes a random baseline reproducible whatever the
    batch size: episode 7 sees the same actions alone or beside six others.
    """

    config_class = RandomConfig
    name = "random"

    def __init__(self, config: RandomConfig, action_low: np.ndarray, action_high: np.ndarray):
        super().__init__(config)
        self.action_low = np.asarray(action_low, dtype=np.float32)
        self.action_high = np.asarray(action_high, dtype=np.float32)
        self._rngs: dict[int, np.random.Generator] = {}

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        if env_ids is None:
            self._rngs.clear()
            return
        seeds = seeds if seeds is not None else [None] * len(env_ids)
        for env_id, seed in zip(env_ids, seeds, strict=True):
            self._rngs[env_id] = np.random.default_rng(seed)

    def select_action(self, batch) -> torch.Tensor:
        n_rows = _batch_size(batch)
        actions = np.stack(
            [self._row_rng(row).uniform(self.action_low, self.action_high) for row in range(n_rows)]
        )
        return torch.from_numpy(actions.astype(np.float32))

    def _row_rng(self, row: int) -> np.random.Generator:
        if row not in self._rngs:
            self._rngs[row] = np.random.default_rng()
        return self._rngs[row]


def _batch_size(batch) -> int:
    for key, value in batch.items():
        if key.startswith(OBS_PREFIX) and isinstance(value, torch.Tensor):
            return value.shape[0]
    raise ValueError("the batch holds no observation tensor to take the batch size from")
