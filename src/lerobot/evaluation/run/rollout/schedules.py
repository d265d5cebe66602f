"""How the groups of a batch's slots take their rounds: `run_episodes`, the one way in.

In lockstep (one group) every slot steps, then the policy computes for all. Row groups
(`--eval.row_groups`) take turns: while the policy computes one group's actions, the other
groups' slots step. Independent rows (`--eval.independent_rows`) go further: each worker's
slots are a group that gets its next actions as soon as it is back, batched in one model call
with every other group back by then. Every group is a `RolloutLoop` over its own slots and its
own rows of the one policy (`policies/row_groups.py`); what differs is only the order in which
their rounds are planned, sent and collected, so no episode's result depends on it.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import torch

from lerobot.configs.env import TaskSpec
from lerobot.envs.slots import SlotEnv, SlotGroup, SplitSlotEnv, task_of
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.rollout.actions import errors_by_group, stack_batches
from lerobot.evaluation.run.rollout.loop import RolloutLoop
from lerobot.evaluation.run.rollout.rounds import Round, Work, answer_or_error, resume_planning
from lerobot.evaluation.run.rollout.settings import RolloutHooks, RolloutSettings
from lerobot.policies.pretrained import RowPolicy
from lerobot.policies.row_groups import can_move_rows, select_action_of_groups, split_policy

logger = logging.getLogger(__name__)


def run_episodes(
    env: SlotEnv,
    policy: RowPolicy,
    episodes: Iterable[int],
    settings: RolloutSettings,
    task: TaskSpec | None = None,
    hooks: RolloutHooks | None = None,
) -> list[EpisodeResult]:
    """Run `episodes` (indices) of one task on `env`; results sorted by episode index.

    `task` names the task for the policy (its description) and the videos (folder, fps);
    default: the env's own (`task_of`).
    """
    task = task if task is not None else task_of(env)
    work = Work(deque(sorted(episodes)))
    hooks = hooks or RolloutHooks()
    if settings.independent_rows:
        groups = slot_groups(env, policy, env.num_envs, "--eval.independent_rows=true")
        groups = with_this_process_as_one(env, groups)
    else:
        groups = slot_groups(env, policy, settings.row_groups)
    if len(groups) < 2:
        return RolloutLoop(env, policy, work, settings, task, hooks).run()
    views = split_policy(policy, [len(group) for group in groups])
    loops = [
        RolloutLoop(SlotGroup(env, group), view, work, settings, task, hooks)
        for group, view in zip(groups, views, strict=True)
    ]
    if settings.independent_rows:
        return run_as_ready(env, loops, work)
    return run_in_turns(loops, work)


_TOLD_ONE_GROUP: set[str] = set()


def slot_groups(env: SlotEnv, policy: RowPolicy, wanted: int, flag: str | None = None) -> list[list[int]]:
    """The slots of each group that takes turns (one group: all of them, in lockstep).

    Groups are made of whole owners (a worker answers once for all its envs) and balanced by
    slot count; there are at most as many as owners. Envs whose slots do not step while this
    process computes (no worker processes) and policies that cannot keep rows aside
    (`save_rows`) run as one group.
    """
    if wanted < 2 or not isinstance(env, SplitSlotEnv) or not env.steps_in_background:
        return [list(range(env.num_envs))]  # nothing steps while this process computes
    if not can_move_rows(policy):
        if policy.name not in _TOLD_ONE_GROUP:  # once per run, not once per task
            _TOLD_ONE_GROUP.add(policy.name)
            flag = flag or f"--eval.row_groups={wanted}"
            logger.info("%s: policy %r cannot keep rows aside; one group", flag, policy.name)
        return [list(range(env.num_envs))]
    owners = env.slots_by_owner()
    groups: list[list[int]] = [[] for _ in range(min(wanted, len(owners)))]
    for owner in owners:
        min(groups, key=len).extend(owner)
    return [sorted(group) for group in groups]


def with_this_process_as_one(env: SlotEnv, groups: list[list[int]]) -> list[list[int]]:
    """`groups` (one per owner) with the slots this process steps as one group: they answer on
    send, so they are always back together, and one group plans them in one go."""
    in_process = env.in_process_slots if isinstance(env, SplitSlotEnv) else 0
    if len(groups) < 2 or in_process < 2:
        return groups
    return [list(range(in_process)), *(group for group in groups if group[0] >= in_process)]


def run_in_turns(loops: Sequence[RolloutLoop], work: Work) -> list[EpisodeResult]:
    """Step the groups in turns: each collects its slots' replies, then computes and sends its
    next actions while the other groups' slots step theirs."""
    in_flight: list[Round | None] = [None] * len(loops)
    try:
        with torch.inference_mode():
            while work.pending or any(loop.busy() for loop in loops) or any(in_flight):
                for index, loop in enumerate(loops):
                    loop.stop_if_asked()
                    sent, in_flight[index] = in_flight[index], None
                    if sent is not None:
                        loop.collect_round(sent)
                    planned = loop.plan_round()
                    if planned is not None:
                        in_flight[index] = loop.send_round(planned)
    finally:
        for loop, sent in zip(loops, in_flight, strict=True):
            if sent is not None:  # a failure elsewhere: leave no reply unread in a worker's pipe
                loop.split_env().gather_step_and_reset(sent.slot_round)
    return work.sorted_results()


def run_as_ready(env: SplitSlotEnv, loops: Sequence[RolloutLoop], work: Work) -> list[EpisodeResult]:
    """Rows advance independently: each group (one worker's slots) gets its next actions as
    soon as its replies are back, in one model call with every other group back by then, while
    the groups still out keep stepping. A slow env, a long reset or a render holds up its own
    worker's rows only. Once a group is back, the others are waited for as long as serving the
    last ones took (planning and the model's call): a call whose cost hardly depends on its
    rows (a GPU's) would cost as much again for each group that missed it by a moment."""
    in_flight: dict[int, Round] = {}
    ready = list(range(len(loops)))
    slot_ids = [loop.env.slot_ids for loop in loops]  # every loop's env is a SlotGroup of `env`
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
                    zip(ready, planned, strict=True),
                    key=lambda pair: slot_ids[pair[0]][0] < env.in_process_slots,
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
                    [slot_ids[index] for index in out], block=not idle, gather_s=serving_s
                )
                ready = sorted([out[k] for k in answered] + idle)
    finally:
        for index, sent in in_flight.items():  # a failure elsewhere: leave no reply unread
            loops[index].split_env().gather_step_and_reset(sent.slot_round)
    return work.sorted_results()


def plan_together(loops: Sequence[RolloutLoop]) -> list[Round | None]:
    """The next round of each loop, the rows of those that need the model computed in one call."""
    plannings = [loop.planning() for loop in loops]
    rounds: list[Round | None] = [None] * len(loops)
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


def compute_together(loops: Sequence[RolloutLoop], batches: Sequence[dict[str, Any]]) -> list[Any]:
    """Each loop's model output for its batch (or the HarnessError or PolicyError of its rows):
    one call over all of them where their batches stack, else one call each."""
    merged = stack_batches(batches) if len(batches) > 1 else None
    if merged is None:
        return [
            answer_or_error(loop.calls.compute, batch) for loop, batch in zip(loops, batches, strict=True)
        ]

    def select_action(batch: dict[str, Any]) -> Any:
        return select_action_of_groups([loop.policy for loop in loops], batch)

    answer = answer_or_error(lambda batch: loops[0].calls.compute(batch, select_action), merged)
    if isinstance(answer, BaseException):
        return errors_by_group(answer, [loop.env.num_envs for loop in loops])
    return answer
