"""Success against training step, from the evaluations a training run made as it went.

A training run evaluates its policy every --eval_freq steps on the same seeds. Read alone,
each evaluation's rate is noisy; read next to the previous one, the same seeds let us pair
episodes: an episode that succeeded before and fails now (or the other way round) is evidence
of change, one that did the same both times is not. So each evaluation is compared with the
previous one by its discordant counts, not only by the two rates. No torch, no simulator.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lerobot.evaluation.results.episodes import EpisodeResult, scored
from lerobot.evaluation.results.run import RunResult

EpisodeKey = tuple[str, str, int | None]
"""(suite, task, seed): the same episode in two evaluations of one training run."""


@dataclass(frozen=True)
class StepEvaluation:
    """The in-loop evaluation made at one training step."""

    step: int
    run: RunResult

    @property
    def pc_success(self) -> float | None:
        return self.run.overall.pc_success

    @property
    def pc_success_ci95(self) -> Sequence[float] | None:
        return self.run.overall.pc_success_ci95


@dataclass(frozen=True)
class PairedChange:
    """One evaluation against the previous one, over the episodes both scored (same seeds)."""

    n_pairs: int
    only_before: int
    """Episodes that succeeded at the earlier step and failed at the later one."""
    only_after: int
    """Episodes that failed at the earlier step and succeeded at the later one."""
    pc_interval: tuple[float, float] | None = None
    """95% interval of the paired difference, in points; None until the paired statistics
    are available (see `paired_statistics`)."""
    p_value: float | None = None
    """Exact McNemar p of the discordant counts; None as `pc_interval`."""

    @property
    def pc_difference(self) -> float | None:
        """Later minus earlier success rate over the paired episodes, in points."""
        if not self.n_pairs:
            return None
        return 100.0 * (self.only_after - self.only_before) / self.n_pairs


@dataclass(frozen=True)
class TrainingCurve:
    """A training run's evaluations in step order, the best one, and each one's change."""

    evaluations: tuple[StepEvaluation, ...]
    changes: tuple[PairedChange | None, ...]
    """One per evaluation: against the previous one (None for the first)."""

    @property
    def best(self) -> StepEvaluation | None:
        """The evaluation with the highest success rate; the earliest of equal ones (the
        checkpoint that reached it with the least training)."""
        rated = [e for e in self.evaluations if e.pc_success is not None]
        return max(rated, key=lambda e: (e.pc_success, -e.step)) if rated else None


def training_curve(evaluations: Iterable[StepEvaluation]) -> TrainingCurve:
    """The curve of these evaluations, sorted by step, each paired with the one before it."""
    ordered = tuple(sorted(evaluations, key=lambda e: e.step))
    changes = [None] + [paired_change(a.run, b.run) for a, b in zip(ordered, ordered[1:], strict=False)]
    return TrainingCurve(ordered, tuple(changes))


def paired_change(before: RunResult, after: RunResult) -> PairedChange:
    """The discordant counts of two runs over the episodes both scored, matched by seed."""
    earlier, later = _by_episode(before), _by_episode(after)
    pairs = [(earlier[k].success, later[k].success) for k in earlier.keys() & later.keys()]
    only_before = sum(1 for a, b in pairs if a and not b)
    only_after = sum(1 for a, b in pairs if b and not a)
    interval, p_value = paired_statistics(only_before, only_after, len(pairs))
    return PairedChange(len(pairs), only_before, only_after, interval, p_value)


def paired_statistics(
    only_before: int, only_after: int, n_pairs: int
) -> tuple[tuple[float, float] | None, float | None]:
    """HOOK for the paired statistics (issue 55): (95% interval of the paired difference in
    points, exact McNemar p) from the discordant counts. Returns (None, None) until the
    paired-statistics functions land; the pages then show the counts and a dash."""
    return None, None


def _by_episode(run: RunResult) -> dict[EpisodeKey, EpisodeResult]:
    return {(task.group, task.task, e.seed): e for task in run.tasks for e in scored(task.episodes)}
