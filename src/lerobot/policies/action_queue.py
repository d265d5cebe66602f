"""Per-row action queues for chunking policies, so one env slot can restart alone.

LeRobot's ACT and Diffusion Policy keep one queue for the whole batch: every row refills at
the same step. In a batch where slots start new episodes at different steps, each row needs
its own position in its own chunk; this module keeps that, and lets the policy predict new
chunks for the empty rows only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch


class RowActionQueue:
    """Row i holds the not-yet-executed actions of the chunk last predicted for row i."""

    def __init__(self) -> None:
        self.actions: torch.Tensor | None = None  # (rows, n_action_steps, action_dim)
        self.position: list[int] = []
        self.length: list[int] = []

    def reset(self, rows: Sequence[int] | None = None) -> None:
        """Empty `rows` (all rows when None) so that their next call predicts a new chunk."""
        if rows is None or self.actions is None:
            self.actions, self.position, self.length = None, [], []
            return
        for row in rows:
            if row < len(self.length):
                self.length[row] = 0

    def empty_rows(self, n_rows: int) -> list[int]:
        """Rows that need a new chunk before `pop`; all of them when the batch size changed."""
        if self.actions is None or self.actions.shape[0] != n_rows:
            return list(range(n_rows))
        return [row for row in range(n_rows) if self.position[row] >= self.length[row]]

    def fill(self, rows: Sequence[int], chunk: torch.Tensor, n_rows: int) -> None:
        """Queue `chunk[j]` (n_action_steps, action_dim) for row `rows[j]`."""
        if self.actions is None or self.actions.shape[0] != n_rows:
            self.actions = chunk.new_zeros((n_rows, *chunk.shape[1:]))
            self.position, self.length = [0] * n_rows, [0] * n_rows
        index = torch.as_tensor(list(rows), device=chunk.device)
        self.actions[index] = chunk.to(self.actions.dtype)
        for row in rows:
            self.position[row], self.length[row] = 0, chunk.shape[1]

    def save(self, rows: Sequence[int]) -> list[tuple[torch.Tensor, int, int] | None]:
        """Each row's chunk and position in it (None: nothing left to execute)."""
        return [
            (self.actions[row].clone(), self.position[row], self.length[row])
            if self.actions is not None and row < len(self.length) and self.position[row] < self.length[row]
            else None
            for row in rows
        ]

    def restore(self, states: Sequence[tuple[torch.Tensor, int, int] | None]) -> None:
        """Rows in the order of `states`, as `save` gave them; None rows are empty."""
        kept = [state for state in states if state is not None]
        if not kept:
            self.actions, self.position, self.length = None, [], []
            return
        blank = torch.zeros_like(kept[0][0])
        self.actions = torch.stack([state[0] if state is not None else blank for state in states])
        self.position = [state[1] if state is not None else 0 for state in states]
        self.length = [state[2] if state is not None else 0 for state in states]

    def take_rest(self, n_rows: int) -> list[torch.Tensor] | None:
        """Every row's not-yet-executed actions, (steps_i, action_dim) each, now counted as
        executed; None, with nothing changed, while some row needs a new chunk."""
        if self.empty_rows(n_rows):
            return None
        rest = [self.actions[row, self.position[row] : self.length[row]] for row in range(n_rows)]
        self.position = list(self.length)
        return rest

    def pop(self) -> torch.Tensor:
        """The next action of every row, (rows, action_dim)."""
        if any(p >= n for p, n in zip(self.position, self.length, strict=True)):
            raise RuntimeError("pop() on an empty row; call fill() for empty_rows() first")
        rows = torch.arange(len(self.position), device=self.actions.device)
        step = torch.as_tensor(self.position, device=self.actions.device)
        self.position = [p + 1 for p in self.position]
        return self.actions[rows, step]


def batch_size(batch: Mapping[str, Any]) -> int:
    """Rows in a policy batch, read from its first tensor."""
    for value in batch.values():
        if isinstance(value, torch.Tensor) and value.ndim > 0:
            return value.shape[0]
    raise ValueError("the batch holds no tensor to take the batch size from")


def select_rows(batch: Mapping[str, Any], rows: Sequence[int], n_rows: int) -> dict[str, Any]:
    """The sub-batch of `rows`; the batch itself when that is every row, in order."""
    if list(rows) == list(range(n_rows)):
        return dict(batch)
    picked: dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.ndim > 0 and value.shape[0] == n_rows:
            picked[key] = value[torch.as_tensor(list(rows), device=value.device)]
        elif isinstance(value, list) and len(value) == n_rows:
            picked[key] = [value[row] for row in rows]
        else:
            picked[key] = value
    return picked
