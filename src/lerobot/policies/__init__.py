"""Policies. Each folder registers its config with `PreTrainedConfig`."""

from lerobot.policies import (  # noqa: F401  (register --policy.type values)
    act,
    aloha_scripted,
    diffusion,
    metaworld_expert,
    random,
)
from lerobot.policies.random.configuration_random import RandomConfig  # noqa: F401
