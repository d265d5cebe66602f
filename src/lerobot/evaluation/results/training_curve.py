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

from lerobot.evaluation.paired_statistics import (
    PairedCounts,
    mcnemar_exact_p_value,
    paired_difference_interval,
)
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
    """95% interval of the paired difference, in points (Newcombe's paired square-and-add);
    None without pairs."""
    p_value: float | None = None
    """Exact McNemar p of the discordant counts; None without pairs."""

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
    """The discordant counts of two runs over the episodes both scored, matched by seed, with
    the paired interval of the difference (Newcombe) and the exact McNemar p."""
    earlier, later = _by_episode(before), _by_episode(after)
    pairs = [(earlier[k].success, later[k].success) for k in earlier.keys() & later.keys()]
    counts = PairedCounts(
        both=sum(1 for a, b in pairs if a and b),
        a_won=sum(1 for a, b in pairs if a and not b),
        b_won=sum(1 for a, b in pairs if b and not a),
        neither=sum(1 for a, b in pairs if not a and not b),
    )
    interval = paired_difference_interval(counts)
    return PairedChange(
        n_pairs=counts.n_pairs,
        only_before=counts.a_won,
        only_after=counts.b_won,
        pc_interval=None if interval is None else (100.0 * interval[0], 100.0 * interval[1]),
        p_value=mcnemar_exact_p_value(counts.a_won, counts.b_won) if counts.n_pairs else None,
    )


def _by_episode(run: RunResult) -> dict[EpisodeKey, EpisodeResult]:
    return {(task.group, task.task, e.seed): e for task in run.tasks for e in scored(task.episodes)}
