"""What SmolVLA, π0 and π0.5 do between the rollout and their sampler, written once.

Each batch row keeps its own queue of actions and its own seeded noise; rows whose queue ran
out sample a chunk together, and while every row is inside a chunk the rollout need not build
a batch at all. Subclasses create `_queue` and `_noise` and say where noise lives
(`_draw_noise`); `predict_action_chunk` is theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from lerobot.policies.action_queue import RowActionQueue, batch_size, select_rows
from lerobot.policies.flow.matching import RowNoise
from lerobot.policies.pretrained import PreTrainedPolicy


class FlowSamplingPolicy(PreTrainedPolicy):
    _queue: RowActionQueue
    _noise: RowNoise

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the queued actions of `env_ids` (all rows when None); reseed their noise."""
        self._queue.reset(env_ids)
        self._noise.reset(env_ids, seeds)

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        """Each row's queued chunk and noise generator."""
        return list(zip(self._queue.save(rows), self._noise.save(rows), strict=True))

    def restore_rows(self, states: Sequence[Any]) -> None:
        states = [state if state is not None else (None, None) for state in states]
        self._queue.restore([queued for queued, _ in states])
        self._noise.restore([generator for _, generator in states])

    def actions_without_observation(self, n_rows: int) -> Tensor | None:
        """The queued actions while every row is inside its chunk (the rollout then builds no
        batch: images and a prompt per row that select_action would not read)."""
        if self._queue.empty_rows(n_rows):
            return None
        return self._queue.pop()

    def take_queued_actions(self, n_rows: int) -> list[Tensor] | None:
        """Each row's rest of chunk."""
        return self._queue.take_rest(n_rows)

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """Rows at the end of their chunk: the others take queued actions."""
        return self._queue.empty_rows(n_rows)

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor], noise: Tensor | None = None) -> Tensor:
        """The next action of every row; rows whose queue ran out sample a chunk together.

        `noise` (B, chunk_size, max_action_dim) fixes the sampling noise of those rows.
        """
        n_rows = batch_size(batch)
        rows = self._queue.empty_rows(n_rows)
        if rows:
            rows_noise = noise[rows] if noise is not None else self._draw_noise(rows, batch)
            chunk = self.predict_action_chunk(select_rows(batch, rows, n_rows), noise=rows_noise)
            self._queue.fill(rows, chunk[:, : self.config.n_action_steps], n_rows)
        return self._queue.pop()

    def _draw_noise(self, rows: Sequence[int], batch: dict[str, Tensor]) -> Tensor | None:
        raise NotImplementedError
