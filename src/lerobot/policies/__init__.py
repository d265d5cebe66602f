"""Policies. Each folder registers its config with `PreTrainedConfig`."""

from lerobot.policies import act, diffusion, metaworld_expert, random, websocket  # noqa: F401  (register --policy.type values)
from lerobot.policies.random.configuration_random import RandomConfig  # noqa: F401
