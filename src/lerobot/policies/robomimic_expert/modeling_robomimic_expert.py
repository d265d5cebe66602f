"""robomimic's scripted experts behind the batched policy interface.

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
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.robomimic_expert.configuration_robomimic_expert import RobomimicExpertConfig
from lerobot.policies.robomimic_expert.control import GRIPPER_CLOSED, GRIPPER_OPEN, osc_action, pointing_down
from lerobot.policies.robomimic_expert.scripts import Command, Pick, Scene
from lerobot.policies.robomimic_expert.tasks import parse_scene, task_for
from lerobot.utils.constants import ENV_TASK, OBS_ENV_STATE, OBS_STATE

SCRIPT_VERSION = 1
"""Saved with the policy, its one weight: which generation of scripts acted."""


@dataclass
class Episode:
    """One row's state within its episode."""

    task: str
    script: Pick


class RobomimicExpertPolicy(PreTrainedPolicy):
    """Row i acts with the state machine of row i's task."""

    config_class = RobomimicExpertConfig
    name = "robomimic_expert"

    def __init__(self, config: RobomimicExpertConfig):
        super().__init__(config)
        self.register_buffer("script_version", torch.tensor(SCRIPT_VERSION, dtype=torch.int64))
        self._episodes: dict[int, Episode] = {}

    @classmethod
    def for_env(cls, config: RobomimicExpertConfig, env_cfg: EnvConfig | None) -> RobomimicExpertPolicy:
        """Checks, before anything starts, that the run is robomimic's and every task of it has a
        script (as `lerobot-eval` does while it parses the command line)."""
        if env_cfg is not None:
            config.check_env(env_cfg)
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
                f"robomimic_expert needs {', '.join(map(repr, missing))} in the batch; "
                "use it with --env.type=robomimic"
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
        return command_action(scene, episode.script.act(scene))


def command_action(scene: Scene, command: Command) -> np.ndarray:
    """(7,) the OSC_POSE action that carries out `command` from `scene`."""
    fingers = GRIPPER_CLOSED if command.fingers == "close" else GRIPPER_OPEN
    return osc_action(
        scene.eef_position, scene.eef_rotation, command.position, pointing_down(command.yaw), fingers
    )
