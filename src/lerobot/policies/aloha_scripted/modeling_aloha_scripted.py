"""Scripted ALOHA demonstrations behind the batched policy interface.

At the first step of an episode, a row reads the objects' poses and its task, plans the whole
episode in end-effector space (`waypoints`) and turns the plan into joint commands in a private
end-effector simulation (`end_effector_sim`), as ACT made its scripted demonstrations; then it
replays those commands open-loop, one per step. A row's actions depend on its episode's initial
state only, so they do not depend on the batch it runs in.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from lerobot.configs.env import EnvConfig
from lerobot.envs.aloha.tasks import EPISODE_LENGTH, SIM_TASKS
from lerobot.policies.aloha_scripted.configuration_aloha_scripted import AlohaScriptedConfig
from lerobot.policies.aloha_scripted.end_effector_sim import joint_commands
from lerobot.policies.aloha_scripted.waypoints import Plan, insertion_plan, transfer_cube_plan
from lerobot.policies.checkpoint import read_weights
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import ENV_TASK, OBS_ENV_STATE


def plan_for(sim_task: str, object_poses: np.ndarray) -> Plan:
    """The end-effector plan of `sim_task` for the objects' initial poses (7 numbers each)."""
    if sim_task == "transfer_cube":
        return transfer_cube_plan(object_poses[:3])
    return insertion_plan(object_poses[:3], object_poses[7:10])


class AlohaScriptedPolicy(PreTrainedPolicy):
    """Row i replays the joint commands planned at its episode's first step."""

    config_class = AlohaScriptedConfig
    name = "aloha_scripted"

    def __init__(self, config: AlohaScriptedConfig, n_steps: int = EPISODE_LENGTH):
        super().__init__(config)
        self.n_steps = n_steps
        # The plan's length is the policy's one weight: saved and loaded with it.
        self.register_buffer("plan_steps", torch.tensor(n_steps, dtype=torch.int64))
        self._commands: dict[int, np.ndarray] = {}
        self._steps: dict[int, int] = {}

    @classmethod
    def for_env(cls, config: AlohaScriptedConfig, env_cfg: EnvConfig | None) -> AlohaScriptedPolicy:
        """Plans its waypoints over the env's step limit (ALOHA's 400 when it states none)."""
        limits = [task.max_steps for task in env_cfg.tasks() if task.max_steps] if env_cfg else []
        return cls(config, n_steps=max(limits, default=EPISODE_LENGTH))

    @classmethod
    def load_checkpoint(
        cls, directory: Path, config: AlohaScriptedConfig, device: torch.device, strict: bool
    ) -> AlohaScriptedPolicy:
        return cls(config, n_steps=int(read_weights(directory)["plan_steps"])).to(device)

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the plans of `env_ids` (all rows when None); the next step plans afresh."""
        rows = list(self._commands) if env_ids is None else list(env_ids)
        for row in rows:
            self._commands.pop(row, None)
            self._steps.pop(row, None)

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """None: the script reads the simulator's state, never a camera."""
        return []

    def select_action(self, batch) -> torch.Tensor:
        if OBS_ENV_STATE not in batch or ENV_TASK not in batch:
            raise ValueError(
                f"aloha_scripted needs {OBS_ENV_STATE!r} and {ENV_TASK!r} in the batch; "
                "use it with --env.type=aloha"
            )
        poses = batch[OBS_ENV_STATE].detach().cpu().numpy().astype(np.float64)
        actions = [self._next_command(row, task, poses[row]) for row, task in enumerate(batch[ENV_TASK])]
        return torch.from_numpy(np.stack(actions).astype(np.float32))

    def _next_command(self, row: int, task: str, object_poses: np.ndarray) -> np.ndarray:
        if row not in self._commands:
            if task not in SIM_TASKS:
                raise ValueError(
                    f"aloha_scripted: no script for task {task!r}; tasks: {', '.join(SIM_TASKS)}"
                )
            plan = plan_for(SIM_TASKS[task], object_poses)
            self._commands[row] = joint_commands(SIM_TASKS[task], object_poses, plan, self.n_steps)
            self._steps[row] = 0
        commands = self._commands[row]
        step = min(self._steps[row], len(commands) - 1)  # past the plan's end: hold the last pose
        self._steps[row] += 1
        return commands[step]
