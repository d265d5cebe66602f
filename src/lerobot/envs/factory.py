"""Dispatch from configs to envs: the one place that turns a task into a vector env.

`make_env`, `make_env_config` and `make_env_pre_post_processors` have LeRobot 0.6.1's
signatures and, as there, ask the config (`EnvConfig.create_envs`, `EnvConfig.get_env_processors`),
so code written against `lerobot.envs.factory` runs unchanged and a benchmark written for LeRobot
that overrides either is used. What `create_envs` does by default is here (`make_lazy_envs`), and
how the evaluation runs on the envs of a config that builds its own (`OwnEnvs`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from typing import Any

import gymnasium as gym

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.envs.gym_vector import slot_env
from lerobot.envs.slots import SlotEnv
from lerobot.envs.utils import close_envs
from lerobot.envs.vector import LazyVectorEnv
from lerobot.utils.errors import ConfigError

__all__ = ["close_envs", "make_env", "make_env_config", "make_env_pre_post_processors", "make_task_env"]

logger = logging.getLogger(__name__)

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
    if cfg.builds_own_envs:  # its tasks are read from its create_envs, which came here
        raise TypeError(
            f"{type(cfg).__name__}.create_envs: an override builds every env itself; the default "
            "(super().create_envs) builds ours from the config's task list and cannot be extended"
        )
    envs: dict[str, dict[int, LazyVectorEnv]] = {}
    for task in cfg.tasks():
        envs.setdefault(task.group, {})[task.task_id] = lazy_task_env(cfg, task, n_envs, use_async_envs)
    return envs


def make_task_env(
    cfg: EnvConfig,
    task: TaskSpec,
    n_envs: int,
    use_async_envs: bool,
    step_timeout_s: float | None = None,
    in_process_slots: int = 0,
    envs_per_worker: int = 1,
) -> SlotEnv:
    """`n_envs` lazy copies of one task; a worker silent for `step_timeout_s` is replaced;
    with workers, the first `in_process_slots` envs still run in this process, and each
    worker steps `envs_per_worker` of the others.

    The env carries its `TaskSpec` (and, for code written against LeRobot, the task name,
    description and fps in `metadata`). A benchmark that simulates a batch in one process
    gives its own slot env (`EnvConfig.batched_slot_env`), where the worker settings do not apply. A config that builds its own envs gives the one of
    `task` from its `create_envs` instead (`OwnEnvs`), where the other settings do not apply.
    """
    if n_envs < 1:
        raise ConfigError(f"--eval.batch_size={n_envs}: need at least one env")
    if cfg.builds_own_envs:
        return OwnEnvs(cfg, n_envs, use_async_envs, (task,))(task)
    batched = cfg.batched_slot_env(task, n_envs)
    if batched is not None:
        return batched
    return lazy_task_env(cfg, task, n_envs, use_async_envs, step_timeout_s, in_process_slots, envs_per_worker)


def lazy_task_env(
    cfg: EnvConfig,
    task: TaskSpec,
    n_envs: int,
    use_async_envs: bool,
    step_timeout_s: float | None = None,
    in_process_slots: int = 0,
    envs_per_worker: int = 1,
) -> LazyVectorEnv:
    """Our lazy vector env of `task`, from the config's `env_factory` (`make_task_env`)."""
    return LazyVectorEnv(
        [cfg.env_factory(task.name)] * n_envs,
        cfg.task_observation_space(task.name),
        cfg.task_action_space(task.name),
        use_async=use_async_envs,
        preload_modules=cfg.fork_server_preload,
        step_timeout_s=step_timeout_s,
        metadata={"render_fps": task.fps, "task": task.name, "task_description": task.description},
        task=task,
        in_process_slots=in_process_slots,
        envs_per_worker=envs_per_worker,
    )


class OwnEnvs:
    """The vector envs of a config that builds its own (`EnvConfig.builds_own_envs`), handed
    out task by task as the rollout steps them (`slot_env`).

    `create_envs` builds every task's envs at once, as LeRobot's `lerobot-eval` does, so they
    are built on the first task asked for, once, and those of tasks not in `tasks` (finished
    in an earlier run, in another shard) are closed then; each handed-out env is its task's
    runner's to close.
    """

    def __init__(
        self, cfg: EnvConfig, n_envs: int, use_async_envs: bool, tasks: Collection[TaskSpec] | None = None
    ):
        """`tasks`: those that will be asked for (None: every task's env is kept until asked for)."""
        self.cfg, self.n_envs, self.use_async_envs = cfg, n_envs, use_async_envs
        self.wanted = None if tasks is None else {task.key for task in tasks}
        self._envs: dict[tuple[str, int], Any] | None = None
        self._lock = threading.Lock()  # tasks run in threads with --env.max_parallel_tasks

    def __call__(self, task: TaskSpec) -> SlotEnv:
        with self._lock:
            envs = self._built()
            if task.key not in envs:
                made = ", ".join(f"{group}/{task_id}" for group, task_id in envs) or "none left"
                raise RuntimeError(
                    f"env type {self.cfg.type}: its create_envs(n_envs={self.n_envs}) gave no env for "
                    f"task {task.group}/{task.task_id} ({made})"
                )
            return slot_env(envs.pop(task.key), task)

    def _built(self) -> dict[tuple[str, int], Any]:
        if self._envs is None:
            made = self.cfg.create_envs(n_envs=self.n_envs, use_async_envs=self.use_async_envs)
            envs = {(group, task_id): env for group, by_id in made.items() for task_id, env in by_id.items()}
            close_envs(
                [env for key, env in envs.items() if self.wanted is not None and key not in self.wanted]
            )
            self._envs = {key: env for key, env in envs.items() if self.wanted is None or key in self.wanted}
            if self._envs:
                logger.info("%s", own_envs_note(self.cfg.type, next(iter(self._envs.values()))))
        return self._envs


def own_envs_note(env_type: str, env: Any) -> str:
    """One line on what of our seeding, retries and isolation applies to a vector env that a
    config built itself."""
    if isinstance(env, LazyVectorEnv):
        how = "our lazy vector envs, with their workers, seeds and retries"
    elif isinstance(env, gym.vector.SyncVectorEnv):
        how = (
            "SyncVectorEnv stepped slot by slot in this process: episode e resets with seed + e and a "
            "crashed sub-env is rebuilt, but no worker process isolates it and no step timeout applies"
        )
    else:
        how = (
            f"{type(env).__name__} stepped whole, in waves of {env.num_envs} episodes: episode e resets "
            "with seed + e, but a crash stops the task and no step timeout applies"
        )
    return f"env type {env_type} builds its own envs (create_envs overridden): {how}"


def make_env_pre_post_processors(env_cfg: EnvConfig, policy_cfg: Any) -> tuple[Any, Any]:
    """LeRobot's env processors, as `env_cfg.get_env_processors()` gives them: (observation
    batch -> batch, {"action": tensor} -> the same). `policy_cfg` is accepted for the signature
    (LeRobot swaps in X-VLA's own pair; this build has no X-VLA)."""
    return env_cfg.get_env_processors()
