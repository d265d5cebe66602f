"""Build a policy from its config: a built-in, or a LeRobot checkpoint (`--policy.path`)."""

from __future__ import annotations

import logging
from pathlib import Path

from lerobot.configs.env import EnvConfig
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.processor.policy_processors import make_pre_post_processors
from lerobot.utils.device import resolve_device

__all__ = ["make_policy", "make_pre_post_processors", "policy_class"]

logger = logging.getLogger(__name__)


def make_policy(cfg: PreTrainedConfig, env_cfg: EnvConfig | None = None) -> PreTrainedPolicy:
    """The policy for `--policy.type` or `--policy.path`, on its device and in eval mode.

    Checkpoint policies get their weights from the checkpoint's model.safetensors, loaded
    with strict key matching; their statistics live in the processors
    (`make_pre_post_processors`), not in the policy.
    """
    device = resolve_device(cfg.device)
    if cfg.use_amp and device.type == "mps":
        logger.warning("--policy.use_amp: mixed precision is not available on mps; running in float32")
        cfg.use_amp = False
    policy = _build(cfg, env_cfg)
    policy.to(device)
    policy.eval()
    return policy


def policy_class(policy_type: str) -> type[PreTrainedPolicy]:
    """The module of a checkpoint policy type; imported only when needed."""
    if policy_type == "act":
        from lerobot.policies.act.modeling_act import ACTPolicy

        return ACTPolicy
    if policy_type == "diffusion":
        from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

        return DiffusionPolicy
    raise ValueError(f"--policy.type={policy_type!r}: no model is registered for this type")


def _build(cfg: PreTrainedConfig, env_cfg: EnvConfig | None) -> PreTrainedPolicy:
    if isinstance(cfg, CheckpointPolicyConfig):
        return _load_checkpoint(cfg)
    if cfg.type == "random":
        from lerobot.policies.random.modeling_random import RandomPolicy

        if env_cfg is None:
            raise ValueError("the random policy needs the env config to know the action space")
        space = env_cfg.action_space()
        return RandomPolicy(cfg, space.low, space.high)
    if cfg.type == "metaworld_expert":
        from lerobot.policies.metaworld_expert.modeling_metaworld_expert import MetaworldExpertPolicy

        return MetaworldExpertPolicy(cfg)
    if cfg.type == "aloha_scripted":
        from lerobot.policies.aloha_scripted.modeling_aloha_scripted import AlohaScriptedPolicy

        return AlohaScriptedPolicy(cfg, n_steps=_episode_length(env_cfg))
    raise ValueError(f"--policy.type={cfg.type!r}: no model is registered for this type")


def _episode_length(env_cfg: EnvConfig | None) -> int:
    """How many steps a scripted policy plans: the env's step limit, else ALOHA's 400."""
    from lerobot.envs.aloha import EPISODE_LENGTH

    return getattr(env_cfg, "episode_length", None) or EPISODE_LENGTH


def _load_checkpoint(cfg: CheckpointPolicyConfig) -> PreTrainedPolicy:
    from lerobot.configs.checkpoint import CheckpointError
    from lerobot.policies.checkpoint import load_weights

    if cfg.pretrained_path is None:
        raise CheckpointError(
            f"--policy.type={cfg.type}: needs weights; pass --policy.path=<checkpoint dir or repo id>"
        )
    policy = policy_class(cfg.type)(cfg)
    load_weights(policy, Path(cfg.pretrained_path))
    return policy
