"""ManiSkill's scripted experts behind the batched policy interface (`RowScriptsPolicy`: one
script per row, its own episode state)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lerobot.configs.env import EnvConfig
from lerobot.policies.maniskill_expert.configuration_maniskill_expert import ManiskillExpertConfig
from lerobot.policies.maniskill_expert.tasks import arm_controller, parse_scene, task_for
from lerobot.policies.row_scripts import RowScriptsPolicy
from lerobot.utils.errors import ConfigError


class ManiskillExpertPolicy(RowScriptsPolicy):
    """Row i acts with the state machine of row i's task."""

    config_class = ManiskillExpertConfig
    name = "maniskill_expert"
    scripts_generation = 2
    usage = "use it with --env.type=maniskill and a state_dict observation"

    @classmethod
    def for_env(cls, config: ManiskillExpertConfig, env_cfg: EnvConfig | None) -> ManiskillExpertPolicy:
        """Checks, before anything starts, that every task of the run has a script and runs in
        the control mode its script acts in."""
        if env_cfg is not None and env_cfg.type == "maniskill":
            check_run(env_cfg)
        return cls(config)

    def new_script(self, task_name: str) -> Any:
        return task_for(task_name).new_script()

    def script_action(self, script: Any, task_name: str, state: np.ndarray, extra: np.ndarray) -> np.ndarray:
        task = task_for(task_name)
        scene = parse_scene(task, state, extra)
        command = script.act(scene)
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
