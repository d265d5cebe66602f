"""A policy that raises HarnessError or PolicyError mid-step, on the instant fake env (the real
case, a policy server that goes away or reports an error, is in tests/policies/websocket)."""

import numpy as np

from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.policies.random.modeling_random import RandomPolicy
from lerobot.utils.errors import HarnessError, PolicyError
from tests.evaluation.run.rollout.test_loop import make_vec


class FailingOnce(RandomPolicy):
    """Random actions, except that call number `at_call` raises `error` instead."""

    def __init__(self, error: Exception | None = None, at_call: int = -1):
        super().__init__(RandomConfig(device="cpu"), -np.ones(2), np.ones(2))
        self.error, self.at_call, self.calls = error, at_call, 0

    def select_action(self, batch):
        self.calls += 1
        if self.calls == self.at_call:
            raise self.error
        return super().select_action(batch)


def run(policy, n_envs: int = 2, **settings):
    env = make_vec(n_envs)
    try:
        return run_episodes(env, policy, range(5), RolloutSettings(start_seed=0, **settings))
    finally:
        env.close()


def outcomes(results):
    return [(r.episode_index, r.seed, r.success, r.sum_reward, r.n_steps) for r in results]


def test_a_harness_failure_reruns_the_running_episodes_from_their_seeds():
    reference = run(FailingOnce())
    results = run(FailingOnce(HarnessError("policy server at ws://x: connection lost"), at_call=2))
    assert outcomes(results) == outcomes(reference)  # same seeds, same per-episode results
    assert [r.retries for r in results] == [1, 1, 0, 0, 0]  # episodes 0 and 1 were running
    assert all(r.failure_reason is None for r in results)


def test_a_harness_failure_of_some_rows_reruns_only_theirs():
    results = run(FailingOnce(HarnessError("lost", rows=[1]), at_call=2))
    assert [r.retries for r in results] == [0, 1, 0, 0, 0]
    assert outcomes(results) == outcomes(run(FailingOnce()))


def test_a_harness_failure_past_the_retries_is_recorded_as_failed():
    results = run(FailingOnce(HarnessError("lost"), at_call=1), max_episode_retries=0)
    assert [r.failure_reason for r in results[:2]] == ["lost", "lost"]
    assert [r.failure_reason for r in results[2:]] == [None, None, None]


def test_a_policy_error_ends_its_episodes_for_good_with_the_message():
    results = run(FailingOnce(PolicyError("policy server error: ValueError: bad input", rows=[0]), at_call=2))
    reference = run(FailingOnce())
    failed = results[0]
    assert failed.failure_reason == "policy server error: ValueError: bad input"
    assert not failed.success and failed.retries == 0 and failed.n_steps == 1
    assert outcomes(results)[1:] == outcomes(reference)[1:]
    assert all(r.failure_reason is None for r in results[1:])
