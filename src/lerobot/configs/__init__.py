"""Config dataclasses and the types they use; LeRobot's exports of `lerobot.configs`.

The pipeline configs (`lerobot.configs.eval.EvalPipelineConfig`, ...) are imported from their
modules, as in LeRobot.
"""

from typing import Any

from lerobot.configs.types import (
    FeatureType,
    NormalizationMode,
    PipelineFeatureType,
    PolicyFeature,
    RTCAttentionSchedule,
)
from lerobot.utils.not_in_this_build import refused_attribute

__all__ = [
    "EvalConfig",
    "FeatureType",
    "NormalizationMode",
    "PipelineFeatureType",
    "PolicyFeature",
    "PreTrainedConfig",
    "RTCAttentionSchedule",
]

_LAZY = {"EvalConfig": "lerobot.configs.eval", "PreTrainedConfig": "lerobot.configs.policies"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    return refused_attribute(__name__, name)
