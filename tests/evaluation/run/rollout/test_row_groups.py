"""The batch split into groups that take turns (`--eval.row_groups`): while the policy computes
one group's actions, the other groups' workers step.

Taking turns must never change an episode: the same actions, ends and scores as lockstep,
whatever the grouping, chunks, a NaN inside a chunk or a worker dying. And it must overlap:
the policy runs while another group's commands are out with its workers. The real-simulator
case (ACT on Meta-World) also runs with rows advancing independently (test_independent_rows.py).
"""

from __future__ import annotations

import dataclasses
import functools
import logging

import pytest

from lerobot.envs.factory import make_task_env
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes, schedules
from lerobot.evaluation.run.rollout.schedules import slot_groups
from tests.evaluation.run.rollout.test_chunks_in_workers import QueueingPolicy, vec
from tests.policies.checkpoints import ENV_FLAGS, load, materialize


class MovableQueueingPolicy(QueueingPolicy):
    """QueueingPolicy whose rows (queue and seed) can be kept aside, as every policy here can."""

    name = "movable_queueing"

    def save_rows(self, rows):
        return list(zip(self.queue.save(rows), [self.seeds.get(row) for row in rows], strict=True))

    def restore_rows(self, states):
        states = [state if state is not None else (None, None) for state in states]
        self.queue.restore([queued for queued, _ in states])
        self.seeds = {row: seed for row, (_, seed) in enumerate(states) if seed is not None}


def workers_env(n_envs: int, envs_per_worker: int = 1, in_process: int = 0, **env_kwargs) -> LazyVectorEnv:
    return vec(n_envs, use_async=True, envs_per_worker=envs_per_worker, in_process=in_process, **env_kwargs)


def run(env, episodes, row_groups, policy=None, **settings):
    """Results without wall time; `env` is closed."""
    settings = RolloutSettings(start_seed=0, row_groups=row_groups, **settings)
    try:
        results = run_episodes(env, policy or MovableQueueingPolicy(), episodes, settings)
    finally:
        env.close()
    return [dataclasses.replace(r, wall_s=0.0) for r in results]


def test_groups_are_whole_workers_balanced_and_no_more_than_asked():
    policy = MovableQueueingPolicy()
    assert slot_groups(workers_env(5), policy, 2) == [[0, 2, 4], [1, 3]]
    assert slot_groups(workers_env(5, envs_per_worker=2), policy, 3) == [[0, 1], [2, 3], [4]]
    assert slot_groups(workers_env(4, envs_per_worker=2), policy, 8) == [[0, 1], [2, 3]]
    assert slot_groups(workers_env(3, in_process=1), policy, 3) == [[0], [1], [2]]
    assert slot_groups(workers_env(3), policy, 1) == [[0, 1, 2]]


def test_a_policy_that_cannot_keep_rows_aside_runs_in_lockstep_and_says_so_once(caplog, monkeypatch):
    monkeypatch.setattr(schedules, "_TOLD_ONE_GROUP", set())
    with caplog.at_level(logging.INFO):
        assert slot_groups(workers_env(3), QueueingPolicy(), 2) == [[0, 1, 2]]
        assert slot_groups(workers_env(3), QueueingPolicy(), 2) == [[0, 1, 2]]  # the next task
    told = "--eval.row_groups=2: policy 'queueing' cannot keep rows aside; one group"
    assert caplog.text.count(told) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "layout",
    [{"row_groups": 2}, {"row_groups": 3}, {"row_groups": 2, "envs_per_worker": 2, "in_process": 1}],
    ids=["2 groups", "3 groups", "mixed"],
)
@pytest.mark.parametrize("chunks", [True, False], ids=["chunks", "steps"])
def test_groups_taking_turns_give_the_results_of_lockstep(layout, chunks):
    """Episodes of 3-11 steps end inside chunks and at different rounds in each group."""
    layout = dict(layout)
    row_groups = layout.pop("row_groups")
    reference = run(workers_env(4, **layout), range(10), 1, chunks_in_workers=chunks)
    assert run(workers_env(4, **layout), range(10), row_groups, chunks_in_workers=chunks) == reference


@pytest.mark.slow
def test_the_policy_computes_one_group_while_the_others_step():
    """The policy's calls find another group's commands out with its workers (sent, not yet
    gathered), but at the very end, when the other group has no episode left."""
    env = workers_env(4)
    out: set[int] = set()
    events: list[bool] = []
    send, gather = env.send_step_and_reset_at, env.gather_step_and_reset

    def sending(round_):
        out.update(round_.slots)
        return send(round_)

    def gathering(round_):
        out.difference_update(round_.slots)
        return gather(round_)

    class Watching(MovableQueueingPolicy):
        def select_action(self, batch):
            events.append(bool(out))
            return super().select_action(batch)

    env.send_step_and_reset_at, env.gather_step_and_reset = sending, gathering
    run(env, range(8), 2, policy=Watching())
    # Only the last calls, once the other group has run out of episodes, compute alone.
    assert len(events) > 8 and all(events[:-2])


@pytest.mark.slow
def test_a_nan_inside_a_chunk_and_a_dying_worker_end_as_in_lockstep(tmp_path):
    """Seed 5's action at step 6 is NaN (its episode ends there, the policy's); seed 3's
    worker exits inside a chunk (its episode runs again from the start)."""
    policy = functools.partial(MovableQueueingPolicy, nan_at=(5, 6))
    reference = run(workers_env(4), range(8), 1, policy=policy())
    env = workers_env(4, die_at=(3, 2, str(tmp_path / "died")))
    results = run(env, range(8), 2, policy=policy())
    assert (tmp_path / "died").exists()
    assert [r.retries for r in results] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert [dataclasses.replace(r, retries=0) for r in results] == reference
    assert "NaN or inf actions at step 6" in results[5].policy_error


@pytest.fixture(scope="module")
def act_checkpoint(tmp_path_factory):
    return materialize("act", tmp_path_factory.mktemp("checkpoints") / "act")


@pytest.mark.slow
@pytest.mark.parametrize(
    "arranged", [{"row_groups": 2}, {"independent_rows": True}], ids=["2 groups", "independent rows"]
)
def test_act_on_metaworld_acts_and_scores_as_in_lockstep(act_checkpoint, one_torch_thread, arranged):
    """The tests' ACT (n_action_steps 5) on Meta-World with 96x96 images, 4 envs in workers,
    6 episodes of 12 steps: every episode scores the same in two groups taking turns, and with
    rows advancing independently, as in lockstep."""
    env_flags = (*ENV_FLAGS["act"], "--env.episode_length=12", "--env.fast_render=true")
    loaded = load(act_checkpoint, env_flags=env_flags)
    [task] = loaded.cfg.env.tasks()

    def run_act(**arrangement):
        settings = RolloutSettings(
            start_seed=3, preprocessor=loaded.preprocessor, postprocessor=loaded.postprocessor, **arrangement
        )
        env = make_task_env(loaded.cfg.env, task, 4, use_async_envs=True)
        try:
            results = run_episodes(env, loaded.policy, range(6), settings)
        finally:
            env.close()
        # The sums of rewards differ with any action of an episode.
        return [(r.episode_index, r.seed, r.success, r.sum_reward, r.max_reward, r.n_steps) for r in results]

    reference = run_act()
    arranged_results = run_act(**arranged)
    assert [r[-1] for r in reference] == [12] * 6
    # Bit for bit, a row's numbers depend on how many rows share its matrix products (fewer
    # than the 4 of lockstep here), as they do between batch sizes: equal to rounding, which
    # twelve steps of contact physics amplify (3e-6 relative was seen in one fresh-clone run).
    assert [(r[0], r[1], r[2], r[5]) for r in arranged_results] == [
        (r[0], r[1], r[2], r[5]) for r in reference
    ]
    rewards = [reward for r in reference for reward in r[3:5]]
    assert [reward for r in arranged_results for reward in r[3:5]] == pytest.approx(rewards, rel=1e-4)
