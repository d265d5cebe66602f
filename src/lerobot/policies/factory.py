"""Build a policy from its config (and, for built-ins that need it, the env config)."""

from __future__ import annotations

from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.configs import EnvConfig
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.device import resolve_device


def make_policy(cfg: PreTrainedConfig, env_cfg: EnvConfig | None = None) -> PreTrainedPolicy:
    """The policy for `--policy.type`, on its device and in eval mode.

    Checkpoint loading (`--policy.path`) plugs in here: it reads the checkpoint's config to
    pick the class, then loads the weights.
    """
    policy = _build(cfg, env_cfg)
    policy.to(resolve_device(cfg.device))
    policy.eval()
    return policy


def _build(cfg: PreTrainedConfig, env_cfg: EnvConfig | None) -> PreTrainedPolicy:
    if cfg.type == "random":
        from lerobot.policies.random.modeling_random import RandomPolicy

        if env_cfg is None:
            raise ValueError("the random policy needs the env config to know the action space")
        space = env_cfg.action_space()
        return RandomPolicy(cfg, space.low, space.high)
    if cfg.type == "metaworld_expert":
        from lerobot.policies.metaworld_expert.modeling_metaworld_expert import MetaworldExpertPolicy

        return MetaworldExpertPolicy(cfg)
    raise ValueError(f"--policy.type={cfg.type!r}: no model is registered for this type")
