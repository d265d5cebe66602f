"""How a task's batch of envs is laid out: how many envs, which step in this process, how many
each worker process steps. `BatchLayout.of` reads `--eval.*`; what it leaves to auto follows the
core-count rule below, unless a measurement was settled into the config first (`settle`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.configs.eval import EvalConfig
from lerobot.envs.factory import OwnEnvs, make_task_env
from lerobot.envs.slots import SlotEnv
from lerobot.utils.threads import usable_cores

MAX_AUTO_BATCH_SIZE = 64
MAX_AUTO_MAIN_PROCESS_BATCH = 4
"""On a bigger machine, batches up to this size step one env in the main process by default."""
SMALL_MACHINE_CORES = 4
"""Up to this many cores, the main process steps its share of any batch (`auto_envs_in_main_process`)."""


def auto_batch_size(n_episodes: int, cpu_count: int | None = None) -> int:
    """Number of parallel envs when `--eval.batch_size=0`.

    One simulator worker per core keeps every core busy, but the main process needs room for
    policy inference and video encoding, hence 70% of the cores; at least 2 on a machine with
    2 cores or more, where the main process steps one of them itself (`envs_in_main_process`):
    on 2 cores batch 2 beat batch 1 in every case measured (a state-only benchmark 2,439 against
    1,931 env-steps/s, ACT on 64x64 pixels 148 against 117, README's demo with videos 44.9 s
    against 48.1 s). Never more envs than episodes, and a cap of 64 so a big server does not
    start hundreds of GL contexts. Cores are those this process may use (`usable_cores`: a
    container's CPU quota, a cluster job's cpuset), not the host's.
    """
    cores = cpu_count if cpu_count is not None else usable_cores()
    by_cpu = max(min(cores, 2), math.floor(cores * 0.7))
    return max(1, min(by_cpu, n_episodes, MAX_AUTO_BATCH_SIZE))


def auto_envs_in_main_process(n_envs: int, cpu_count: int | None = None) -> int:
    """Envs the main process steps itself when `--eval.envs_in_main_process` is not given.

    While its workers step, the main process only waits for them; stepping envs itself in
    that time adds their throughput for free when the machine has a core for it (batch 2 on
    2 cores: 0.6 -> 0.8 of what two raw processes simulate). On a small machine (up to
    `SMALL_MACHINE_CORES`) every process, the main one included, takes an equal share of the
    batch, so that there are no more processes than cores: on 2 cores, batch 4 as 2 envs here
    and 1 worker of 2 stepped 3,125 env-steps/s (state, random policy) against 2,009 with 2
    workers of 2 beside an idle main process, ACT on the state 3,333 against 2,915; ACT on
    64x64 pixels, where rendering bounds the step, alike (161-165 either way). On a bigger
    machine the main process keeps its core for the policy and the batch's replies beyond
    batch 4; those envs have no crash isolation, which `--eval.envs_in_main_process=0` keeps.
    """
    cores = cpu_count if cpu_count is not None else usable_cores()
    if n_envs < 2 or cores < 2:
        return 0  # no worker to wait for, or no core to step beside them
    if cores <= SMALL_MACHINE_CORES:
        return n_envs // min(n_envs, cores)
    return 1 if n_envs <= MAX_AUTO_MAIN_PROCESS_BATCH else 0


def auto_envs_per_worker(
    n_envs_in_workers: int, cpu_count: int | None = None, main_steps_envs: bool = False
) -> int:
    """Envs per worker process when `--eval.envs_per_worker` is 0 (local backend).

    Beyond one worker per core, more processes only compete for the cores: each switch
    between them and each message costs CPU that stepping needs (batch 8 on 2 cores, state
    observations: 8 workers stepped about 2,050 env-steps/s, 2 workers of 4 envs 2,330-2,680).
    So at most one worker per core, each stepping its share of the envs in turn; with envs in
    the main process (`main_steps_envs`), one core is the main process's.
    """
    cores = cpu_count if cpu_count is not None else usable_cores()
    worker_cores = max(1, cores - 1) if main_steps_envs else cores
    return max(1, math.ceil(n_envs_in_workers / worker_cores))


@dataclass(frozen=True)
class BatchLayout:
    """Where a task's envs run (local backend; on Ray, `envs_per_worker` is each actor's share)."""

    n_envs: int
    """Envs stepped in parallel: auto when `--eval.batch_size=0`, never more than the episodes."""
    use_async: bool
    """Envs step in worker processes (only with more than one env)."""
    envs_in_main_process: int
    """How many of them this process steps itself (all of them without workers)."""
    envs_per_worker: int

    @classmethod
    def of(cls, eval_cfg: EvalConfig) -> BatchLayout:
        episodes = eval_cfg.episodes_per_task
        n_envs = min(eval_cfg.batch_size, episodes) if eval_cfg.batch_size else auto_batch_size(episodes)
        use_async = eval_cfg.use_async_envs and n_envs > 1
        in_main = _envs_in_main_process(eval_cfg, n_envs, use_async)
        return cls(n_envs, use_async, in_main, _envs_per_worker(eval_cfg, n_envs - in_main, in_main > 0))

    @property
    def worker_processes(self) -> int:
        """Env worker processes of the local backend (0: every env runs in the main process)."""
        in_workers = self.n_envs - self.envs_in_main_process
        return math.ceil(in_workers / self.envs_per_worker) if in_workers > 0 else 0

    @property
    def answering_units(self) -> int:
        """How many units answer a round: worker processes, and each env of the main process
        (`LazyVectorEnv.slots_by_owner`); row groups are made of whole units."""
        if not self.worker_processes:
            return 1
        return self.envs_in_main_process + self.worker_processes

    def describe(self) -> str:
        """Where the envs run, for the log: `2 async workers of 3 envs, 1 in the main process`."""
        if not self.worker_processes:
            return "in-process"
        plural = "s" if self.worker_processes > 1 else ""
        workers = f"{self.worker_processes} async worker{plural}"
        if self.envs_per_worker > 1:
            workers += f" of {self.envs_per_worker} envs"
        in_main = f", {self.envs_in_main_process} in the main process" if self.envs_in_main_process else ""
        return workers + in_main


def _envs_in_main_process(eval_cfg: EvalConfig, n_envs: int, use_async: bool) -> int:
    if not use_async:
        return n_envs
    if eval_cfg.envs_in_main_process is None:
        return auto_envs_in_main_process(n_envs)
    return min(eval_cfg.envs_in_main_process, n_envs)


def _envs_per_worker(eval_cfg: EvalConfig, n_envs_in_workers: int, main_steps_envs: bool) -> int:
    """As given, else 1 on Ray (each actor's policy call is its own) and the rule here."""
    if eval_cfg.envs_per_worker:
        return eval_cfg.envs_per_worker
    if eval_cfg.backend == "ray":
        return 1
    return auto_envs_per_worker(n_envs_in_workers, main_steps_envs=main_steps_envs)


EnvSource = Callable[[TaskSpec], SlotEnv]
"""Builds (or hands over) the vector env of a task."""


def task_envs(
    env_cfg: EnvConfig, eval_cfg: EvalConfig, tasks: Collection[TaskSpec] | None = None
) -> EnvSource:
    """Fresh vector envs of `env_cfg`'s tasks: as many envs, as many workers and where `--eval.*` says.

    A config that builds its own envs builds every task's at once, as many as `--eval.*` says,
    and where its `create_envs` puts them (`OwnEnvs`); `tasks`, those that will be asked for,
    lets it close the others' at once.
    """
    layout = BatchLayout.of(eval_cfg)
    if env_cfg.builds_own_envs:
        return OwnEnvs(env_cfg, layout.n_envs, layout.use_async, tasks)

    def task_env(task: TaskSpec) -> SlotEnv:
        return make_task_env(
            env_cfg,
            task,
            layout.n_envs,
            layout.use_async,
            eval_cfg.step_timeout_s,
            layout.envs_in_main_process,
            layout.envs_per_worker,
        )

    return task_env


def arranged(row_groups: int, independent_rows: bool = False) -> str:
    """How a batch's rows take their rounds, for the logs after its size or layout: `, rows
    advancing independently`, `, in N row groups`, or nothing for lockstep."""
    if independent_rows:
        return ", rows advancing independently"
    return f", in {row_groups} row groups" if row_groups > 1 else ""
