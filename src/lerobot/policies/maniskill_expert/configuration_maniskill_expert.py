from dataclasses import dataclass
from typing import ClassVar

from lerobot.configs.policies import PreTrainedConfig


@PreTrainedConfig.register_subclass("maniskill_expert")
@dataclass
class ManiskillExpertConfig(PreTrainedConfig):
    """Scripted experts for ManiSkill3's cube tasks (PickCube, PushCube, StackCube with the
    Panda; PickCubeSO100 with LeRobot's SO-100): the embedded default that needs no download.

    Closed-loop state machines read each row's proprioception (`observation.state`), the
    task's extra state (`observation.environment_state`, obs_mode state_dict) and its task
    name (`env_task`), and move the gripper with inverse kinematics from the robot's URDF.
    Each task's actions are for the control mode in
    `lerobot.policies.maniskill_expert.tasks.EXPERT_CONTROL_MODES`.
    """

    extra: ClassVar[str] = "maniskill"
    extra_modules: ClassVar[tuple[str, ...]] = ("mani_skill",)  # its robots' URDFs

    device: str | None = "cpu"
