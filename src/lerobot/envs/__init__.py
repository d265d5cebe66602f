"""Simulation benchmarks. Each benchmark module registers its config with `EnvConfig`;
simulator packages are imported lazily, so `import lerobot.envs` works without any of them."""

from lerobot.envs import (
    aloha,  # noqa: F401,E402  (registers --env.type=aloha)
    libero,  # noqa: F401,E402  (registers --env.type=libero)
    metaworld,  # noqa: F401,E402  (registers --env.type=metaworld)
    pusht,  # noqa: F401,E402  (registers --env.type=pusht)
)
from lerobot.envs.configs import EnvConfig  # noqa: F401
