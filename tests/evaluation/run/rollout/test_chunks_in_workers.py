"""A policy's queued actions travel to the env worker as one chunk (`--eval.chunks_in_workers`).

Sending a chunk whole must never change an episode: each one sees the same actions, ends at
the same step for the same reason and scores the same as one step per round, whatever the
batch, the workers, the refilling, a NaN inside a chunk, a step limit or a crash inside it.
The real-simulator case (ACT on Meta-World in workers) is in test_blind_steps.py.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from lerobot.configs.env import TaskSpec
from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.commands import ChunkResult
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes
from lerobot.policies.action_queue import RowActionQueue, batch_size, select_rows
from lerobot.policies.pretrained import PreTrainedPolicy
from tests.fakes import FakeEnv, fake_spaces

CHUNK = 4


class ActionRewardEnv(FakeEnv):
    """FakeEnv whose reward is the action's sum: an episode's sum and max of rewards change
    when any of its actions does. `die_at=(seed, step, marker)` exits the worker once, at
    that step of that seed's episode (inside a chunk)."""

    def __init__(
        self, length: int = 0, die_at: tuple[int, int, str] | None = None, step_s: float = 0.0, **kwargs
    ):
        super().__init__(**kwargs)
        self.fixed_length, self.die_at, self.step_s = length, die_at, step_s

    @property
    def length(self) -> int:
        return self.fixed_length or 3 + self.seed_ % 9

    def step(self, action):
        if self.die_at is not None:
            seed, step, marker = self.die_at
            if (self.seed_, self.t) == (seed, step) and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(9)
        time.sleep(self.step_s)
        obs, _, terminated, truncated, info = super().step(action)
        return obs, float(np.sum(action)), terminated, truncated, info


class QueueingPolicy(PreTrainedPolicy):
    """CHUNK actions per prediction, from the row's state; the action at `nan_at=(seed, step)`
    of that seed's episode is NaN."""

    name = "queueing"

    def __init__(self, nan_at: tuple[int, int] | None = None):
        super().__init__(PreTrainedConfig.get_choice_class("random")(device="cpu"))
        self.queue = RowActionQueue()
        self.nan_at = nan_at
        self.seeds: dict[int, int] = {}

    def reset(self, env_ids=None, seeds=None):
        self.queue.reset(env_ids)
        for row, seed in zip(env_ids or [], seeds or [], strict=False):
            self.seeds[row] = seed

    def select_action(self, batch):
        n_rows = batch_size(batch)
        rows = self.queue.empty_rows(n_rows)
        if rows:
            state = select_rows(batch, rows, n_rows)["observation.state"]
            chunk = torch.stack([state[:, 0] * 0.1 + state[:, 1] * 0.01 + k * 0.001 for k in range(CHUNK)], 1)
            chunk = torch.stack([chunk, -chunk], dim=-1)
            for j, row in enumerate(rows):
                seed, step = self.nan_at or (None, None)
                if self.seeds.get(row) == seed and 0 <= step - int(state[j, 1]) < CHUNK:
                    chunk[j, step - int(state[j, 1])] = float("nan")
            self.queue.fill(rows, chunk, n_rows)
        return self.queue.pop()

    def actions_without_observation(self, n_rows):
        return None if self.queue.empty_rows(n_rows) else self.queue.pop()

    def take_queued_actions(self, n_rows):
        return self.queue.take_rest(n_rows)


def vec(
    n_envs: int,
    use_async: bool = False,
    max_steps=None,
    step_timeout_s=None,
    envs_per_worker: int = 1,
    in_process: int = 0,
    env_class: type[ActionRewardEnv] | None = None,
    **env_kwargs,
) -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    return LazyVectorEnv(
        [functools.partial(env_class or ActionRewardEnv, **env_kwargs)] * n_envs,
        obs_space,
        act_space,
        use_async=use_async,
        step_timeout_s=step_timeout_s,
        task=TaskSpec("fake", 0, "fake-task", "do the fake-task", fps=10, max_steps=max_steps),
        envs_per_worker=envs_per_worker,
        in_process_slots=in_process,
    )


def run(n_envs, episodes, chunks, use_async=False, continuous=True, policy=None, env=None, **settings):
    """(results without wall time, round trips): chunks sent whole or one step per round."""
    env = env or vec(n_envs, use_async)
    rounds = []
    inner = env.step_and_reset_at

    def counted(round_):
        steps, resets = inner(round_)
        rounds.append([type(step).__name__ for step in steps])
        return steps, resets

    env.step_and_reset_at = counted
    settings = RolloutSettings(
        start_seed=0, continuous_batching=continuous, chunks_in_workers=chunks, **settings
    )
    try:
        results = run_episodes(env, policy or QueueingPolicy(), episodes, settings)
    finally:
        env.close()
    return [dataclasses.replace(r, wall_s=0.0) for r in results], rounds


@pytest.mark.parametrize("continuous", [True, False])
@pytest.mark.parametrize("n_envs", [1, 3])
def test_chunks_sent_whole_give_the_results_of_one_step_per_round(n_envs, continuous):
    """Episodes of 3-11 steps: rows hold different rests of chunk when they are sent, and
    episodes end inside chunks."""
    reference, per_step = run(n_envs, range(10), chunks=False, continuous=continuous)
    results, rounds = run(n_envs, range(10), chunks=True, continuous=continuous)
    assert results == reference
    assert all(name == "StepResult" for names in per_step for name in names)
    assert sum(name == "ChunkResult" for names in rounds for name in names) > 10
    assert len(rounds) < len(per_step)


@pytest.mark.slow
def test_chunks_in_worker_processes_give_the_same_results():
    reference, _ = run(3, range(8), chunks=False)
    results, rounds = run(3, range(8), chunks=True, use_async=True)
    assert results == reference and any("ChunkResult" in names for names in rounds)


def test_a_nan_inside_a_chunk_ends_the_episode_at_that_step_as_the_policy_s():
    """Seed 5 (8 steps): its action at step 6 (inside its second chunk) is NaN."""
    reference, _ = run(2, range(8), chunks=False, policy=QueueingPolicy(nan_at=(5, 6)))
    results, _ = run(2, range(8), chunks=True, policy=QueueingPolicy(nan_at=(5, 6)))
    assert results == reference
    [ended] = [r for r in results if r.policy_error]
    assert (ended.seed, ended.n_steps, ended.success) == (5, 6, False)
    assert "NaN or inf actions at step 6" in ended.policy_error


def test_a_chunk_stops_at_the_task_step_limit():
    reference, _ = run(2, range(6), chunks=False, env=vec(2, max_steps=5))
    results, _ = run(2, range(6), chunks=True, env=vec(2, max_steps=5))
    assert results == reference and max(r.n_steps for r in results) == 5


def test_a_worker_dying_inside_a_chunk_reruns_the_episode(tmp_path):
    """Seed 3's worker exits before its step 3 (of 6), inside a chunk: the episode runs again
    from its start and ends as it would have."""
    reference, _ = run(2, range(4), chunks=False)
    env = vec(2, use_async=True, die_at=(3, 2, str(tmp_path / "died")))
    results, _ = run(2, range(4), chunks=True, env=env)
    assert (tmp_path / "died").exists()
    assert [r.retries for r in results] == [0, 0, 0, 1]
    assert [dataclasses.replace(r, retries=0) for r in results] == reference


def test_videos_get_every_frame_of_a_chunk(tmp_path):
    """Episode 0 is filmed: its chunks render a frame at every step; episode 1's do not."""
    env = vec(1)
    frames = []
    inner = env.step_and_reset_at

    def watched(round_):
        steps, resets = inner(round_)
        for step in steps:
            for s in step.steps if isinstance(step, ChunkResult) else [step]:
                frames.append(s.frame is not None)
        return steps, resets

    env.step_and_reset_at = watched
    results, _ = run(1, range(2), chunks=True, env=env, max_episodes_rendered=1, videos_dir=tmp_path)
    first, second = results[0].n_steps, results[1].n_steps
    assert frames == [True] * first + [False] * second
    assert results[1].video_path is None and Path(results[0].video_path).stat().st_size > 0


@pytest.mark.slow
def test_the_step_timeout_applies_to_each_step_of_a_chunk():
    """0.3 s steps under a 0.5 s step timeout: chunks of 3 steps take 0.9 s and are not hung."""
    env = vec(2, use_async=True, step_timeout_s=0.5, step_s=0.3, length=4)
    results, rounds = run(2, range(2), chunks=True, env=env)
    assert [(r.n_steps, r.retries, r.failure_reason) for r in results] == [(4, 0, None)] * 2
    assert ["ChunkResult"] * 2 in rounds
