"""The interface every policy offers to the rollout loop: `RowPolicy`, and its implementation
for the policies of this package, `PreTrainedPolicy`."""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import torch
from torch import nn

from lerobot.configs.checkpoint import CheckpointError
from lerobot.configs.env import EnvConfig
from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.checkpoint import load_weights, save_weights
from lerobot.utils.device_utils import resolve_device
from lerobot.utils.errors import ConfigError

P = TypeVar("P", bound="PreTrainedPolicy")

MAX_QUEUED_STEPS = 1000
"""A bound on the actions `take_queued_actions` gathers one by one: no real queue is longer."""


def pop_queued_actions(policy: RowPolicy, n_rows: int, limit: int = MAX_QUEUED_STEPS) -> list[torch.Tensor]:
    """Up to `limit` steps of (n_rows, action_dim) actions that depend on no coming
    observation, taken out of the policy's queues one `actions_without_observation` at a time
    (the generic way; a policy with per-row queues can give each row's rest at once)."""
    steps = []
    while len(steps) < limit:
        actions = policy.actions_without_observation(n_rows)
        if actions is None:
            break
        steps.append(actions)
    return steps


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

    def take_queued_actions(self, n_rows: int) -> list[torch.Tensor] | None:
        """Every row's actions that depend on no coming observation, (steps, action_dim) per
        row, as the next `select_action` calls would take them; None while some row reads its
        next observation."""

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

    # -- LeRobot's loading and saving ------------------------------------------------------

    @classmethod
    def from_pretrained(
        cls: type[P],
        pretrained_name_or_path: str | Path,
        *,
        config: PreTrainedConfig | None = None,
        force_download: bool = False,
        resume_download: bool | None = None,
        proxies: dict | None = None,
        token: str | bool | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        revision: str | None = None,
        strict: bool = False,
        **kwargs: Any,
    ) -> P:
        """LeRobot's way to load a policy: a directory or hub repo id holding config.json and
        model.safetensors, built on `config.device` (or `device=...`, else this machine's best)
        and in eval mode.

        Hub downloads follow `--policy.path`'s rules: configs and safetensors only, the local
        cache alone with HF_HUB_OFFLINE=1 or `local_files_only`, a miss in one line. A tensor
        the policy has and the file lacks is always an error; with `strict=False` (LeRobot's
        default) tensors the file has and the policy lacks are logged and left out. Without
        `config`, the other keyword arguments override saved settings (`n_action_steps=10`);
        `dataset_stats` and `dataset_meta`, which LeRobot's factory passes, are ignored: the
        statistics live in the processors.
        """
        from lerobot.configs.checkpoint import resolve_checkpoint
        from lerobot.configs.hub import HubOptions
        from lerobot.configs.policies import read_policy_config

        flag = str(pretrained_name_or_path)
        directory = resolve_checkpoint(
            flag, revision, HubOptions(cache_dir, force_download, token, local_files_only)
        )
        device = kwargs.pop("device", None)
        for ignored in ("dataset_stats", "dataset_meta"):
            kwargs.pop(ignored, None)
        if config is None:
            config = read_policy_config(directory, flag, revision, kwargs)
        elif kwargs:
            raise TypeError(f"{cls.__name__}.from_pretrained() got unexpected arguments: {', '.join(kwargs)}")
        if not isinstance(config, cls.config_class):
            raise CheckpointError(f"--policy.path={flag}: a {config.type} checkpoint, not a {cls.name} one")
        policy = cls.load_checkpoint(directory, config, resolve_device(device or config.device), strict)
        policy.eval()
        return policy

    @classmethod
    def load_checkpoint(
        cls: type[P], directory: Path, config: PreTrainedConfig, device: torch.device, strict: bool
    ) -> P:
        """The policy for `config` with the weights of `directory`'s model.safetensors, on
        `device`. Policies whose weights are gigabytes build on the device and stream them
        there instead (SmolVLA, π)."""
        policy = cls(config)
        load_weights(policy, directory, strict)
        return policy.to(device)

    def save_pretrained(
        self,
        save_directory: str | Path,
        *,
        state_dict: dict[str, torch.Tensor] | None = None,
        repo_id: str | None = None,
        push_to_hub: bool = False,
        card_kwargs: dict | None = None,
        **push_to_hub_kwargs: Any,
    ) -> None:
        """Write LeRobot's files, config.json and model.safetensors (`state_dict`, default the
        policy's own), so that `from_pretrained` here and in LeRobot loads them back. The
        statistics live in the processors' files, which `lerobot-train` writes beside them.
        Nothing is uploaded: `push_to_hub` is refused (upload the folder with `hf upload`)."""
        if push_to_hub or repo_id is not None:
            raise ConfigError(
                "save_pretrained(push_to_hub=True): this build never uploads; save, then upload the "
                f"folder yourself (hf upload <repo_id> {save_directory})"
            )
        directory = Path(save_directory)
        self.config.save_pretrained(directory)
        save_weights(self, directory, state_dict)

    def get_optim_params(self) -> Any:
        """What an optimizer trains: the parameters, or LeRobot's parameter groups for a policy
        whose parts learn at their own rates (ACT's backbone)."""
        return self.parameters()

    # -- what the rollout loop calls ---------------------------------------------------------

    @abc.abstractmethod
    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the state of rows `env_ids` (all rows when None) before new episodes."""

    @abc.abstractmethod
    def select_action(self, batch: dict[str, torch.Tensor | list[str]]) -> torch.Tensor:
        """One action per row, shape (batch, action_dim)."""

    def predict_action_chunk(self, batch: dict[str, torch.Tensor | list[str]], **kwargs: Any) -> torch.Tensor:
        """The actions each row would take from this observation on, shape (batch, steps,
        action_dim); a policy that plans no chunk gives its next action as a chunk of one."""
        return self.select_action(batch)[:, None]

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

    def take_queued_actions(self, n_rows: int) -> list[torch.Tensor] | None:
        """Each row's remaining queued actions, (steps_i, action_dim), taken out of the queue as
        that many `select_action` calls would take them; None, with nothing changed, when some
        row reads its next observation.

        The rollout sends a row's whole rest of chunk to its env worker in one message and gets
        one answer back, instead of one round trip per step (with 32 envs, the round trips, not
        the simulation, bound a step). Rows may hold different numbers of actions: each row
        then reads its next observation after its own chunk, as it would step by step. The
        default takes actions through `actions_without_observation` while every row has one
        (the same number for every row); a policy with per-row queues gives each row's rest.
        """
        steps = pop_queued_actions(self, n_rows)
        return list(torch.stack(steps, dim=1)) if steps else None

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
