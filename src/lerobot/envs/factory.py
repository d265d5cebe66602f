"""Dispatch from configs to envs; each benchmark's module does the real work."""

from __future__ import annotations

from lerobot.envs.configs import EnvConfig, EnvsByGroup
from lerobot.utils.errors import ConfigError


def make_env_config(env_type: str, **kwargs) -> EnvConfig:
    """The config registered under `env_type` (e.g. "metaworld"), built with `kwargs`."""
    try:
        cls = EnvConfig.get_choice_class(env_type)
    except (KeyError, ValueError) as exc:
        known = ", ".join(EnvConfig.get_known_choices())
        raise ConfigError(f"--env.type={env_type!r}: unknown env type; choose one of {known}") from exc
    return cls(**kwargs)


def make_env(cfg: EnvConfig, n_envs: int = 1, use_async_envs: bool = True) -> EnvsByGroup:
    """{suite: {task_id: VectorEnv}} for `cfg`.

    Nothing is started here: each VectorEnv starts its workers (and, inside them, its
    simulators) on first use, and `eval_policy_all` closes it when its task is done, so only
    one task's workers are ever alive.
    """
    if n_envs < 1:
        raise ConfigError(f"--eval.batch_size={n_envs}: need at least one env")
    return cfg.create_envs(n_envs=n_envs, use_async_envs=use_async_envs)
