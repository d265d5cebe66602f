"""LeRobot's module for env configs: the base class and the benchmarks' config classes.

The base lives in `lerobot.configs.env` (a config must parse without the env layer); the
benchmark configs live in their own modules (`lerobot.envs.metaworld`, `lerobot.envs.libero`, ...).
This module gives them the names and paths LeRobot code imports.
"""

from __future__ import annotations

import importlib

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.utils.not_in_this_build import refused_attribute

__all__ = ["EnvConfig", "TaskSpec"]

# LeRobot's names for the benchmark config classes -> (module, our class name).
_LEROBOT_CONFIG_NAMES = {
    "MetaworldEnv": ("lerobot.envs.metaworld", "MetaworldEnvConfig"),
    "LiberoEnv": ("lerobot.envs.libero", "LiberoEnvConfig"),
    "AlohaEnv": ("lerobot.envs.aloha", "AlohaEnvConfig"),
    "PushtEnv": ("lerobot.envs.pusht", "PushtEnvConfig"),
}


def __getattr__(name: str):
    """`lerobot.envs.configs.MetaworldEnv`, `.LiberoEnv`, `.AlohaEnv`, `.PushtEnv`: LeRobot's class names."""
    if name in _LEROBOT_CONFIG_NAMES:
        module_name, class_name = _LEROBOT_CONFIG_NAMES[name]
        return getattr(importlib.import_module(module_name), class_name)
    return refused_attribute(__name__, name)
