"""How the groups of a batch's slots take their rounds, when there are several groups.

In lockstep (one group) every slot steps, then the policy computes for all. Row groups
(`--eval.row_groups`) take turns: while the policy computes one group's actions, the other
groups' workers step. Independent rows (`--eval.independent_rows`) go further: each worker's
slots are a group that gets its next actions as soon as it is back, batched in one model call
with every other group back by then. Every group is a `_RolloutLoop` over its own slots and
its own rows of the one policy (`policies/row_groups.py`); what differs is only the order in
which their rounds are planned, sent and collected, so no episode's result depends on it.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

import torch

from lerobot.envs.vector import LazyVectorEnv, SlotEnv
from lerobot.policies.pretrained import RowPolicy
from lerobot.policies.row_groups import can_move_rows, select_action_of_groups
from lerobot.utils.errors import HarnessError, PolicyError

if TYPE_CHECKING:
    from lerobot.evaluation.results import EpisodeResult
    from lerobot.evaluation.run.rollout import RolloutHooks, _RolloutLoop, _Round, _Work

logger = logging.getLogger(__name__)

Planning = Generator[dict[str, Any], Any, Any]
"""A round being planned (`_RolloutLoop.planning`): yields the batch the model must compute,
is sent the model's output or thrown the HarnessError or PolicyError it raised."""


def answer_planning(planning: Planning, compute: Callable[[dict[str, Any]], Any]) -> Any:
    """Run a planning to its end, computing the batch it asks for (at most one) with `compute`."""
    try:
        batch = next(planning)
    except StopIteration as stop:
        return stop.value
    return resume_planning(planning, answer_or_error(compute, batch))


def resume_planning(planning: Planning, answer: Any) -> Any:
    """Give a planning the model's output (or throw it the error) and return what it planned."""
    try:
        if isinstance(answer, BaseException):
            planning.throw(answer)
        else:
            planning.send(answer)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("a round's planning asked the policy twice")


_TOLD_ONE_GROUP: set[str] = set()


def slot_groups(env: SlotEnv, policy: RowPolicy, wanted: int, flag: str | None = None) -> list[list[int]]:
    """The slots of each group that takes turns (one group: all of them, in lockstep).

    Groups are made of whole workers (a worker answers once for all its envs) and balanced by
    slot count; there are at most as many as workers. Envs without worker processes (nothing
    would step while the policy computes) and policies that cannot keep rows aside
    (`save_rows`) run as one group.
    """
    if wanted < 2 or not isinstance(env, LazyVectorEnv) or not env.use_async:
        return [list(range(env.num_envs))]  # nothing steps while this process computes
    if not can_move_rows(policy):
        if policy.name not in _TOLD_ONE_GROUP:  # once per run, not once per task
            _TOLD_ONE_GROUP.add(policy.name)
            flag = flag or f"--eval.row_groups={wanted}"
            logger.info("%s: policy %r cannot keep rows aside; one group", flag, policy.name)
        return [list(range(env.num_envs))]
    units = env.slots_by_owner()
    groups: list[list[int]] = [[] for _ in range(min(wanted, len(units)))]
    for unit in units:
        min(groups, key=len).extend(unit)
    return [sorted(group) for group in groups]


def with_this_process_as_one(env: SlotEnv, groups: list[list[int]]) -> list[list[int]]:
    """`groups` (one per worker) with the slots this process steps as one group: they answer
    on send, so they are always back together, and one group plans them in one go."""
    in_process = getattr(env, "in_process_slots", 0)
    if len(groups) < 2 or in_process < 2:
        return groups
    return [list(range(in_process)), *(group for group in groups if group[0] >= in_process)]


def run_in_turns(loops: Sequence[_RolloutLoop], work: _Work, hooks: RolloutHooks) -> list[EpisodeResult]:
    """Step the groups in turns: each collects its envs' replies, then computes and sends its
    next actions while the other groups' workers step theirs."""
    in_flight: list[_Round | None] = [None] * len(loops)
    try:
        with torch.inference_mode():
            while work.pending or any(loop.busy() for loop in loops) or any(in_flight):
                for index, loop in enumerate(loops):
                    loop.stop_if_asked()
                    sent, in_flight[index] = in_flight[index], None
                    if sent is not None:
                        loop.collect_round(sent)
                    in_flight[index] = loop.send_round(loop.plan_round())
    finally:
        for loop, sent in zip(loops, in_flight, strict=True):
            if sent is not None:  # a failure elsewhere: leave no reply unread in a worker's pipe
                loop.env.gather_step_and_reset(sent.active, sent.starting)
    return sorted(work.results, key=lambda r: r.episode_index)


def run_as_ready(env: LazyVectorEnv, loops: Sequence[_RolloutLoop], work: _Work) -> list[EpisodeResult]:
    """Rows advance independently: each group (one worker's slots) gets its next actions as
    soon as its replies are back, in one model call with every other group back by then, while
    the groups still out keep stepping. A slow env, a long reset or a render holds up its own
    worker's rows only. Once a group is back, the others are waited for as long as serving the
    last ones took (planning and the model's call): a call whose cost hardly depends on its
    rows (a GPU's) would cost as much again for each group that missed it by a moment."""
    in_flight: dict[int, _Round] = {}
    ready = list(range(len(loops)))
    serving_s = 0.0
    try:
        with torch.inference_mode():
            while True:
                loops[0].stop_if_asked()
                for index in ready:
                    if index in in_flight:
                        loops[index].collect_round(in_flight.pop(index))
                started = time.perf_counter()
                planned = plan_together([loops[index] for index in ready])
                serving_s = time.perf_counter() - started
                # Workers first: a slot of this process steps on send, and they work meanwhile.
                for index, round_ in sorted(
                    zip(ready, planned, strict=True), key=in_process_last(env, loops)
                ):
                    if round_ is not None:
                        in_flight[index] = loops[index].send_round(round_)
                idle = [
                    index
                    for index, loop in enumerate(loops)
                    if index not in in_flight and (work.pending or loop.busy())
                ]
                if not in_flight and not idle:
                    break
                out = sorted(in_flight)
                answered = env.answered(
                    [loops[index].env.slot_ids for index in out], block=not idle, gather_s=serving_s
                )
                ready = sorted([out[k] for k in answered] + idle)
    finally:
        for index, sent in in_flight.items():  # a failure elsewhere: leave no reply unread
            loops[index].env.gather_step_and_reset(sent.active, sent.starting)
    return sorted(work.results, key=lambda r: r.episode_index)


def in_process_last(env: LazyVectorEnv, loops: Sequence[_RolloutLoop]) -> Callable[[tuple[int, Any]], bool]:
    """Sort key of (loop index, round) pairs: the loops whose slots live in this process last."""
    return lambda pair: loops[pair[0]].env.slot_ids[0] < env.in_process_slots


def plan_together(loops: Sequence[_RolloutLoop]) -> list[_Round | None]:
    """The next round of each loop, the rows of those that need the model computed in one call."""
    plannings = [loop.planning() for loop in loops]
    rounds: list[_Round | None] = [None] * len(loops)
    asking: list[tuple[int, dict[str, Any]]] = []
    for index, planning in enumerate(plannings):
        try:
            asking.append((index, next(planning)))
        except StopIteration as stop:
            rounds[index] = stop.value
    if asking:
        answers = compute_together([loops[index] for index, _ in asking], [batch for _, batch in asking])
        for (index, _), answer in zip(asking, answers, strict=True):
            rounds[index] = resume_planning(plannings[index], answer)
    return rounds


def compute_together(loops: Sequence[_RolloutLoop], batches: Sequence[dict[str, Any]]) -> list[Any]:
    """Each loop's model output for its batch (or the HarnessError or PolicyError of its rows):
    one call over all of them where their batches stack, else one call each."""
    merged = stack_batches(batches) if len(batches) > 1 else None
    if merged is None:
        return [
            answer_or_error(loop.compute_actions, batch) for loop, batch in zip(loops, batches, strict=True)
        ]

    def select_action(batch: dict[str, Any]) -> list[torch.Tensor]:
        return select_action_of_groups([loop.policy for loop in loops], batch)

    answer = answer_or_error(lambda batch: loops[0].compute_actions(batch, select_action), merged)
    if isinstance(answer, BaseException):
        return errors_by_group(answer, [loop.env.num_envs for loop in loops])
    return answer


def answer_or_error(compute: Callable[[dict[str, Any]], Any], batch: dict[str, Any]) -> Any:
    """`compute(batch)`, or the HarnessError or PolicyError it raised: what a planning is given."""
    try:
        return compute(batch)
    except (HarnessError, PolicyError) as exc:
        return exc


def errors_by_group(error: HarnessError | PolicyError, sizes: Sequence[int]) -> list[Exception]:
    """A failure of the stacked call as each group sees it: the failed rows that are its own,
    numbered within the group (None, every row, stays so)."""
    errors = []
    start = 0
    for size in sizes:
        own = copy.copy(error)
        if error.rows is not None:
            own.rows = tuple(row - start for row in error.rows if start <= row < start + size)
        errors.append(own)
        start += size
    return errors


def stack_batches(batches: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The batches' rows one batch after the other; None where they do not stack (different
    keys, or tensors of different shapes past the rows)."""
    keys = batches[0].keys()
    if any(batch.keys() != keys for batch in batches):
        return None
    stacked: dict[str, Any] = {}
    for key in keys:
        values = [batch[key] for batch in batches]
        if all(isinstance(v, torch.Tensor) for v in values):
            first = values[0]
            if first.ndim == 0 or any(
                v.shape[1:] != first.shape[1:] or v.dtype != first.dtype or v.device != first.device
                for v in values
            ):
                return None
            stacked[key] = torch.cat(values)
        elif all(isinstance(v, list) for v in values):
            stacked[key] = [item for v in values for item in v]
        else:
            return None
    return stacked
