"""Batch processing between env and policy, as LeRobot's `lerobot.processor`: transitions and
their converters, processor steps and their registry, pipelines saved in LeRobot's layout, the
standard steps LeRobot's saved files name, and the LIBERO env step.

Names load on first use (`from lerobot.processor import DataProcessorPipeline` imports the
pipeline module then), so importing the package costs nothing; LeRobot's names this build
leaves out are refused in one line on use.
"""

from typing import Any

from lerobot.utils.not_in_this_build import refused_attribute

_MODULE_OF_NAMES = {
    "lerobot.processor.core": (
        "EnvAction", "EnvTransition", "PolicyAction", "RobotAction", "RobotObservation", "TransitionKey",
    ),
    "lerobot.processor.converters": (
        "batch_to_transition", "create_transition", "from_tensor_to_numpy", "identity_transition",
        "observation_to_transition", "policy_action_to_transition", "transition_to_batch",
        "transition_to_observation", "transition_to_policy_action",
    ),
    "lerobot.processor.pipeline": (
        "ActionProcessorStep", "ComplementaryDataProcessorStep", "DataProcessorPipeline", "DoneProcessorStep",
        "IdentityProcessorStep", "InfoProcessorStep", "ObservationProcessorStep", "PolicyActionProcessorStep",
        "PolicyProcessorPipeline", "ProcessorKwargs", "ProcessorStep", "ProcessorStepRegistry",
        "RewardProcessorStep", "RobotActionProcessorStep", "RobotProcessorPipeline", "TruncatedProcessorStep",
    ),
    "lerobot.processor.batch_processor": ("AddBatchDimensionProcessorStep",),
    "lerobot.processor.device_processor": ("DeviceProcessorStep",),
    "lerobot.processor.env_processor": ("LiberoProcessorStep",),
    "lerobot.processor.newline_task_processor": ("NewLineTaskProcessorStep",),
    "lerobot.processor.normalize_processor": ("NormalizerProcessorStep", "UnnormalizerProcessorStep", "hotswap_stats"),
    "lerobot.processor.relative_action_processor": ("AbsoluteActionsProcessorStep", "RelativeActionsProcessorStep"),
    "lerobot.processor.rename_processor": ("RenameObservationsProcessorStep", "rename_stats"),
    "lerobot.processor.tokenizer_processor": ("TokenizerProcessorStep",),
}  # fmt: skip
_LAZY = {name: module for module, names in _MODULE_OF_NAMES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    return refused_attribute(__name__, name)


def __dir__() -> list[str]:
    return sorted(_LAZY)
