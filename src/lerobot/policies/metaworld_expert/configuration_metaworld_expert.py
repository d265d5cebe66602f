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
    action_noise: float = 0.0
    """Standard deviation of Gaussian noise added to every action before clipping (0: the plain
    expert). Each episode draws it from a generator seeded with the episode's seed, so a noisy
    expert is a reproducible second checkpoint to compare the expert with."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.action_noise >= 0:
            raise ValueError(f"--policy.action_noise={self.action_noise}: must be a standard deviation >= 0")
