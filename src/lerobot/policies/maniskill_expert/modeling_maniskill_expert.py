"""ManiSkill's scripted experts behind the batched policy interface.

Row i keeps its own episode state (its script's phase), created at its first step and dropped
by `reset`; its actions depend on its own observations only, so an episode acts the same in any
batch and any slot.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lerobot.configs.env import EnvConfig
from lerobot.policies.maniskill_expert.configuration_maniskill_expert import ManiskillExpertConfig
from lerobot.policies.maniskill_expert.tasks import arm_controller, parse_scene, task_for
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import ENV_TASK, OBS_ENV_STATE, OBS_STATE
from lerobot.utils.errors import ConfigError

SCRIPT_VERSION = 2
"""Saved with the policy, its one weight: which generation of scripts acted."""


@dataclass
class Episode:
    """One row's state within its episode."""

    task: str
    script: Any


class ManiskillExpertPolicy(PreTrainedPolicy):
    """Row i acts with the state machine of row i's task."""

    config_class = ManiskillExpertConfig
    name = "maniskill_expert"

    def __init__(self, config: ManiskillExpertConfig):
        super().__init__(config)
        self.register_buffer("script_version", torch.tensor(SCRIPT_VERSION, dtype=torch.int64))
        self._episodes: dict[int, Episode] = {}

    @classmethod
    def for_env(cls, config: ManiskillExpertConfig, env_cfg: EnvConfig | None) -> ManiskillExpertPolicy:
        """Checks, before anything starts, that every task of the run has a script and runs in
        the control mode its script acts in."""
        if env_cfg is not None and env_cfg.type == "maniskill":
            check_run(env_cfg)
        return cls(config)

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
            raise ValueError(
                f"maniskill_expert needs {', '.join(map(repr, missing))} in the batch; "
                "use it with --env.type=maniskill and a state_dict observation"
            )
        states = batch[OBS_STATE].detach().cpu().numpy().astype(np.float64)
        extras = batch[OBS_ENV_STATE].detach().cpu().numpy().astype(np.float64)
        actions = [self._act(row, task, states[row], extras[row]) for row, task in enumerate(batch[ENV_TASK])]
        return torch.from_numpy(np.stack(actions).astype(np.float32))

    def _act(self, row: int, task_name: str, state: np.ndarray, extra: np.ndarray) -> np.ndarray:
        task = task_for(task_name)
        episode = self._episodes.get(row)
        if episode is None or episode.task != task_name:
            episode = Episode(task_name, task.new_script())
            self._episodes[row] = episode
        scene = parse_scene(task, state, extra)
        command = episode.script.act(scene)
        return arm_controller(task).action(
            scene.qpos, command.position, command.rotation, command.gripper, command.keep_rotation
        )


def check_run(env_cfg: EnvConfig) -> None:
    """A one-line error for a task without a script, or run in another control mode than its
    script's (the flag that fixes it named)."""
    for task in env_cfg.tasks():
        try:
            scripted = task_for(task.name)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        mode = env_cfg.control_mode_of(task.name)
        if mode != scripted.control_mode:
            raise ConfigError(
                f"--policy.type=maniskill_expert: its {task.name} script acts in {scripted.control_mode}, "
                f"the run in {mode}; add --env.control_mode={scripted.control_mode}"
            )
