"""The interface every policy offers to the rollout loop."""

from __future__ import annotations

import abc
from collections.abc import Sequence

import torch
from torch import nn

from lerobot.configs.policies import PreTrainedConfig


class PreTrainedPolicy(nn.Module, abc.ABC):
    """A batched policy whose per-row state can be reset one row at a time.

    Row `i` of every batch is the env slot `i` of the vector env. When a slot starts a new
    episode the loop calls `reset(env_ids=[i], seeds=[episode_seed])`, so action queues,
    temporal ensembles or random generators restart for that row only and an episode's
    actions never depend on which slot or batch it ran in.
    """

    config_class: type[PreTrainedConfig]
    name: str

    def __init__(self, config: PreTrainedConfig):
        super().__init__()
        self.config = config

    @abc.abstractmethod
    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the state of rows `env_ids` (all rows when None) before new episodes."""

    @abc.abstractmethod
    def select_action(self, batch: dict[str, torch.Tensor | list[str]]) -> torch.Tensor:
        """One action per row, shape (batch, action_dim)."""
