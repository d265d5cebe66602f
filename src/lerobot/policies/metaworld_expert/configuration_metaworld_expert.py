from dataclasses import dataclass
from typing import ClassVar

from lerobot.configs.policies import PreTrainedConfig


@PreTrainedConfig.register_subclass("metaworld_expert")
@dataclass
class MetaworldExpertConfig(PreTrainedConfig):
    """Meta-World's own scripted policies: the embedded default that needs no download.

    They read the full 39-d state (`observation.environment_state`), which the Meta-World env
    provides with every observation type, and the task name of each row (`env_task`).
    """

    extra: ClassVar[str] = "metaworld"
    extra_modules: ClassVar[tuple[str, ...]] = ("metaworld",)

    device: str | None = "cpu"
