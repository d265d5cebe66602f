"""robomimic's scripted experts behind the batched policy interface (`RowScriptsPolicy`: one
script per row, its own episode state)."""

from __future__ import annotations

import numpy as np

from lerobot.configs.env import EnvConfig
from lerobot.policies.robomimic_expert.configuration_robomimic_expert import RobomimicExpertConfig
from lerobot.policies.robomimic_expert.control import GRIPPER_CLOSED, GRIPPER_OPEN, osc_action, pointing_down
from lerobot.policies.robomimic_expert.scripts import Command, Pick, Scene
from lerobot.policies.robomimic_expert.tasks import parse_scene, task_for
from lerobot.policies.row_scripts import RowScriptsPolicy


class RobomimicExpertPolicy(RowScriptsPolicy):
    """Row i acts with the state machine of row i's task."""

    config_class = RobomimicExpertConfig
    name = "robomimic_expert"
    scripts_generation = 1
    usage = "use it with --env.type=robomimic"

    @classmethod
    def for_env(cls, config: RobomimicExpertConfig, env_cfg: EnvConfig | None) -> RobomimicExpertPolicy:
        """Checks, before anything starts, that the run is robomimic's and every task of it has a
        script (as `lerobot-eval` does while it parses the command line)."""
        if env_cfg is not None:
            config.check_env(env_cfg)
        return cls(config)

    def new_script(self, task_name: str) -> Pick:
        return task_for(task_name).new_script()

    def script_action(self, script: Pick, task_name: str, state: np.ndarray, extra: np.ndarray) -> np.ndarray:
        scene = parse_scene(task_for(task_name), state, extra)
        return command_action(scene, script.act(scene))


def command_action(scene: Scene, command: Command) -> np.ndarray:
    """(7,) the OSC_POSE action that carries out `command` from `scene`."""
    fingers = GRIPPER_CLOSED if command.fingers == "close" else GRIPPER_OPEN
    return osc_action(
        scene.eef_position, scene.eef_rotation, command.position, pointing_down(command.yaw), fingers
    )
