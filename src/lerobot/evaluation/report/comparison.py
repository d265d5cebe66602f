"""Several runs side by side: how to label them, which tasks to line up, when not to compare."""

from __future__ import annotations

from collections.abc import Sequence

from lerobot.evaluation.results import RunResult, Summary, TaskResult

NamedTask = tuple[str, str]
"""(suite, task name): what identifies a task across runs, since ids depend on the task list a
run was given."""


def named_task(task: TaskResult) -> NamedTask:
    return task.group, task.task


def run_labels(runs: Sequence[RunResult]) -> list[str]:
    """'A: job name' per run; directory names where job names repeat (same policy type twice)."""
    names = [run.name for run in runs]
    if len(set(names)) < len(names):
        names = [run.output_dir.name if run.output_dir else run.name for run in runs]
    if len(set(names)) < len(names):
        names = [str(run.output_dir) for run in runs]
    return [f"{chr(ord('A') + i)}: {name}" if i < 26 else name for i, name in enumerate(names)]


def run_letters(n_runs: int) -> list[str]:
    """'A', 'B', ...: how sentences name the runs that `run_labels` labels."""
    return [chr(ord("A") + i) if i < 26 else f"run {i + 1}" for i in range(n_runs)]


def compared_tasks(runs: Sequence[RunResult]) -> list[NamedTask]:
    """Every (suite, task) of any run, in the order they first appear."""
    keys: dict[NamedTask, None] = {}
    for run in runs:
        keys.update(dict.fromkeys(named_task(task) for task in run.tasks))
    return list(keys)


def comparability_warning(runs: Sequence[RunResult]) -> str | None:
    """Why the runs' overall rates must not be compared directly, if they must not."""
    task_sets = {frozenset(named_task(task) for task in run.tasks) for run in runs}
    if len(task_sets) > 1:
        return "The runs cover different tasks: compare them task by task, not by their overall rates."
    episode_counts = {tuple(task.summary.n_episodes for task in run.tasks) for run in runs}
    if len(episode_counts) > 1:
        return "The runs have different numbers of episodes per task: their intervals differ in width."
    return None


def task_summaries(run: RunResult) -> dict[NamedTask, Summary]:
    return {named_task(task): task.summary for task in run.tasks}
