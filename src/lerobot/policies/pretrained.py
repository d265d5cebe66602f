"""The interface every policy offers to the rollout loop."""

from __future__ import annotations

import abc
import copy
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

    def init_rollout_state(self) -> None:
        """Create the per-row rollout state (action queues, histories, generators).

        Policies with such state create it here, from `__init__` too, so that `rollout_twin`
        can give a twin its own.
        """

    def rollout_twin(self) -> PreTrainedPolicy:
        """A policy sharing this one's weights and settings, with its own per-row state.

        The rollout loop gives each group of env slots a twin when it steps one group while
        computing another's actions: row i of a twin is row i of that group only.
        """
        twin = copy.copy(self)  # a new attribute dict; modules and parameters are shared
        twin.init_rollout_state()
        return twin

    @abc.abstractmethod
    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the state of rows `env_ids` (all rows when None) before new episodes."""

    @abc.abstractmethod
    def select_action(self, batch: dict[str, torch.Tensor | list[str]]) -> torch.Tensor:
        """One action per row, shape (batch, action_dim)."""
