"""Dispatch from configs to envs: the one place that turns a task into a vector env."""

from __future__ import annotations

from collections.abc import Mapping

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.envs.vector import LazyVectorEnv
from lerobot.utils.errors import ConfigError

EnvsByGroup = dict[str, dict[int, LazyVectorEnv]]


def make_env_config(env_type: str, **kwargs) -> EnvConfig:
    """The config registered under `env_type` (e.g. "metaworld"), built with `kwargs`."""
    try:
        cls = EnvConfig.get_choice_class(env_type)
    except (KeyError, ValueError) as exc:
        known = ", ".join(EnvConfig.get_known_choices())
        raise ConfigError(f"--env.type={env_type!r}: unknown env type; choose one of {known}") from exc
    return cls(**kwargs)


def make_env(
    cfg: EnvConfig, n_envs: int = 1, use_async_envs: bool = True, step_timeout_s: float | None = None
) -> EnvsByGroup:
    """{suite: {task_id: VectorEnv}} for `cfg`.

    Nothing is started here: each VectorEnv starts its workers (and, inside them, its
    simulators) on first use, and the evaluation closes it when its task is done, so only
    one task's workers are ever alive.
    """
    envs: EnvsByGroup = {}
    for task in cfg.tasks():
        env = make_task_env(cfg, task, n_envs, use_async_envs, step_timeout_s)
        envs.setdefault(task.group, {})[task.task_id] = env
    return envs


def make_task_env(
    cfg: EnvConfig,
    task: TaskSpec,
    n_envs: int,
    use_async_envs: bool,
    step_timeout_s: float | None = None,
) -> LazyVectorEnv:
    """`n_envs` lazy copies of one task; a worker silent for `step_timeout_s` is replaced.

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
        preload_modules=cfg.worker_preload,
        step_timeout_s=step_timeout_s,
        metadata={"render_fps": task.fps, "task": task.name, "task_description": task.description},
        task=task,
    )


def close_envs(envs: Mapping[str, Mapping[int, LazyVectorEnv]]) -> None:
    """Close every env of `make_env`'s result (their workers and simulators end)."""
    for by_id in envs.values():
        for env in by_id.values():
            env.close()
