"""Simulation benchmarks. Each benchmark module registers its config with `EnvConfig`;
simulator packages (and gymnasium) are imported lazily, so `import lerobot.envs` is light and
works without any of them.

LeRobot's names (`from lerobot.envs import make_env`, ...) are loaded on first use.
"""

from typing import Any

from lerobot.envs import (
    aloha,  # noqa: F401,E402  (registers --env.type=aloha)
    libero,  # noqa: F401,E402  (registers --env.type=libero)
    libero_pro,  # noqa: F401,E402  (registers --env.type=libero_pro)
    maniskill,  # noqa: F401,E402  (registers --env.type=maniskill)
    metaworld,  # noqa: F401,E402  (registers --env.type=metaworld)
    pusht,  # noqa: F401,E402  (registers --env.type=pusht)
    robomimic,  # noqa: F401,E402  (registers --env.type=robomimic)
)
from lerobot.envs.configs import EnvConfig  # noqa: F401
from lerobot.utils.not_in_this_build import refused_attribute

# LeRobot's exports -> the module that defines them (importing it loads gymnasium and torch).
_LAZY = {
    "make_env": "lerobot.envs.factory",
    "make_env_config": "lerobot.envs.factory",
    "make_env_pre_post_processors": "lerobot.envs.factory",
    "close_envs": "lerobot.envs.utils",
    "preprocess_observation": "lerobot.envs.utils",
    "check_env_attributes_and_types": "lerobot.envs.utils",
    "env_to_policy_features": "lerobot.envs.utils",
    "AlohaEnv": "lerobot.envs.configs",
    "PushtEnv": "lerobot.envs.configs",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    return refused_attribute(__name__, name)
