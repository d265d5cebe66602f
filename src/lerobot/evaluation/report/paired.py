"""Is run B better than run A? Each later run against the first, paired episode by episode when the data allow.

Every run is compared with the first one, not with the run before it: the first run is the
reference (the checkpoint in use, the baseline of a paper), and a verdict on C should not
change because a B was run in between.

Two runs are paired when the files say so, never by assumption: the same tasks (by suite and
task name), and for every task the same episode indices with the same seeds. Then episode e
of A and episode e of B started from the same scene, and the comparison uses
`paired_statistics` on the pairs; a pair in which the harness failed either episode
(`failure_reason`, see `results.scored`) is left out on both sides and counted. Otherwise
each side's scored episodes are independent samples, and the reason pairing failed is said.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from lerobot.evaluation.paired_statistics import (
    ALPHA,
    PairedCounts,
    holm_adjusted,
    mcnemar_exact_p_value,
    paired_difference_interval,
    stratified_paired_p_value,
    unpaired_difference_interval,
)
from lerobot.evaluation.report.comparison import NamedTask, named_task
from lerobot.evaluation.results import EpisodeResult, RunResult, TaskResult

NO_PAIRS = PairedCounts(0, 0, 0, 0)


@dataclass(frozen=True)
class TaskComparison:
    """One task of B against A: rates, the difference B minus A (fractions) and its interval."""

    suite: str
    task: str
    n_a: int
    successes_a: int
    n_b: int
    successes_b: int
    interval: tuple[float, float] | None
    counts: PairedCounts | None = None
    """The episode pairs; None when the runs are not paired."""
    p_value: float | None = None
    """Exact McNemar p-value (paired runs only)."""
    holm_p_value: float | None = None
    """`p_value` after Holm's adjustment over all compared tasks."""
    n_pairs_dropped: int = 0
    """Pairs left out because the harness failed one or both of their episodes."""

    @property
    def name(self) -> str:
        return self.task if self.suite == self.task else f"{self.suite} / {self.task}"

    @property
    def rate_a(self) -> float | None:
        return self.successes_a / self.n_a if self.n_a else None

    @property
    def rate_b(self) -> float | None:
        return self.successes_b / self.n_b if self.n_b else None

    @property
    def difference(self) -> float | None:
        if self.rate_a is None or self.rate_b is None:
            return None
        return self.rate_b - self.rate_a


@dataclass(frozen=True)
class RunComparison:
    """Run B against run A, task by task and overall."""

    name_a: str
    name_b: str
    tasks: tuple[TaskComparison, ...]
    overall: TaskComparison
    """All compared tasks pooled; its p-value is the pair-stratified test's."""
    unpaired_reason: str | None
    """Why the runs are not paired; None when they are."""

    @property
    def paired(self) -> bool:
        return self.unpaired_reason is None

    @property
    def n_pairs_dropped(self) -> int:
        return sum(task.n_pairs_dropped for task in self.tasks)

    def tasks_where(self, better: bool) -> list[TaskComparison]:
        """Tasks where B is better (worse) than A after Holm's adjustment."""
        return [
            task
            for task in self.tasks
            if task.holm_p_value is not None
            and task.holm_p_value < ALPHA
            and (task.difference or 0) != 0
            and ((task.difference or 0) > 0) == better
        ]

    def conclusion(self) -> str:
        """One sentence saying what can be concluded, with the numbers it rests on."""
        return _paired_sentence(self) if self.paired else _unpaired_sentence(self)


def compare_runs(runs: Sequence[RunResult], names: Sequence[str]) -> list[RunComparison]:
    """Every run after the first against the first."""
    return [compare_two(runs[0], run, names[0], name) for run, name in zip(runs[1:], names[1:], strict=True)]


def compare_two(run_a: RunResult, run_b: RunResult, name_a: str = "A", name_b: str = "B") -> RunComparison:
    """B against A: paired when the files show the same tasks, episodes and seeds."""
    reason = pairing_problem(run_a, run_b, name_a, name_b)
    shared = _shared_tasks(run_a, run_b)
    if reason is None:
        tasks = [_paired_task(a, b) for a, b in shared]
        tasks = _with_holm(tasks)
        overall = _pooled_paired(tasks)
    else:
        tasks = [_unpaired_task(a, b) for a, b in shared]
        overall = _pooled_unpaired(tasks)
    return RunComparison(name_a, name_b, tuple(tasks), overall, reason)


# -- pairing ---------------------------------------------------------------------------------


def pairing_problem(run_a: RunResult, run_b: RunResult, name_a: str = "A", name_b: str = "B") -> str | None:
    """Why the runs' episodes do not pair up one to one, in one line; None when they do."""
    tasks_a = {named_task(t): t for t in run_a.tasks}
    tasks_b = {named_task(t): t for t in run_b.tasks}
    for key in tasks_a.keys() ^ tasks_b.keys():
        only = name_a if key in tasks_a else name_b
        return f"not paired: task {_task_name(key)} is only in {only}"
    for key, task_a in tasks_a.items():
        problem = _episode_pairing_problem(_task_name(key), task_a, tasks_b[key], name_a, name_b)
        if problem:
            return problem
    if not tasks_a:
        return "not paired: the runs have no tasks"
    return None


def _episode_pairing_problem(
    task: str, task_a: TaskResult, task_b: TaskResult, name_a: str, name_b: str
) -> str | None:
    episodes_a = _by_index(task_a.episodes)
    episodes_b = _by_index(task_b.episodes)
    for name, episodes in ((name_a, episodes_a), (name_b, episodes_b)):
        if not episodes:
            return f"not paired: {name}'s eval_info.json has no per-episode results for {task}"
    if len(episodes_a) != len(episodes_b):
        return (
            f"not paired: {task} has {len(episodes_a)} episodes in {name_a} and {len(episodes_b)} in {name_b}"
        )
    for index in sorted(episodes_a.keys() ^ episodes_b.keys()):
        only = name_a if index in episodes_a else name_b
        return f"not paired: {task} episode {index} is only in {only}"
    for index, episode_a in sorted(episodes_a.items()):
        seed_a, seed_b = episode_a.seed, episodes_b[index].seed
        if seed_a is None or seed_b is None:
            missing = name_a if seed_a is None else name_b
            return f"not paired: {task} episode {index} has no recorded seed in {missing}"
        if seed_a != seed_b:
            return (
                f"not paired: {task} episode {index} has seed {seed_a} in {name_a} and {seed_b} in {name_b}"
            )
    return None


def _by_index(episodes: Sequence[EpisodeResult]) -> dict[int, EpisodeResult]:
    return {e.episode_index: e for e in episodes}


def _task_name(key: NamedTask) -> str:
    suite, task = key
    return task if suite == task else f"{suite} / {task}"


def _shared_tasks(run_a: RunResult, run_b: RunResult) -> list[tuple[TaskResult, TaskResult]]:
    """Tasks of both runs, in A's order."""
    tasks_b = {named_task(t): t for t in run_b.tasks}
    return [(task, tasks_b[named_task(task)]) for task in run_a.tasks if named_task(task) in tasks_b]


# -- paired ----------------------------------------------------------------------------------


def _paired_task(task_a: TaskResult, task_b: TaskResult) -> TaskComparison:
    """The task's 2x2 table of pairs, leaving out pairs with a harness failure on either side."""
    episodes_b = _by_index(task_b.episodes)
    cells = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    dropped = 0
    for episode_a in task_a.episodes:
        episode_b = episodes_b[episode_a.episode_index]
        if episode_a.failure_reason or episode_b.failure_reason:
            dropped += 1
            continue
        cells[(episode_a.success, episode_b.success)] += 1
    counts = PairedCounts(cells[True, True], cells[True, False], cells[False, True], cells[False, False])
    return _from_counts(task_a.group, task_a.task, counts, dropped)


def _from_counts(suite: str, task: str, counts: PairedCounts, dropped: int) -> TaskComparison:
    return TaskComparison(
        suite=suite,
        task=task,
        n_a=counts.n_pairs,
        successes_a=counts.both + counts.a_won,
        n_b=counts.n_pairs,
        successes_b=counts.both + counts.b_won,
        interval=paired_difference_interval(counts),
        counts=counts,
        p_value=mcnemar_exact_p_value(counts.a_won, counts.b_won),
        n_pairs_dropped=dropped,
    )


def _with_holm(tasks: Sequence[TaskComparison]) -> list[TaskComparison]:
    adjusted = holm_adjusted([task.p_value for task in tasks])
    return [replace(task, holm_p_value=p) for task, p in zip(tasks, adjusted, strict=True)]


def _pooled_paired(tasks: Sequence[TaskComparison]) -> TaskComparison:
    """All pairs of all tasks in one table; the p-value stratified by pair (hence by task)."""
    pooled = sum((task.counts for task in tasks), NO_PAIRS)
    overall = _from_counts("Overall", "Overall", pooled, sum(t.n_pairs_dropped for t in tasks))
    return replace(overall, p_value=stratified_paired_p_value([task.counts for task in tasks]))


# -- unpaired --------------------------------------------------------------------------------


def _unpaired_task(task_a: TaskResult, task_b: TaskResult) -> TaskComparison:
    """Each side's scored episodes as an independent sample (the task summaries' counts)."""
    return _unpaired(
        task_a.group,
        task_a.task,
        task_a.summary.n_episodes,
        task_a.summary.n_successes or 0,
        task_b.summary.n_episodes,
        task_b.summary.n_successes or 0,
    )


def _unpaired(
    suite: str, task: str, n_a: int, successes_a: int, n_b: int, successes_b: int
) -> TaskComparison:
    return TaskComparison(
        suite=suite,
        task=task,
        n_a=n_a,
        successes_a=successes_a,
        n_b=n_b,
        successes_b=successes_b,
        interval=unpaired_difference_interval(successes_a, n_a, successes_b, n_b),
    )


def _pooled_unpaired(tasks: Sequence[TaskComparison]) -> TaskComparison:
    return _unpaired(
        "Overall",
        "Overall",
        sum(t.n_a for t in tasks),
        sum(t.successes_a for t in tasks),
        sum(t.n_b for t in tasks),
        sum(t.successes_b for t in tasks),
    )


# -- the sentence ----------------------------------------------------------------------------


def _paired_sentence(comparison: RunComparison) -> str:
    a, b, overall = comparison.name_a, comparison.name_b, comparison.overall
    verdict = _verdict(a, b, overall.difference, overall.p_value is not None and overall.p_value < ALPHA)
    better, worse = len(comparison.tasks_where(True)), len(comparison.tasks_where(False))
    n_tasks = len(comparison.tasks)
    per_task = f"better on {better} of {n_tasks} task{'s' if n_tasks != 1 else ''}"
    per_task += f" and worse on {worse}" if worse else ""
    dropped = comparison.n_pairs_dropped
    left_out = (
        f"; {dropped} pair{'s' if dropped != 1 else ''} left out for harness failures" if dropped else ""
    )
    return (
        f"{verdict}: {per_task} (Holm-adjusted p < {ALPHA:g}); overall {_points(overall)}, "
        f"exact p = {fmt_p(overall.p_value)} (paired, {overall.n_a:,} episode pairs{left_out})."
    )


def _unpaired_sentence(comparison: RunComparison) -> str:
    a, b, overall = comparison.name_a, comparison.name_b, comparison.overall
    interval = overall.interval
    shown = interval is not None and (interval[0] > 0 or interval[1] < 0)
    verdict = _verdict(a, b, overall.difference, shown)
    n_tasks = len(comparison.tasks)
    return (
        f"{verdict}: overall {_points(overall)} ({comparison.unpaired_reason}; unpaired, {overall.n_a:,} "
        f"and {overall.n_b:,} episodes of {n_tasks} shared task{'s' if n_tasks != 1 else ''})."
    )


def _verdict(a: str, b: str, difference: float | None, significant: bool) -> str:
    if difference is None:
        return f"{b} and {a} share no episodes to compare"
    if not significant or difference == 0:
        return f"No difference between {b} and {a} is shown"
    return f"{b} is {'better' if difference > 0 else 'worse'} than {a}"


def _points(task: TaskComparison) -> str:
    """'+6.5 points, 95% CI 2.1 to 10.9'."""
    if task.difference is None:
        return "no episodes"
    text = f"{100 * task.difference:+.1f} points"
    if task.interval is not None:
        text += f", 95% CI {100 * task.interval[0]:.1f} to {100 * task.interval[1]:.1f}"
    return text


def fmt_p(p: float | None) -> str:
    """'0.031', '0.0004', '< 0.0001': p-values as tables print them."""
    if p is None:
        return "\u2013"
    if p < 1e-4:
        return "< 0.0001"
    if p < 0.01:
        return f"{p:.1g}"
    return f"{p:.3f}" if p < 1 else "1"
