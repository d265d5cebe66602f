"""Base of every policy config: a draccus choice registry selected with `--policy.type=`."""

import abc
from dataclasses import dataclass

import draccus


@dataclass
class PreTrainedConfig(draccus.ChoiceRegistry, abc.ABC):
    device: str | None = None
    """Torch device; None picks cuda, else mps, else cpu."""
    use_amp: bool = False
    """Run inference under torch autocast (mixed precision) on devices that support it."""

    @property
    def type(self) -> str:
        return self.get_choice_name(self.__class__)
