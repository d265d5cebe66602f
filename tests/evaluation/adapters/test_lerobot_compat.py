"""LeRobot's eval functions on vector envs built elsewhere, and with LeRobot-style policies.

The fake env's episodes are a pure function of the seed (tests/fakes.py), so every way of
stepping must give the same per-episode results; the real-simulator script is
tests/test_lerobot_compat.py.
"""

import functools

import gymnasium as gym
import numpy as np
import torch

from lerobot.evaluation.adapters.lerobot_compat import eval_policy, eval_policy_all, resets_rows, rollout
from tests.evaluation.run.rollout.test_loop import RecordingPolicy, expected_length, make_vec
from tests.fakes import FakeEnv


class LeRobotStylePolicy(torch.nn.Module):
    """A policy as LeRobot defines them: `reset()` forgets every row at once."""

    name = "lerobot_style"

    def __init__(self):
        super().__init__()
        self.n_resets = 0
        self.batch_sizes: list[int] = []

    def reset(self):
        self.n_resets += 1

    def select_action(self, batch):
        self.batch_sizes.append(batch["observation.state"].shape[0])
        return torch.zeros(batch["observation.state"].shape[0], 2)


def per_episode(info):
    return [(e["episode_ix"], e["seed"], e["success"], e["sum_reward"]) for e in info["per_episode"]]


def expected_episodes(n: int, start_seed: int = 0):
    return [
        (e, start_seed + e, (start_seed + e) % 2 == 0, float(expected_length(start_seed + e)))
        for e in range(n)
    ]


def sync_env(n_envs: int) -> gym.vector.SyncVectorEnv:
    return gym.vector.SyncVectorEnv([functools.partial(FakeEnv, task="sync-task")] * n_envs)


def test_a_sync_vector_env_runs_slot_by_slot_with_each_episode_on_its_seed():
    env = sync_env(2)
    info = eval_policy(env, RecordingPolicy(), n_episodes=5, start_seed=3)
    assert per_episode(info) == expected_episodes(5, start_seed=3)
    env.envs[0].reset(seed=0)  # LeRobot leaves the env open for the caller, so do we
    env.close()


def test_a_vector_env_without_slot_control_runs_in_whole_waves():
    """An AsyncVectorEnv steps every sub-env at once: episodes run in waves of num_envs."""
    env = gym.vector.AsyncVectorEnv([functools.partial(FakeEnv, task="async-task")] * 2)
    policy = RecordingPolicy()
    try:
        info = eval_policy(env, policy, n_episodes=5, start_seed=0)
    finally:
        env.close()
    assert per_episode(info) == expected_episodes(5)
    # three waves (episodes 0-1, 2-3, 4): each starts with the whole batch reset
    assert [ids for ids, _ in policy.resets] == [[0, 1], [0, 1], [0]]
    assert {len(rows) for rows in policy.tasks} == {2}


def test_a_policy_with_lerobots_reset_gets_whole_waves_too():
    policy = LeRobotStylePolicy()
    assert not resets_rows(policy) and resets_rows(RecordingPolicy())
    info = eval_policy(make_vec(2), policy, n_episodes=4, start_seed=0)
    assert per_episode(info) == expected_episodes(4)
    assert policy.n_resets == 2  # one per wave of two episodes


def test_lerobot_style_env_dicts_are_evaluated_and_closed():
    envs = {"suite": {0: sync_env(2), 1: gym.vector.AsyncVectorEnv([functools.partial(FakeEnv)] * 2)}}
    info = eval_policy_all(envs, RecordingPolicy(), n_episodes=3, start_seed=0)
    assert [(t["task_group"], t["task_id"], t["task"]) for t in info["per_task"]] == [
        ("suite", 0, "sync-task"),
        ("suite", 1, "fake-task"),
    ]
    assert [t["task_description"] for t in info["per_task"]] == ["do the sync-task", "do the fake-task"]
    assert info["overall"]["n_episodes"] == 6
    assert envs["suite"][1].closed


def test_env_postprocessors_take_lerobots_action_dict():
    seen = []

    def env_postprocessor(transition):
        seen.append(sorted(transition))
        return {"action": transition["action"] + 0.5}

    info = eval_policy(make_vec(1), RecordingPolicy(), env_postprocessor=env_postprocessor, n_episodes=1)
    assert info["aggregated"]["n_episodes"] == 1 and seen and seen[0] == ["action"]


def test_rollout_returns_lerobots_batch_tensors():
    env = gym.vector.SyncVectorEnv([functools.partial(FakeEnv)] * 2)
    policy = LeRobotStylePolicy()
    data = rollout(env, policy, seeds=[0, 1], return_observations=True)
    env.close()
    steps = max(expected_length(0), expected_length(1))  # the batch runs until its last episode ends
    assert data["action"].shape == (2, steps, 2)
    assert data["reward"].shape == data["success"].shape == data["done"].shape == (2, steps)
    assert data["observation"]["observation.state"].shape == (2, steps + 1, 2)
    done = data["done"].numpy()
    assert done[0].argmax() == expected_length(0) - 1 and done[:, -1].all()
    assert np.all(np.diff(done.astype(int), axis=1) >= 0)  # cumulative
    assert bool(data["success"][0, expected_length(0) - 1]) and not data["success"][1].any()
    assert policy.n_resets == 1
