"""The interface every policy offers to the rollout loop: `RowPolicy`, and its implementation
for the policies of this package, `PreTrainedPolicy`."""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import torch
from torch import nn

from lerobot.configs.env import EnvConfig
from lerobot.configs.policies import PreTrainedConfig


class RowPolicy(Protocol):
    """What the rollout loop calls on a policy: batch row i is env slot i.

    `PreTrainedPolicy` implements it for every policy here; a policy written elsewhere
    (LeRobot's, a user's) is adapted to it (`lerobot.evaluation.adapters.lerobot_compat`).
    """

    name: str

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget rows `env_ids` (all when None); row i's new episode starts from `seeds[i]`."""

    def select_action(self, batch: dict[str, Any]) -> torch.Tensor:
        """One action per row, shape (rows, action_dim)."""

    def actions_without_observation(self, n_rows: int) -> torch.Tensor | None:
        """The next actions when none depends on this step's observation, else None."""

    def rows_reading_images(self, n_rows: int) -> Sequence[int]:
        """The rows whose next `select_action` reads the camera images."""

    def parameters(self) -> Iterator[torch.Tensor]:
        """Where the policy computes is where its tensors live (no tensors: its config's device)."""

    def buffers(self) -> Iterator[torch.Tensor]: ...

    def close(self) -> None:
        """Release what the policy holds outside this process."""


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

    @classmethod
    def for_env(cls, config: PreTrainedConfig, env_cfg: EnvConfig | None) -> PreTrainedPolicy:
        """A fresh policy of this class for `config`, to act in `env_cfg`'s envs.

        The default ignores the env; a policy whose shape depends on it says how here (the
        random policy samples the env's action space, a scripted one plans over its episode
        length), so the factory builds every type the same way.
        """
        return cls(config)

    @abc.abstractmethod
    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the state of rows `env_ids` (all rows when None) before new episodes."""

    @abc.abstractmethod
    def select_action(self, batch: dict[str, torch.Tensor | list[str]]) -> torch.Tensor:
        """One action per row, shape (batch, action_dim)."""

    def actions_without_observation(self, n_rows: int) -> torch.Tensor | None:
        """The next action of each of `n_rows` rows when no row's action depends on this step's
        observation (every row is inside an action chunk), taken exactly as `select_action`
        would take it; None, with nothing changed, when some row reads its observation.

        The rollout asks this first and builds the batch only on None: converting and
        normalising a 480x480 frame costs milliseconds per step, for a batch that ACT with
        `n_action_steps=10` ignores nine steps in ten. The default, None, is right for every
        policy that reads each observation: an observation history (Diffusion's `n_obs_steps`),
        temporal ensembling, recurrent state, or a policy that reacts at every step.
        """
        return None

    def rows_reading_images(self, n_rows: int) -> Sequence[int]:
        """The rows whose next `select_action` call will read the camera images of its
        observation; the others act without looking (queued actions, state-only scripts).

        Asked after a step's actions were taken, it tells the rollout which of the coming
        observations need their images rendered: at 480x480 in software, rendering is most of
        a step's cost, and ACT with `n_action_steps=10` looks at one frame in ten. The
        default, every row, is right for any policy that may look at every frame; a policy
        that answers fewer rows must never read images of the others (the rollout checks).
        """
        return range(n_rows)

    def close(self) -> None:
        """Release what the policy holds outside this process (a policy server's connection),
        so the other end sees a clean goodbye rather than a dropped socket. A closed policy
        opens again on its next call; nothing to do for a policy that holds nothing."""

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        """The state of each of `rows` (queued actions, observation history, generator), to be
        continued later with `restore_rows`, in any batch at any position.

        A policy server runs the rows of many clients through one policy: between calls it
        keeps each client row's state aside, so one client's episodes never see another's.
        A policy that cannot move its rows cannot be served.
        """
        raise NotImplementedError(f"policy {self.name!r} cannot move its per-row state between batches")

    def restore_rows(self, states: Sequence[Any]) -> None:
        """Make the next batch exactly `len(states)` rows, row i continuing from `states[i]`
        (as `save_rows` gave it; None: a fresh row, as after `reset` without a seed)."""
        raise NotImplementedError(f"policy {self.name!r} cannot move its per-row state between batches")
