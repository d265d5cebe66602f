"""Dispatch from configs to envs: the one place that turns a task into a vector env.

`make_env`, `make_env_config` and `make_env_pre_post_processors` have LeRobot 0.6.1's
signatures and, as there, ask the config (`EnvConfig.create_envs`, `EnvConfig.get_env_processors`),
so code written against `lerobot.envs.factory` runs unchanged and a benchmark written for LeRobot
that overrides either is used. What `create_envs` does by default is here (`make_lazy_envs`).
"""

from __future__ import annotations

from typing import Any

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.envs.utils import close_envs
from lerobot.envs.vector import LazyVectorEnv
from lerobot.utils.errors import ConfigError

__all__ = ["close_envs", "make_env", "make_env_config", "make_env_pre_post_processors", "make_task_env"]

EnvsByGroup = dict[str, dict[int, Any]]


def make_env_config(env_type: str, **kwargs) -> EnvConfig:
    """The config registered under `env_type` (e.g. "metaworld"), built with `kwargs`."""
    try:
        cls = EnvConfig.get_choice_class(env_type)
    except (KeyError, ValueError) as exc:
        known = ", ".join(EnvConfig.get_known_choices())
        raise ConfigError(f"--env.type={env_type!r}: unknown env type; choose one of {known}") from exc
    return cls(**kwargs)


def make_env(
    cfg: EnvConfig | str,
    n_envs: int = 1,
    use_async_envs: bool = False,
    hub_cache_dir: str | None = None,
    trust_remote_code: bool = False,
) -> EnvsByGroup:
    """{suite: {task_id: VectorEnv}} for `cfg`: what its `create_envs` builds.

    For the built-in benchmarks nothing is started here (`make_lazy_envs`). LeRobot's hub form
    (`cfg` a repo id whose env.py is downloaded and executed) is refused: this build never runs
    code from the hub, whatever `trust_remote_code` says; `hub_cache_dir` is accepted for the
    signature.
    """
    if isinstance(cfg, str):
        raise ConfigError(
            f"make_env({cfg!r}): environments defined by code on the hub are not supported (this build "
            "never runs downloaded code); install the env as a package and pass its EnvConfig"
        )
    if n_envs < 1:
        raise ConfigError(f"n_envs={n_envs}: need at least one env")
    return cfg.create_envs(n_envs=n_envs, use_async_envs=use_async_envs)


def make_lazy_envs(cfg: EnvConfig, n_envs: int, use_async_envs: bool) -> dict[str, dict[int, LazyVectorEnv]]:
    """`EnvConfig.create_envs` by default: a lazy vector env for every task of `cfg`.

    Each one starts its workers (and, inside them, its simulators) on first use, and the
    evaluation closes it when its task is done, so only one task's workers are ever alive.
    """
    envs: dict[str, dict[int, LazyVectorEnv]] = {}
    for task in cfg.tasks():
        envs.setdefault(task.group, {})[task.task_id] = make_task_env(cfg, task, n_envs, use_async_envs)
    return envs


def make_task_env(
    cfg: EnvConfig,
    task: TaskSpec,
    n_envs: int,
    use_async_envs: bool,
    step_timeout_s: float | None = None,
    in_process_slots: int = 0,
    envs_per_worker: int = 1,
) -> LazyVectorEnv:
    """`n_envs` lazy copies of one task; a worker silent for `step_timeout_s` is replaced;
    with workers, the first `in_process_slots` envs still run in this process, and each
    worker steps `envs_per_worker` of the others.

    The env carries its `TaskSpec` (and, for code written against LeRobot, the task name,
    description and fps in `metadata`).
    """
    if n_envs < 1:
        raise ConfigError(f"--eval.batch_size={n_envs}: need at least one env")
    return LazyVectorEnv(
        [cfg.env_factory(task.name)] * n_envs,
        cfg.observation_space(),
        cfg.action_space(),
        use_async=use_async_envs,
        preload_modules=cfg.fork_server_preload,
        step_timeout_s=step_timeout_s,
        metadata={"render_fps": task.fps, "task": task.name, "task_description": task.description},
        task=task,
        in_process_slots=in_process_slots,
        envs_per_worker=envs_per_worker,
    )


def make_env_pre_post_processors(env_cfg: EnvConfig, policy_cfg: Any) -> tuple[Any, Any]:
    """LeRobot's env processors, as `env_cfg.get_env_processors()` gives them: (observation
    batch -> batch, {"action": tensor} -> the same). `policy_cfg` is accepted for the signature
    (LeRobot swaps in X-VLA's own pair; this build has no X-VLA)."""
    return env_cfg.get_env_processors()
