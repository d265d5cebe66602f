"""Where episodes run: the backend interface, and the local backend.

A backend takes a run plan's work units and reports every finished episode through
`RunEvents`; what happens to results (journal, progress, per-task lines, eval_info.json) is the
same for every backend: `lerobot.evaluation.run.collector` receives the events and
`lerobot.evaluation.evaluate.run_evaluation` writes the files. Two backends exist:
`LocalBackend` (this process and its env worker processes) and `RayBackend` (actors on a Ray
cluster, `lerobot.evaluation.run.ray_backend`).
"""

from __future__ import annotations

import abc
import concurrent.futures as cf
import contextlib
import copy
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Protocol

import torch

from lerobot.configs.env import TaskSpec
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.batching.layout import EnvSource
from lerobot.evaluation.run.plan import RunPlan, WorkUnit
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, RolloutStoppedError, run_episodes
from lerobot.policies.pretrained import RowPolicy
from lerobot.utils.device_utils import policy_device

logger = logging.getLogger(__name__)


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

    def close(self) -> None:
        """Release what the backend holds once the run is over (the policy's connections);
        nothing by default."""
        return None

    def provenance(self) -> dict[str, Any]:
        """What eval_info.json's provenance should say about where the episodes ran, beyond this
        machine (the Ray backend's nodes); nothing by default."""
        return {}


class TaskRecording(Protocol):
    """Where a task's rollouts are recorded (a dataset), fed by the rollout's hooks."""

    def add_step(self, env_id: int, episode: int, observation: Any, action: Any, step: int) -> None: ...

    def end_episode(self, result: EpisodeResult) -> None: ...

    def finish(self) -> None: ...


TaskRecorders = Callable[[TaskSpec, Sequence[int]], TaskRecording]
"""Opens the recording of a task's episodes (`--eval.recording`)."""


class LocalBackend(EvalBackend):
    """Tasks one after the other in this process, each on its own vector env; or, with
    `max_parallel_tasks=N`, N tasks at a time in threads, each with its own copy of the policy.

    A task's env is closed as soon as its task is done, also when it fails, so at most one
    task's (or N tasks') workers and simulators exist at any time; with `close_envs=False`
    the caller, who built the envs, keeps them open (LeRobot's `eval_policy`). The copies
    matter: a policy keeps per-row state (action queues, observation histories, random
    generators), and tasks sharing one would interleave it. LeRobot shares one policy between its threads (its issue
    #4327: 85% success silently became 0%); here every episode gives the same result with N
    tasks at a time as with one.
    """

    def __init__(
        self,
        policy: RowPolicy,
        settings: RolloutSettings,
        env_source: EnvSource,
        max_parallel_tasks: int = 1,
        recorders: TaskRecorders | None = None,
        close_envs: bool = True,
    ):
        """`recorders`: record each task's rollouts."""
        self.policy, self.settings, self.env_source = policy, settings, env_source
        self.max_parallel_tasks = max(1, max_parallel_tasks)
        self.recorders = recorders
        self.close_envs = close_envs
        self.runs_tasks_in_order = self.max_parallel_tasks == 1
        self._stop = threading.Event()

    def run(self, plan: RunPlan, events: RunEvents) -> None:
        units = plan.units()
        n_parallel = min(self.max_parallel_tasks, len(units))
        if n_parallel <= 1:
            for unit in units:
                self._run_unit(unit, self.policy, events)
            return
        with cores_split_between_tasks(self.policy, n_parallel):
            self._run_in_threads(units, n_parallel, _SerialEvents(events))

    def close(self) -> None:
        self.policy.close()

    def _run_in_threads(self, units: Sequence[WorkUnit], n_parallel: int, events: RunEvents) -> None:
        """`n_parallel` units at a time; the first failure (or an interrupt) stops the others."""
        made = [copy.deepcopy(self.policy) for _ in range(n_parallel - 1)]
        copies: queue.Queue[RowPolicy] = queue.Queue()
        for policy in (self.policy, *made):
            copies.put(policy)
        logger.info("%d tasks at a time, each with its own copy of the policy", n_parallel)
        try:
            self._run_units_on_copies(units, n_parallel, copies, events)
        finally:
            for policy in made:  # the original is closed with the backend
                policy.close()

    def _run_units_on_copies(
        self,
        units: Sequence[WorkUnit],
        n_parallel: int,
        copies: queue.Queue[RowPolicy],
        events: RunEvents,
    ) -> None:
        """Each unit takes a policy from `copies` for its run and puts it back after."""

        def run_with_a_copy(unit: WorkUnit) -> None:
            policy = copies.get()
            try:
                self._run_unit(unit, policy, events)
            except BaseException:
                # Stop here, in the failing thread: a queued unit this thread (or another) picks
                # up next must see the stop before the main thread hears of the failure.
                self._stop.set()
                raise
            finally:
                copies.put(policy)

        self._stop.clear()
        with cf.ThreadPoolExecutor(max_workers=n_parallel, thread_name_prefix="task") as pool:
            futures = [pool.submit(run_with_a_copy, unit) for unit in units]
            try:
                for future in cf.as_completed(futures):
                    future.result()
            except BaseException:
                self._stop.set()  # running tasks end within one step; queued ones never start
                for future in futures:
                    future.cancel()
                raise

    def _run_unit(self, unit: WorkUnit, policy: RowPolicy, events: RunEvents) -> None:
        if self._stop.is_set():
            raise RolloutStoppedError(f"{unit.task.label}: not started, the run is stopping")
        started = time.perf_counter()
        events.unit_started(unit)
        env = self.env_source(unit.task)
        recording = self.recorders(unit.task, unit.episodes) if self.recorders is not None else None

        def episode_finished(episode: EpisodeResult) -> None:
            events.episode_finished(unit.task, episode)  # the journal first
            if recording is not None:
                recording.end_episode(episode)

        hooks = RolloutHooks(
            on_episode_end=episode_finished,
            on_step=recording.add_step if recording is not None else None,
            should_stop=self._stop.is_set if self.max_parallel_tasks > 1 else None,
        )
        try:
            run_episodes(env, policy, unit.episodes, self.settings, unit.task, hooks)
        finally:
            if self.close_envs:
                env.close()
            if recording is not None:
                recording.finish()
        events.unit_finished(unit, time.perf_counter() - started)


class _SerialEvents:
    """RunEvents called from several task threads, one call at a time (journal, progress)."""

    def __init__(self, events: RunEvents):
        self._events = events
        self._lock = threading.Lock()

    def unit_started(self, unit: WorkUnit) -> None:
        with self._lock:
            self._events.unit_started(unit)

    def episode_finished(self, task: TaskSpec, episode: EpisodeResult) -> None:
        with self._lock:
            self._events.episode_finished(task, episode)

    def unit_finished(self, unit: WorkUnit, eval_s: float) -> None:
        with self._lock:
            self._events.unit_finished(unit, eval_s)


@contextlib.contextmanager
def cores_split_between_tasks(policy: RowPolicy, n_parallel: int) -> Iterator[None]:
    """While `n_parallel` tasks run at once, a policy on the CPU gets an equal share of the
    cores (torch's thread pool is one per process); the caller's setting comes back after.

    Tasks one at a time keep torch's own setting, every core: within a task, envs and policy
    take turns (the policy waits for every env's step, the env workers for the policy's
    actions), so the cores the workers render on are idle while the policy runs, and with
    OpenMP's passive waits (`lerobot.utils.threads`) its threads sleep while the envs step.
    Fewer threads, the cores the workers leave free, would idle a core during every policy
    call (one of two at batch 2 with ACT; benchmarks/README.md).
    """
    threads_before = torch.get_num_threads()
    threads = max(1, (os.cpu_count() or 1) // n_parallel)
    split = policy_device(policy).type == "cpu" and threads < threads_before
    if split:
        logger.info("policy on CPU: %d torch thread(s) for each of %d tasks at a time", threads, n_parallel)
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if split:
            torch.set_num_threads(threads_before)
