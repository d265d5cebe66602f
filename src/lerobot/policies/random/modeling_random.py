"""Uniform random actions, seeded per episode."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import EnvConfig
from lerobot.policies.checkpoint import read_weights
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.utils.constants import ENV_TASK, OBS_PREFIX


class RandomPolicy(PreTrainedPolicy):
    """Each row draws from its own generator, seeded with the row's episode seed.

    Seeding per row (not per batch) is what makes a random baseline reproducible whatever the
    batch size: episode 7 sees the same actions alone or beside six others.
    """

    config_class = RandomConfig
    name = "random"

    def __init__(self, config: RandomConfig, action_low: Any, action_high: Any):
        super().__init__(config)
        low = np.asarray(action_low, dtype=np.float32)
        high = np.asarray(action_high, dtype=np.float32)
        # The bounds are the policy's weights: save_pretrained writes them, from_pretrained reads them.
        self.register_buffer("action_low", torch.from_numpy(low.copy()))
        self.register_buffer("action_high", torch.from_numpy(high.copy()))
        # low + (high - low) * U[0, 1) in float64 is exactly what Generator.uniform(low, high)
        # computes, draw for draw, at a sixth of its per-call cost (it dominates a state-only
        # random-policy step otherwise).
        self._offset = low.astype(np.float64)
        self._scale = (high - low).astype(np.float64)
        self._rngs: dict[int, np.random.Generator] = {}
        self._bounds_by_task: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @classmethod
    def for_env(cls, config: RandomConfig, env_cfg: EnvConfig | None) -> RandomPolicy:
        """Samples `env_cfg`'s action space, which it needs to know; in a run whose tasks take
        different actions (ManiSkill's groups: several robots), each task's own."""
        if env_cfg is None:
            raise ValueError("the random policy needs the env config to know the action space")
        space = env_cfg.action_space()
        policy = cls(config, space.low, space.high)
        for task in env_cfg.tasks():
            other = env_cfg.task_action_space(task.name)
            if other.shape != space.shape or not (
                np.array_equal(other.low, space.low) and np.array_equal(other.high, space.high)
            ):
                policy.sample_task_space(task.name, other.low, other.high)
        return policy

    def sample_task_space(self, task_name: str, low: Any, high: Any) -> None:
        """Rows running `task_name` (the batch's `env_task`) draw from these bounds instead."""
        low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
        self._bounds_by_task[task_name] = (low, high - low)

    @classmethod
    def load_checkpoint(
        cls, directory: Path, config: RandomConfig, device: torch.device, strict: bool
    ) -> RandomPolicy:
        """The saved action bounds (its model.safetensors) are what it is built from."""
        state = read_weights(directory)
        policy = cls(config, state["action_low"].numpy(), state["action_high"].numpy())
        return policy.to(device)

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        if env_ids is None:
            self._rngs.clear()
            return
        seeds = seeds if seeds is not None else [None] * len(env_ids)
        for env_id, seed in zip(env_ids, seeds, strict=True):
            self._rngs[env_id] = np.random.default_rng(seed)

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        return [self._rngs.get(row) for row in rows]

    def restore_rows(self, states: Sequence[Any]) -> None:
        self._rngs = {row: rng for row, rng in enumerate(states) if rng is not None}

    def select_action(self, batch) -> torch.Tensor:
        n_rows = _batch_size(batch)
        offset, scale = self._bounds_of(batch)
        actions = np.empty((n_rows, *scale.shape), dtype=np.float32)
        for row in range(n_rows):
            actions[row] = offset + scale * self._row_rng(row).random(scale.shape)
        return torch.from_numpy(actions)

    def _bounds_of(self, batch) -> tuple[np.ndarray, np.ndarray]:
        """The batch's task's bounds (a batch is one task's rows), else the policy's own."""
        tasks = batch.get(ENV_TASK) if self._bounds_by_task else None
        if tasks:
            return self._bounds_by_task.get(tasks[0], (self._offset, self._scale))
        return self._offset, self._scale

    def _row_rng(self, row: int) -> np.random.Generator:
        if row not in self._rngs:
            self._rngs[row] = np.random.default_rng()
        return self._rngs[row]


def _batch_size(batch) -> int:
    for key, value in batch.items():
        if key.startswith(OBS_PREFIX) and isinstance(value, torch.Tensor):
            return value.shape[0]
    raise ValueError("the batch holds no observation tensor to take the batch size from")
