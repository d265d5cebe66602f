"""Policies. Each folder registers its config with `PreTrainedConfig`.

LeRobot's names (`from lerobot.policies import make_policy, PreTrainedPolicy`, ...) are loaded
on first use, so registering the policy types does not import torch.
"""

from typing import Any

from lerobot.policies import (  # noqa: F401  (register --policy.type values)
    act,
    aloha_scripted,
    diffusion,
    lerobot_bridge,
    maniskill_expert,
    metaworld_expert,
    pi0,
    pi05,
    random,
    robomimic_expert,
    smolvla,
    websocket,
)
from lerobot.policies.act.configuration_act import ACTConfig  # noqa: F401
from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig  # noqa: F401
from lerobot.policies.pi0.configuration_pi0 import PI0Config  # noqa: F401
from lerobot.policies.pi05.configuration_pi05 import PI05Config  # noqa: F401
from lerobot.policies.random.configuration_random import RandomConfig  # noqa: F401
from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig  # noqa: F401
from lerobot.utils.not_in_this_build import refused_attribute

# LeRobot's exports -> the module that defines them (importing it loads torch).
_LAZY = {
    "PreTrainedPolicy": "lerobot.policies.pretrained",
    "get_policy_class": "lerobot.policies.factory",
    "make_policy": "lerobot.policies.factory",
    "make_policy_config": "lerobot.policies.factory",
    "make_pre_post_processors": "lerobot.policies.factory",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    return refused_attribute(__name__, name)
