from dataclasses import dataclass

from lerobot.configs.policies import PreTrainedConfig


@PreTrainedConfig.register_subclass("random")
@dataclass
class RandomConfig(PreTrainedConfig):
    """Uniform random actions in the env's action space: the floor every policy must beat."""
