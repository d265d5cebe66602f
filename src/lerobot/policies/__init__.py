"""Policies. Each folder registers its config with `PreTrainedConfig`."""

from lerobot.policies import metaworld_expert, random  # noqa: F401  (register --policy.type values)
