"""What every backend's finished episodes go through, the same way for every backend.

Each finished episode is appended to the journal (when there is one) before anything else
happens, counted in the progress bar and, when its task is complete, summed up in one log
line. `RunCollector.result()` turns what was collected into a `RunResult` at any time, so an
interrupted run still reports what finished (`lerobot.evaluation.evaluate.run_evaluation`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence

from lerobot.configs.env import TaskSpec
from lerobot.evaluation.results import EpisodeResult, RunResult, TaskKey, TaskResult
from lerobot.evaluation.run.plan import RunPlan, WorkUnit
from lerobot.evaluation.run.progress import TaskProgress, task_progress
from lerobot.evaluation.store.journal import EpisodeJournal
from lerobot.utils.signals import signals_deferred

logger = logging.getLogger(__name__)


class RunCollector:
    """The runner's side of `RunEvents`: journal, progress, per-task log lines, results."""

    def __init__(self, plan: RunPlan, journal: EpisodeJournal | None, tasks_in_order: bool = True):
        self.plan, self.journal, self.tasks_in_order = plan, journal, tasks_in_order
        self.started = time.perf_counter()
        self.episodes: dict[TaskKey, dict[int, EpisodeResult]] = {t.key: plan.done_of(t) for t in plan.tasks}
        self.n_new = dict.fromkeys(self.episodes, 0)
        self.eval_s = dict.fromkeys(self.episodes, 0.0)
        self.remaining = {t.key: len(plan.pending_of(t)) for t in plan.tasks}
        self._bars = contextlib.ExitStack()
        self._bar: TaskProgress | None = None
        self._bar_task: TaskKey | None = None

    # -- RunEvents --------------------------------------------------------------------------

    def unit_started(self, unit: WorkUnit) -> None:
        if self.tasks_in_order and self._bar_task != unit.task_key:
            self._open_bar(unit.task.label, [unit.task])
            self._bar_task = unit.task_key

    def episode_finished(self, task: TaskSpec, episode: EpisodeResult) -> None:
        # The journal line and the in-memory result are one step: a Ctrl-C between them would
        # leave the partial eval_info.json one episode short of episodes.jsonl.
        with signals_deferred():
            if self.journal is not None:
                self.journal.append(task, episode)
            self.episodes[task.key][episode.episode_index] = episode
            self.n_new[task.key] += 1
            self.remaining[task.key] -= 1
        if self._bar is not None:
            self._bar.update(episode)
        _log_episode(task, episode)

    def unit_finished(self, unit: WorkUnit, eval_s: float) -> None:
        self.eval_s[unit.task_key] += eval_s
        if self.remaining[unit.task_key] <= 0:
            self._log_task(unit.task)

    # -- results ----------------------------------------------------------------------------

    def result(self, complete: bool) -> RunResult:
        """The run so far. A complete run reports every task; a partial one the tasks with at
        least one finished episode."""
        tasks = [
            TaskResult.of(task, self.episodes[task.key].values(), self.eval_s[task.key])
            for task in self.plan.tasks
            if complete or self.episodes[task.key]
        ]
        return RunResult.of(tasks, time.perf_counter() - self.started, complete=complete)

    @property
    def n_episodes(self) -> int:
        return sum(len(by_index) for by_index in self.episodes.values())

    # -- progress ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def progress_bars(self):
        """Bars while the backend runs: one per task, or one for all when tasks run at once."""
        with self._bars:
            if not self.tasks_in_order:
                self._open_bar(f"all tasks ({len(self.plan.tasks)})", self.plan.tasks)
            yield self

    def _open_bar(self, label: str, tasks: Sequence[TaskSpec]) -> None:
        if self._bar is not None:
            self._bars.close()
            self._bars = contextlib.ExitStack()
        done = [e for task in tasks for e in self.episodes[task.key].values()]
        total = len(done) + sum(self.remaining[task.key] for task in tasks)
        self._bar = self._bars.enter_context(task_progress(label, total, done))

    def _log_task(self, task: TaskSpec) -> None:
        episodes = self.episodes[task.key]
        result = TaskResult.of(task, episodes.values(), self.eval_s[task.key])
        summary = result.summary
        if not summary.n_episodes:
            logger.info(
                "%s task %d (%s): no episodes ran to their end (%d failed for good)",
                task.group or "task",
                task.task_id,
                task.name,
                summary.n_episodes_failed,
            )
            return
        low, high = summary.pc_success_ci95 or (0.0, 0.0)
        failed = (
            f", {summary.n_episodes_failed} failed for the harness and left out"
            if summary.n_episodes_failed
            else ""
        )
        logger.info(
            "%s task %d (%s): %.1f%% success (95%% CI %.1f-%.1f) over %d episodes (%d run now%s) in %.1fs",
            task.group or "task",
            task.task_id,
            task.name,
            summary.pc_success or 0.0,
            low,
            high,
            summary.n_episodes,
            self.n_new[task.key],
            failed,
            self.eval_s[task.key],
        )


def _log_episode(task: TaskSpec, result: EpisodeResult) -> None:
    logger.debug(
        "%s episode %d (seed %d): %s after %d steps, %.1fs",
        task.label,
        result.episode_index,
        result.seed,
        "success" if result.success else "failure",
        result.n_steps,
        result.wall_s,
    )
