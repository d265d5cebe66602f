"""Where episodes run: the backend interface, and the local backend.

A backend takes a run plan's work units and reports every finished episode through
`RunEvents`; what happens to results (journal, progress, per-task lines, eval_info.json) is the
runner's business (`lerobot.evaluation.runner`), the same for every backend. Two backends exist:
`LocalBackend` (this process and its env worker processes) and `RayBackend` (actors on a Ray
cluster, `lerobot.evaluation.ray_backend`). A new one, e.g. a remote policy server, implements
`run` and nothing else.
"""

from __future__ import annotations

import abc
import logging
import os
import time
from collections.abc import Callable
from typing import ClassVar, Protocol

import torch

from lerobot.configs.env import TaskSpec
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.plan import RunPlan, WorkUnit
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.device import policy_device

logger = logging.getLogger(__name__)

EnvSource = Callable[[TaskSpec], LazyVectorEnv]
"""Builds (or hands over) the vector env of a task; the backend closes it when the task is done."""


class RunEvents(Protocol):
    """What a backend reports while it runs a plan."""

    def unit_started(self, unit: WorkUnit) -> None:
        """A unit's episodes are about to run."""

    def episode_finished(self, task: TaskSpec, episode: EpisodeResult) -> None:
        """An episode ended (succeeded, failed, or failed for good after its retries)."""

    def unit_finished(self, unit: WorkUnit, eval_s: float) -> None:
        """All of a unit's episodes have been reported; `eval_s` is the time spent on it."""


class EvalBackend(abc.ABC):
    """Runs the work units of a plan."""

    runs_tasks_in_order: ClassVar[bool] = True
    """True when tasks run one after the other (one progress bar per task); False when
    units of several tasks run at once (one bar for the whole run)."""

    @abc.abstractmethod
    def run(self, plan: RunPlan, events: RunEvents) -> None:
        """Run every pending unit of `plan`, reporting through `events`; return when all are done."""


class LocalBackend(EvalBackend):
    """Tasks one after the other in this process, each on its own vector env.

    A task's env is closed as soon as its task is done, also when it fails, so at most one
    task's workers and simulators exist at any time.
    """

    def __init__(
        self,
        policy: PreTrainedPolicy,
        settings: RolloutSettings,
        env_source: EnvSource,
        n_env_workers: int = 0,
    ):
        """`n_env_workers`: worker processes the envs run in (0: in-process), whose cores a
        policy on the CPU leaves to them."""
        self.policy, self.settings, self.env_source = policy, settings, env_source
        self.n_env_workers = n_env_workers

    def run(self, plan: RunPlan, events: RunEvents) -> None:
        if self.n_env_workers:
            share_cores_with_workers(self.policy, self.n_env_workers)
        for unit in plan.units():
            self._run_unit(unit, events)

    def _run_unit(self, unit: WorkUnit, events: RunEvents) -> None:
        started = time.perf_counter()
        events.unit_started(unit)
        env = self.env_source(unit.task)
        hooks = RolloutHooks(on_episode_end=lambda episode: events.episode_finished(unit.task, episode))
        try:
            run_episodes(env, self.policy, unit.episodes, self.settings, unit.task, hooks)
        finally:
            env.close()
        events.unit_finished(unit, time.perf_counter() - started)


def share_cores_with_workers(policy: PreTrainedPolicy, n_workers: int) -> None:
    """Leave the cores that env workers use to them when the policy runs on the CPU.

    Torch starts one thread per core; with simulator workers on the same cores, its threads
    fight them, and small models run many times slower than on a single thread.
    """
    if policy_device(policy).type != "cpu":
        return
    threads = max(1, (os.cpu_count() or 1) - n_workers)
    if threads < torch.get_num_threads():
        logger.info("policy on CPU: %d torch thread(s), the other cores step the envs", threads)
        torch.set_num_threads(threads)
