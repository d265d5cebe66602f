"""Typed descriptions of what flows between envs and policies."""

from dataclasses import dataclass
from enum import StrEnum


class FeatureType(StrEnum):
    STATE = "STATE"
    VISUAL = "VISUAL"
    ENV = "ENV"
    ACTION = "ACTION"


@dataclass(frozen=True)
class PolicyFeature:
    """One input or output of a policy: its kind and its shape (images are channel-first)."""

    type: FeatureType
    shape: tuple[int, ...]


class NormalizationMode(StrEnum):
    """How a feature is scaled before the policy sees it (and actions after it returns them)."""

    MIN_MAX = "MIN_MAX"
    """Map [min, max] to [-1, 1]."""
    MEAN_STD = "MEAN_STD"
    """Subtract the mean, divide by the standard deviation."""
    QUANTILES = "QUANTILES"
    """Map [q01, q99] to [-1, 1]."""
    QUANTILE10 = "QUANTILE10"
    """Map [q10, q90] to [-1, 1]."""
    IDENTITY = "IDENTITY"
    """Leave the feature as it is."""


class PipelineFeatureType(StrEnum):
    """Which side of a processor pipeline a feature is on (LeRobot's name and values)."""

    ACTION = "ACTION"
    OBSERVATION = "OBSERVATION"


class RTCAttentionSchedule(StrEnum):
    """How LeRobot's real-time chunking weighs the previous chunk (its names and values; this
    build runs no real-time chunking)."""

    ZEROS = "ZEROS"
    ONES = "ONES"
    LINEAR = "LINEAR"
    EXP = "EXP"
