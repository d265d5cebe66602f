"""Scripted experts whose every batch row runs its own state machine, for its own task.

Row i keeps its own episode state (its script's phase), created at its first step and dropped
by `reset`; its actions depend on its own observations only (`observation.state`,
`observation.environment_state` and the task name), so an episode acts the same in any batch
and any slot. ManiSkill's and robomimic's experts differ only in their scripts and in how a
script's command becomes an action.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import ENV_TASK, OBS_ENV_STATE, OBS_STATE


@dataclass
class Episode:
    """One row's state within its episode."""

    task: str
    script: Any


class RowScriptsPolicy(PreTrainedPolicy):
    """Row i acts with a script of row i's task; subclasses say which script and how it acts."""

    scripts_generation: ClassVar[int]
    """Saved with the policy as its one weight (`script_version`): which generation of scripts acted."""
    usage: ClassVar[str]
    """How to run the policy, for the error of a batch without its inputs."""

    def __init__(self, config):
        super().__init__(config)
        self.register_buffer("script_version", torch.tensor(self.scripts_generation, dtype=torch.int64))
        self._episodes: dict[int, Episode] = {}

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the episodes of `env_ids` (all rows when None); their next step starts afresh."""
        rows = list(self._episodes) if env_ids is None else list(env_ids)
        for row in rows:
            self._episodes.pop(row, None)

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        return [copy.deepcopy(self._episodes.get(row)) for row in rows]

    def restore_rows(self, states: Sequence[Any]) -> None:
        self._episodes = {row: copy.deepcopy(state) for row, state in enumerate(states) if state is not None}

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """None: the scripts read state vectors, never a camera."""
        return []

    def select_action(self, batch) -> torch.Tensor:
        missing = [key for key in (OBS_STATE, OBS_ENV_STATE, ENV_TASK) if key not in batch]
        if missing:
            raise ValueError(f"{self.name} needs {', '.join(map(repr, missing))} in the batch; {self.usage}")
        states = batch[OBS_STATE].detach().cpu().numpy().astype(np.float64)
        extras = batch[OBS_ENV_STATE].detach().cpu().numpy().astype(np.float64)
        actions = [
            self.script_action(self._script(row, task), task, states[row], extras[row])
            for row, task in enumerate(batch[ENV_TASK])
        ]
        return torch.from_numpy(np.stack(actions).astype(np.float32))

    def _script(self, row: int, task_name: str) -> Any:
        """Row `row`'s script: its episode's, or a new one at the episode's first step (or when
        the row moved to another task)."""
        episode = self._episodes.get(row)
        if episode is None or episode.task != task_name:
            episode = Episode(task_name, self.new_script(task_name))
            self._episodes[row] = episode
        return episode.script

    def new_script(self, task_name: str) -> Any:
        """A fresh state machine for one episode of `task_name`."""
        raise NotImplementedError

    def script_action(self, script: Any, task_name: str, state: np.ndarray, extra: np.ndarray) -> np.ndarray:
        """The action `script` takes in the scene that `state` and `extra` describe."""
        raise NotImplementedError
