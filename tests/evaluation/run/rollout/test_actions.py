"""The rollout builds a policy batch only when the policy reads it (`actions_without_observation`).

Skipping the batch must never change what an episode does: the same actions at every step and
the same results as a loop that converts every observation, and every observation must still
reach policies that read each step (temporal ensembling, Diffusion's observation history).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.factory import make_task_env
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.action_queue import RowActionQueue, batch_size, select_rows
from lerobot.policies.pretrained import PreTrainedPolicy
from tests.fakes import FakeEnv, fake_spaces
from tests.policies.checkpoints import ENV_FLAGS, load, materialize

CHUNK = 3


class ChunkingPolicy(PreTrainedPolicy):
    """Predicts CHUNK actions from a row's observation and executes them, like ACT; remembers
    which rows each `select_action` call had to predict for."""

    name = "chunking"

    def __init__(self):
        super().__init__(PreTrainedConfig.get_choice_class("random")(device="cpu"))
        self.queue = RowActionQueue()
        self.predicted_rows: list[list[int]] = []

    def reset(self, env_ids=None, seeds=None):
        self.queue.reset(env_ids)

    def select_action(self, batch):
        n_rows = batch_size(batch)
        rows = self.queue.empty_rows(n_rows)
        self.predicted_rows.append(rows)
        if rows:
            state = select_rows(batch, rows, n_rows)["observation.state"]
            chunk = torch.stack([state * (1 + k / 10) for k in range(CHUNK)], dim=1)
            self.queue.fill(rows, chunk, n_rows)
        return self.queue.pop()

    def actions_without_observation(self, n_rows):
        return None if self.queue.empty_rows(n_rows) else self.queue.pop()


def reads_every_step(policy: PreTrainedPolicy) -> PreTrainedPolicy:
    """The same policy, made to receive a batch at every step (the loop before this shortcut)."""
    policy.actions_without_observation = lambda n_rows: None
    return policy


def run_and_record(env, policy, episodes, settings):
    """Results and every (episode, step, action) the loop executed."""
    steps: list[tuple[int, int, list[float]]] = []

    def on_step(env_id, episode, observation, action, step):
        steps.append((episode, step, np.asarray(action).tolist()))

    results = run_episodes(env, policy, episodes, settings, hooks=RolloutHooks(on_step=on_step))
    return [(r.episode_index, r.seed, r.success, r.sum_reward, r.n_steps) for r in results], sorted(steps)


def fake_vec(n_envs: int) -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    return LazyVectorEnv([functools.partial(FakeEnv)] * n_envs, obs_space, act_space)


@pytest.mark.parametrize("continuous_batching", [True, False])
def test_rows_at_different_chunk_positions_act_as_with_a_batch_every_step(continuous_batching):
    """Episodes of 2-6 steps in 3 slots: rows refill at different steps, so some rounds pop
    every row's queue and others predict for some rows only."""
    settings = RolloutSettings(start_seed=0, continuous_batching=continuous_batching)
    policy = ChunkingPolicy()
    shortcut = run_and_record(fake_vec(3), policy, range(9), settings)
    every_step = run_and_record(fake_vec(3), reads_every_step(ChunkingPolicy()), range(9), settings)
    assert shortcut == every_step
    assert all(policy.predicted_rows), "a batch was built for a round where no row read it"
    n_steps = sum(result[-1] for result in shortcut[0])
    assert len(policy.predicted_rows) < n_steps / 2


def metaworld_rollout(policy_name: str, *flags: str, n_envs: int = 1, episodes=range(1), length: int = 11):
    """A real Meta-World push-v3 rollout of a LeRobot-saved checkpoint, counting how often the
    policy's batch was built (preprocessed)."""

    def run(checkpoint, every_step: bool):
        # Fast rendering: a shadowless frame costs an eighth of a full one, and the pixels'
        # looks do not matter here, only that the same ones reach the policy.
        env_flags = (*ENV_FLAGS[policy_name], f"--env.episode_length={length}", "--env.fast_render=true")
        loaded = load(checkpoint, *flags, env_flags=env_flags)
        built = []

        def preprocess(batch):
            built.append(batch["observation.state"].shape[0])
            return loaded.preprocessor(batch)

        settings = RolloutSettings(start_seed=5, preprocessor=preprocess, postprocessor=loaded.postprocessor)
        [task] = loaded.cfg.env.tasks()
        env = make_task_env(loaded.cfg.env, task, n_envs, use_async_envs=False)
        policy = reads_every_step(loaded.policy) if every_step else loaded.policy
        try:
            return (*run_and_record(env, policy, episodes, settings), len(built))
        finally:
            env.close()

    return run


@pytest.fixture(scope="module")
def checkpoint_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    return {name: materialize(name, root / name) for name in ("act", "diffusion")}


def test_act_converts_observations_once_per_chunk_with_unchanged_actions(checkpoint_dirs, one_torch_thread):
    """n_action_steps=5, 11-step episodes in 2 slots: batches at steps 0, 5 and 10 only, and
    the very actions and results of a loop that builds one every step."""
    run = metaworld_rollout("act", n_envs=2, episodes=range(2))
    results, steps, n_batches = run(checkpoint_dirs["act"], every_step=False)
    reference_results, reference_steps, reference_batches = run(checkpoint_dirs["act"], every_step=True)
    assert results == reference_results and [r[-1] for r in results] == [11, 11]
    assert steps == reference_steps
    assert (reference_batches, n_batches) == (11, 3)


@pytest.mark.parametrize(
    ("policy_name", "flags"),
    [
        ("act", ("--policy.temporal_ensemble_coeff=0.01", "--policy.n_action_steps=1")),
        ("diffusion", ()),
    ],
    ids=["act-temporal-ensembling", "diffusion-observation-history"],
)
def test_policies_that_read_every_step_get_every_observation(
    checkpoint_dirs, one_torch_thread, policy_name, flags
):
    run = metaworld_rollout(policy_name, *flags, length=6)
    (result,), steps, n_batches = run(checkpoint_dirs[policy_name], every_step=False)
    assert result[-1] == 6 and len(steps) == 6
    assert n_batches == 6
