"""LeRobot's relative/absolute action steps. LeRobot 0.6.1 saves them, disabled, in π0's and
π0.5's pipelines; disabled they change nothing. Enabled (actions relative to the state) is
refused in one line: this build does not convert actions that way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lerobot.processor.core import EnvTransition
from lerobot.processor.steps import Features, ProcessorStep, ProcessorStepRegistry
from lerobot.utils.not_in_this_build import refused_names


@dataclass
class _DisabledActionsStep(ProcessorStep):
    enabled: bool = False

    def __post_init__(self) -> None:
        if self.enabled:
            raise ValueError(
                f"{type(self)._registry_name} is enabled (actions relative to the state), which this build "
                "does not support"
            )

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        return transition

    def transform_features(self, features: Features) -> Features:
        return features


@ProcessorStepRegistry.register("relative_actions_processor")
@dataclass
class RelativeActionsProcessorStep(_DisabledActionsStep):
    exclude_joints: list[str] = field(default_factory=list)
    action_names: list[str] | None = None

    def get_config(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "exclude_joints": self.exclude_joints,
            "action_names": self.action_names,
        }


@ProcessorStepRegistry.register("absolute_actions_processor")
@dataclass
class AbsoluteActionsProcessorStep(_DisabledActionsStep):
    relative_step: RelativeActionsProcessorStep | None = field(default=None, repr=False)

    def get_config(self) -> dict[str, Any]:
        return {"enabled": self.enabled}


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
