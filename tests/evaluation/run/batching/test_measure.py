"""Measuring the batch size that steps a workload fastest (`--eval.measure_batch_size`)."""

from __future__ import annotations

import pytest

from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.factory import make_env_config, make_task_env
from lerobot.evaluation.run.batching import measure
from lerobot.evaluation.run.batching.measure import (
    BatchMeasurement,
    candidate_batches,
    candidate_row_groups,
    env_steps_per_second,
    measure_batch_sizes,
)
from lerobot.evaluation.run.batching.remembered import BatchRate
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.random.modeling_random import RandomPolicy
from tests.evaluation.run.rollout.test_chunks_in_workers import QueueingPolicy, vec


@pytest.mark.parametrize(
    ("cores", "expected"),
    [
        (1, [1, 2, 4]),
        (2, [1, 2, 4, 8]),
        (16, [8, 16, 24, 32, 48, 64]),
        (64, [32, 48, 64]),
        (128, [64]),
    ],
)
def test_candidates_run_from_half_to_four_times_the_cores_up_to_64(cores, expected):
    assert candidate_batches(cores) == expected


def test_row_groups_are_measured_where_there_are_as_many_units():
    assert (
        candidate_row_groups(1) == [] and candidate_row_groups(3) == [2] and candidate_row_groups(5) == [2, 4]
    )


def measured_in_order(rates: dict[tuple[int, int], float], candidates, groups_at=None, row_groups=1):
    asked = []

    def rate(batch_size, groups):
        asked.append((batch_size, groups))
        return rates[(batch_size, groups)]

    return measure_batch_sizes(rate, candidates, groups_at, row_groups), asked


def test_climbing_stops_at_the_first_batch_that_does_not_gain():
    rates = {(1, 1): 1000.0, (2, 1): 1900.0, (4, 1): 1940.0, (8, 1): 5000.0}
    measurement, asked = measured_in_order(rates, [8, 4, 2, 1])
    assert asked == [(1, 1), (2, 1), (4, 1)]  # 4 gains 2% over 2: 8 is never started
    assert measurement.best == BatchRate(2, 1900.0)  # within 3% of the fastest, with fewer processes


def test_the_fastest_batch_is_then_measured_in_row_groups_while_they_gain():
    rates = {(1, 1): 500.0, (2, 1): 1000.0, (4, 1): 900.0, (2, 2): 1200.0, (2, 4): 1210.0}
    measurement, asked = measured_in_order(rates, [1, 2, 4], lambda batch_size: [4, 2])
    assert asked == [(1, 1), (2, 1), (4, 1), (2, 2), (2, 4)]
    assert measurement.best == BatchRate(2, 1200.0, row_groups=2)  # 4 groups gain under 3%


def test_groups_that_lose_leave_lockstep_the_best():
    rates = {(8, 1): 900.0, (16, 1): 1000.0, (24, 1): 980.0, (16, 2): 700.0, (16, 4): 2000.0}
    measurement, asked = measured_in_order(rates, [8, 16, 24], lambda batch_size: [2, 4])
    assert asked[-1] == (16, 2) and measurement.best == BatchRate(16, 1000.0)


def test_given_row_groups_are_kept_for_every_batch_size():
    rates = {(1, 3): 100.0, (2, 3): 50.0}
    measurement, asked = measured_in_order(rates, [1, 2], row_groups=3)
    assert asked == [(1, 3), (2, 3)] and measurement.best == BatchRate(1, 100.0, row_groups=3)


def test_the_fastest_batch_is_then_measured_with_independent_rows():
    rates = {(1, 1): 500.0, (2, 1): 1000.0, (4, 1): 900.0, (2, 2): 1010.0}
    independent = []

    def independent_rate(batch_size):
        independent.append(batch_size)
        return {2: 1300.0}[batch_size]

    asked = []

    def rate(batch_size, groups):
        asked.append((batch_size, groups))
        return rates[(batch_size, groups)]

    measurement = measure_batch_sizes(rate, [1, 2, 4], lambda b: [2], independent_rate_at=independent_rate)
    assert asked == [(1, 1), (2, 1), (4, 1), (2, 2)] and independent == [2]
    assert measurement.best == BatchRate(2, 1300.0, independent_rows=True)


def test_independent_rows_within_three_percent_leave_lockstep_the_best():
    rates = (BatchRate(8, 1000.0), BatchRate(8, 1020.0, independent_rows=True))
    assert BatchMeasurement(rates).best == BatchRate(8, 1000.0)


def test_given_independent_rows_tag_every_rate_measured():
    measurement = measure_batch_sizes(lambda b, g: 100.0 * b, [1, 2], independent_rows=True)
    assert measurement.rates == (
        BatchRate(1, 100.0, independent_rows=True),
        BatchRate(2, 200.0, independent_rows=True),
    )


def test_the_best_is_the_smallest_batch_within_three_percent_of_the_fastest():
    rates = (BatchRate(8, 900.0), BatchRate(16, 1000.0), BatchRate(24, 1020.0), BatchRate(32, 1010.0))
    assert BatchMeasurement(rates).best == BatchRate(16, 1000.0)
    assert BatchMeasurement((BatchRate(8, 900.0), BatchRate(16, 800.0))).best == BatchRate(8, 900.0)


@pytest.mark.parametrize("chunks", [True, False])
def test_the_step_count_of_every_round_adds_up_to_the_episodes_steps(chunks):
    """Chunks stepped in workers count each of their steps, as one step per round does."""
    counted = []
    settings = RolloutSettings(start_seed=0, chunks_in_workers=chunks)
    env = vec(3, use_async=True)
    try:
        results = run_episodes(
            env, QueueingPolicy(), range(7), settings, hooks=RolloutHooks(on_steps=counted.append)
        )
    finally:
        env.close()
    assert sum(counted) == sum(result.n_steps for result in results) > 0
    assert (max(counted) > 3) is chunks  # a round of 3 envs steps more than 3 only with chunks


def test_a_real_simulator_batch_is_measured_over_its_window_and_the_policy_forgets_its_rows(metaworld):
    env_cfg = make_env_config("metaworld", task="push-v3", obs_type="state", episode_length=50)
    task = env_cfg.tasks()[0]
    policy = RandomPolicy.for_env(PreTrainedConfig.get_choice_class("random")(device="cpu"), env_cfg)
    env = make_task_env(env_cfg, task, 2, use_async_envs=True)
    try:
        rate = env_steps_per_second(env, policy, RolloutSettings(), task, warmup_s=0.3, window_s=1.0)
    finally:
        env.close()
    assert 50 < rate < 100_000  # Meta-World on the state steps hundreds to thousands per second
    assert policy._rngs == {}  # no episode's generator is left for the run that follows


def test_a_window_without_counted_rounds_is_no_rate():
    clock = measure._StepClock(warmup_s=10.0, window_s=1.0)
    clock.count(5)
    assert clock.rate() == 0.0 and not clock.window_over()


def test_a_window_of_slow_rounds_lasts_until_enough_rounds_are_counted():
    clock = measure._StepClock(warmup_s=0.0, window_s=0.0, min_rounds=3)
    clock.count(0)  # the round that ends the warm-up (the first resets)
    for _ in range(2):
        clock.count(8)
        assert not clock.window_over()
    clock.count(8)
    assert clock.window_over() and clock.steps == 24 and clock.rate() > 0
