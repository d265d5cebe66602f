"""Batch processing between env and policy: observations to batches, normalisation, language
steps, LeRobot's saved pipelines, and LeRobot's env-side steps (`env_processor`).

LeRobot's names (`from lerobot.processor import LiberoProcessorStep`) are loaded on first use.
"""

from typing import Any

from lerobot.utils.not_in_this_build import refused_attribute

_LAZY = {"LiberoProcessorStep": "lerobot.processor.env_processor"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    return refused_attribute(__name__, name)
