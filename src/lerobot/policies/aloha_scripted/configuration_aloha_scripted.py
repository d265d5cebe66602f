from dataclasses import dataclass
from typing import ClassVar

from lerobot.configs.policies import PreTrainedConfig


@PreTrainedConfig.register_subclass("aloha_scripted")
@dataclass
class AlohaScriptedConfig(PreTrainedConfig):
    """Scripted bimanual demonstrations in the manner of ACT's: the embedded ALOHA default that
    needs no download.

    It reads the objects' poses (`observation.environment_state`) at the first step of each
    episode and the task name of each row (`env_task`); use it with `--env.type=aloha`.
    """

    extra: ClassVar[str] = "aloha"
    extra_modules: ClassVar[tuple[str, ...]] = ("gym_aloha", "mujoco")  # its end-effector scenes

    device: str | None = "cpu"
