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
