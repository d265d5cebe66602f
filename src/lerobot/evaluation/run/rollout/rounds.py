"""A round: what one group of slots does between two gathers of its replies.

Running slots step (one action each, or the rest of an action chunk) while free slots reset
for their next episodes, all sent together. A round is planned by a generator (`Planning`)
that yields the batch the policy must compute, when it needs one, and is sent the policy's
output: so a schedule can compute the rows of several groups' rounds in one model call.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lerobot.envs.commands import ChunkResult, StepResult
from lerobot.envs.slots import SlotRound
from lerobot.evaluation.results import EpisodeResult
from lerobot.utils.errors import HarnessError, PolicyError

Planning = Generator[dict[str, Any], Any, "Round | None"]
"""A round being planned (`RolloutLoop.planning`): yields the batch the model must compute,
is sent the model's output or thrown the HarnessError or PolicyError it raised, and returns
the round (None: nothing to send)."""


@dataclass
class Work:
    """What every group of slots of a task draws its episodes from and reports to."""

    pending: deque[int]
    retries: dict[int, int] = field(default_factory=dict)
    results: list[EpisodeResult] = field(default_factory=list)

    def sorted_results(self) -> list[EpisodeResult]:
        return sorted(self.results, key=lambda r: r.episode_index)


@dataclass(frozen=True)
class Round:
    """One round of a slot group: the slots that step (with their action, or rest of chunk)
    and those that reset for their next episodes."""

    active: list[int]
    actions: Any
    chunked: bool
    starting: list[int]
    episodes: list[int]
    seeds: list[int]
    recorded: list[int]
    blind: list[int]

    @functools.cached_property
    def slot_round(self) -> SlotRound:
        """What the slot env is asked to do for this round (built once: it is sent, then
        gathered).

        The episode index travels with the reset: benchmarks with fixed initial states
        (recorded init states) pick them by episode, never by slot or reset count.
        """
        return SlotRound(
            step_ids=self.active,
            actions=[self.actions[i] for i in self.active],
            reset_ids=self.starting,
            seeds=self.seeds,
            options=[{"episode_index": e} for e in self.episodes],
            render_ids=self.recorded,
            blind_ids=self.blind,
        )

    def steps_advanced(self) -> int:
        """How far the round moved the loop's step count: a chunk's longest rest, else one."""
        if not self.active:
            return 0
        return max(len(self.actions[i]) for i in self.active) if self.chunked else 1


def answer_planning(planning: Planning, compute: Callable[[dict[str, Any]], Any]) -> Round | None:
    """Run a planning to its end, computing the batch it asks for (at most one) with `compute`."""
    try:
        batch = next(planning)
    except StopIteration as stop:
        return stop.value
    return resume_planning(planning, answer_or_error(compute, batch))


def resume_planning(planning: Planning, answer: Any) -> Round | None:
    """Give a planning the model's output (or throw it the error) and return what it planned."""
    try:
        if isinstance(answer, BaseException):
            planning.throw(answer)
        else:
            planning.send(answer)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("a round's planning asked the policy twice")


def answer_or_error(compute: Callable[[dict[str, Any]], Any], batch: dict[str, Any]) -> Any:
    """`compute(batch)`, or the HarnessError or PolicyError it raised: what a planning is given."""
    try:
        return compute(batch)
    except (HarnessError, PolicyError) as exc:
        return exc


def env_steps_taken(outcomes: Sequence[Any]) -> int:
    """The env steps a round's outcomes took: one per step, a chunk's own count, none for a failure."""
    return sum(
        len(outcome.steps) if isinstance(outcome, ChunkResult) else isinstance(outcome, StepResult)
        for outcome in outcomes
    )
