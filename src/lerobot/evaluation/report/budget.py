"""How many episodes the next run needs: per task for a +-5-point interval, and per pair to tell B from A.

Budgets are computed from the runs at hand (their observed success and discordance rates),
so they answer "how much more" for the policies being compared, not for a textbook 50%.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lerobot.evaluation.paired_statistics import POWER, PairedCounts, episodes_for_half_width, pairs_to_detect
from lerobot.evaluation.report.paired import RunComparison, compare_runs
from lerobot.evaluation.results import RunResult

HALF_WIDTH = 0.05
"""Default target: a 95% interval of +-5 points per task."""
DIFFERENCE = 0.05
"""Default difference to detect between two runs: 5 points."""


@dataclass(frozen=True)
class TaskEpisodes:
    """One task of one run: episodes it has, and episodes for an interval of the target width."""

    name: str
    n_episodes: int
    rate: float | None
    episodes_needed: int | None
    """None when the task has no scored episode to take a rate from."""


@dataclass(frozen=True)
class TaskPairs:
    """One task (or all tasks) of a paired comparison: pairs it has, and pairs to detect the difference."""

    name: str
    n_pairs: int
    discordance: float | None
    """Fraction of pairs whose episodes disagree (one run succeeded, the other failed)."""
    pairs_needed: int | None


@dataclass(frozen=True)
class RunEpisodes:
    name: str
    tasks: tuple[TaskEpisodes, ...]


@dataclass(frozen=True)
class ComparisonPairs:
    name_a: str
    name_b: str
    tasks: tuple[TaskPairs, ...]
    overall: TaskPairs
    """All tasks' pairs together, for the overall (pair-stratified) test."""
    pairs_per_task: int | None
    """The overall need spread evenly over the tasks (rounded up)."""


@dataclass(frozen=True)
class Budget:
    half_width: float
    difference: float
    power: float
    runs: tuple[RunEpisodes, ...]
    comparisons: tuple[ComparisonPairs, ...]
    """Paired comparisons only: an unpaired one has no discordance rate to plan from."""


def plan_budget(
    runs: Sequence[RunResult],
    names: Sequence[str],
    half_width: float = HALF_WIDTH,
    difference: float = DIFFERENCE,
) -> Budget:
    """The budget for every run, and for every later run paired with the first."""
    comparisons = compare_runs(runs, names) if len(runs) > 1 else []
    return Budget(
        half_width=half_width,
        difference=difference,
        power=POWER,
        runs=tuple(_run_episodes(run, name, half_width) for run, name in zip(runs, names, strict=True)),
        comparisons=tuple(_comparison_pairs(c, difference) for c in comparisons if c.paired),
    )


def _run_episodes(run: RunResult, name: str, half_width: float) -> RunEpisodes:
    tasks = []
    for task in run.tasks:
        rate = task.summary.success_rate if task.summary.n_episodes else None
        needed = episodes_for_half_width(rate, half_width) if rate is not None else None
        label = task.task if task.group == task.task else f"{task.group} / {task.task}"
        tasks.append(TaskEpisodes(label, task.summary.n_episodes, rate, needed))
    return RunEpisodes(name, tuple(tasks))


def _comparison_pairs(comparison: RunComparison, difference: float) -> ComparisonPairs:
    tasks = tuple(_task_pairs(t.name, t.counts, difference) for t in comparison.tasks)
    overall = _task_pairs("Overall", comparison.overall.counts, difference)
    per_task = (
        math.ceil(overall.pairs_needed / len(tasks)) if overall.pairs_needed is not None and tasks else None
    )
    return ComparisonPairs(comparison.name_a, comparison.name_b, tasks, overall, per_task)


def _task_pairs(name: str, counts: PairedCounts | None, difference: float) -> TaskPairs:
    if counts is None or not counts.n_pairs:
        return TaskPairs(name, 0, None, None)
    discordance = counts.n_discordant / counts.n_pairs
    return TaskPairs(name, counts.n_pairs, discordance, pairs_to_detect(difference, discordance))
