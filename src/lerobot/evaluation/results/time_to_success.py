"""How fast a run's episodes succeed: the fraction of scored episodes that succeeded by step t.

A success rate says how often a policy succeeds, not how fast: a policy that succeeds as often
as another but in half the steps has the same rate. The curve below tells them apart, and it
is read off the episodes alone (each records the step it first succeeded at), so a report
rebuilt from eval_info.json draws the same curve. No torch, no simulator.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from lerobot.evaluation.results.episodes import EpisodeResult, scored


@dataclass(frozen=True)
class SuccessCurve:
    """The fraction of a run's scored episodes that had succeeded by each step.

    The curve is a step function: it rises by 1/n_episodes at each entry of `success_steps`
    and ends at the success rate, at `last_step`.
    """

    n_episodes: int
    """Scored episodes: the curve's denominator."""
    success_steps: tuple[int, ...]
    """The step each successful episode first succeeded at, sorted."""
    last_step: int
    """The longest episode's length, where the curve ends."""

    def fraction_by(self, step: int) -> float:
        """The fraction of episodes that had succeeded at or before `step`."""
        return sum(1 for s in self.success_steps if s <= step) / self.n_episodes

    def points(self) -> list[tuple[int, float]]:
        """(step, fraction) at 0, at each step where the curve rises, and at its end."""
        found = [(0, 0.0)]
        for step in sorted(set(self.success_steps)):
            found.append((step, self.fraction_by(step)))
        if found[-1][0] < self.last_step:
            found.append((self.last_step, found[-1][1]))
        return found

    @property
    def median_success_step(self) -> float | None:
        """The median step at which the successful episodes succeeded; None without any."""
        return statistics.median(self.success_steps) if self.success_steps else None

    @property
    def step_to_half(self) -> int | None:
        """The first step by which half of all episodes had succeeded; None if they never did."""
        for step, fraction in self.points():
            if fraction >= 0.5:
                return step
        return None


def success_curve(episodes: Iterable[EpisodeResult]) -> SuccessCurve | None:
    """The time-to-success curve of these episodes (those the harness failed are left out).

    None when no episode is scored, or when a successful episode does not say when it
    succeeded (results written before `success_step` was recorded): a curve missing some
    successes would understate the policy, so none is drawn.
    """
    counted = scored(episodes)
    successes = [e for e in counted if e.success]
    if not counted or any(e.success_step is None for e in successes):
        return None
    return SuccessCurve(
        n_episodes=len(counted),
        success_steps=tuple(sorted(e.success_step for e in successes)),
        last_step=max([e.n_steps or 0 for e in counted] + [e.success_step for e in successes]),
    )
