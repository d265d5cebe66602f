"""Rows that advance independently (`--eval.independent_rows`): each worker's envs get their
next actions as soon as they are back, batched with whichever other workers are back by then.

It must never change an episode (the same actions, ends and scores as lockstep, whatever the
layout, chunks, a NaN inside a chunk, a dying worker or a policy error of one row of a shared
call), it must batch the workers that are back together, and a slow env must hold up only its
own worker. ACT on Meta-World, against lockstep, is in test_row_groups.py.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time

import pytest
import torch

from lerobot.configs.eval import EvalConfig
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes, schedules
from lerobot.evaluation.run.rollout.actions import errors_by_group, stack_batches
from lerobot.utils.errors import ConfigError, HarnessError, PolicyError
from tests.evaluation.run.rollout.test_chunks_in_workers import ActionRewardEnv
from tests.evaluation.run.rollout.test_row_groups import MovableQueueingPolicy, workers_env


def run(env, episodes, independent, policy=None, hooks=None, **settings):
    """Results without wall time; `env` is closed."""
    settings = RolloutSettings(start_seed=0, independent_rows=independent, **settings)
    try:
        results = run_episodes(env, policy or MovableQueueingPolicy(), episodes, settings, hooks=hooks)
    finally:
        env.close()
    return [dataclasses.replace(r, wall_s=0.0) for r in results]


class SlowSeedEnv(ActionRewardEnv):
    """ActionRewardEnv whose episode of seed `slow_seed` does not step until the file `go`
    exists (its worker is held up for as long as the test says, however loaded the machine);
    after `limit_s` it steps anyway, so a scheduler that waits for it still finishes."""

    def __init__(self, slow_seed: int = 0, go: str = "", limit_s: float = 120.0, **kwargs):
        super().__init__(**kwargs)
        self.slow_seed, self.go, self.limit_s = slow_seed, go, limit_s

    def step(self, action):
        if self.seed_ == self.slow_seed and self.go:
            deadline = time.monotonic() + self.limit_s
            while not os.path.exists(self.go) and time.monotonic() < deadline:
                time.sleep(0.01)
        return super().step(action)


class CountingPolicy(MovableQueueingPolicy):
    """Records the rows of every model call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.call_rows: list[int] = []

    def select_action(self, batch):
        self.call_rows.append(len(batch["observation.state"]))
        return super().select_action(batch)


class FailingRow(MovableQueueingPolicy):
    """Raises `error` (rows: the batch rows of seed `seed`) at the first call whose batch holds
    that seed's episode at step `step` or later."""

    def __init__(self, error_type: type[Exception], seed: int, step: int):
        super().__init__()
        self.error_type, self.seed, self.step = error_type, seed, step
        self.raised_in: int | None = None
        """The rows of the call that raised."""

    def select_action(self, batch):
        states = batch["observation.state"]
        rows = [
            row
            for row in range(len(states))
            if self.seeds.get(row) == self.seed and int(states[row, 1]) >= self.step
        ]
        if rows and self.raised_in is None:
            self.raised_in = len(states)
            raise self.error_type("the policy failed on this row", rows=rows)
        return super().select_action(batch)


@pytest.mark.slow
@pytest.mark.parametrize(
    "layout",
    [{}, {"envs_per_worker": 2, "in_process": 1}],
    ids=["a worker each", "mixed"],
)
@pytest.mark.parametrize("chunks", [True, False], ids=["chunks", "steps"])
def test_independent_rows_give_the_results_of_lockstep(layout, chunks):
    """Episodes of 3-11 steps end inside chunks and at different times on each worker."""
    reference = run(workers_env(4, **layout), range(10), False, chunks_in_workers=chunks)
    assert run(workers_env(4, **layout), range(10), True, chunks_in_workers=chunks) == reference


@pytest.mark.slow
def test_workers_that_are_back_together_share_one_model_call():
    """Slots 0 and 1 live in this process and answer on send: they are always back at the same
    time, so the model never computes one of them alone (each call has 1 row per group)."""
    policy = CountingPolicy()
    run(workers_env(3, in_process=2), range(6), True, policy=policy, chunks_in_workers=False)
    assert policy.call_rows and max(policy.call_rows) >= 2
    assert sum(rows == 1 for rows in policy.call_rows) < len(policy.call_rows)


@pytest.mark.slow
def test_a_slow_env_holds_up_only_its_own_worker(tmp_path):
    """Seed 0's episode (the shortest) cannot step until the 5 others have ended: with rows
    advancing independently the other workers run them meanwhile, and episode 0 ends last. In
    lockstep, where every round waits for its worker, it ends first (no wait there: the hold
    would only stall the run until its time limit)."""
    go = tmp_path / "go"
    ended: list[int] = []

    def on_episode_end(result):
        ended.append(result.episode_index)
        if len(ended) == 5 and 0 not in ended:
            go.touch()

    hooks = RolloutHooks(on_episode_end=on_episode_end)
    reference = run(
        workers_env(3, env_class=SlowSeedEnv), range(6), False, hooks=hooks, chunks_in_workers=False
    )
    assert ended[0] == 0
    ended.clear()
    held = workers_env(3, env_class=SlowSeedEnv, slow_seed=0, go=str(go))
    assert run(held, range(6), True, hooks=hooks, chunks_in_workers=False) == reference
    assert ended[-1] == 0


@pytest.mark.slow
@pytest.mark.parametrize("error_type", [PolicyError, HarnessError])
def test_a_failure_of_one_row_of_a_shared_call_reaches_that_row_only(error_type):
    """Seed 3's row fails in a call shared with other workers' rows: a PolicyError ends its
    episode (scored), a HarnessError re-runs it; every other episode is as in lockstep."""
    reference = run(workers_env(3, in_process=2), range(6), False, policy=FailingRow(error_type, 3, 2))
    policy = FailingRow(error_type, 3, 2)
    results = run(workers_env(3, in_process=2), range(6), True, policy=policy)
    assert results == reference
    assert policy.raised_in > 1  # slot 0 (in this process) ran seed 3, beside slot 1
    if error_type is PolicyError:
        assert results[3].failure_reason == "the policy failed on this row" and results[3].n_steps == 4
    else:
        assert [r.retries for r in results] == [0, 0, 0, 1, 0, 0]


def test_batches_stack_one_after_the_other_and_only_when_they_can():
    first = {"observation.state": torch.zeros(2, 3), "task": ["a", "b"]}
    second = {"observation.state": torch.ones(1, 3), "task": ["c"]}
    stacked = stack_batches([first, second])
    assert stacked["task"] == ["a", "b", "c"]
    assert stacked["observation.state"].tolist() == [[0, 0, 0], [0, 0, 0], [1, 1, 1]]
    assert stack_batches([first, {"observation.state": torch.ones(1, 4), "task": ["c"]}]) is None
    assert stack_batches([first, {"observation.state": torch.ones(1, 3)}]) is None


def test_a_failure_of_a_shared_call_is_told_to_each_group_in_its_own_rows():
    errors = errors_by_group(PolicyError("bad", rows=[1, 3]), [2, 1, 2])
    assert [e.rows for e in errors] == [(1,), (), (0,)]
    assert all(type(e) is PolicyError and str(e) == "bad" for e in errors)
    assert [e.rows for e in errors_by_group(HarnessError("lost"), [2, 1])] == [None, None]


def test_a_policy_that_cannot_keep_rows_aside_advances_in_lockstep_and_says_so(caplog, monkeypatch):
    from tests.evaluation.run.rollout.test_chunks_in_workers import QueueingPolicy

    monkeypatch.setattr(schedules, "_TOLD_ONE_GROUP", set())
    with caplog.at_level(logging.INFO):
        reference = run(workers_env(3), range(5), False, policy=QueueingPolicy())
        assert run(workers_env(3), range(5), True, policy=QueueingPolicy()) == reference
    assert "--eval.independent_rows=true: policy 'queueing' cannot keep rows aside; one group" in caplog.text


def test_independent_rows_with_row_groups_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"--eval.row_groups=2: --eval.independent_rows=true"):
        EvalConfig(independent_rows=True, row_groups=2)
