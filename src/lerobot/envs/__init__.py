"""Simulation benchmarks. Each benchmark module registers its config with `EnvConfig`;
simulator packages are imported lazily, so `import lerobot.envs` works without any of them."""

from lerobot.envs import (
    libero,  # noqa: F401,E402  (registers --env.type=libero)
    metaworld,  # noqa: F401,E402  (registers --env.type=metaworld)
)
from lerobot.envs.configs import EnvConfig  # noqa: F401
