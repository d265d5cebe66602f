"""Crash isolation in the rollout loop, on the fake env in real worker processes."""

import functools
import logging

import numpy as np

from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.run.rollout import RolloutSettings, run_episodes
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.policies.random.modeling_random import RandomPolicy
from tests.fakes import FakeEnv, fake_spaces


def make_vec(n_envs: int, step_timeout_s: float | None = None, **env_kwargs) -> LazyVectorEnv:
    obs_space, act_space = fake_spaces()
    factory = functools.partial(FakeEnv, **env_kwargs)
    return LazyVectorEnv(
        [factory] * n_envs, obs_space, act_space, use_async=True, step_timeout_s=step_timeout_s
    )


def random_policy() -> RandomPolicy:
    return RandomPolicy(RandomConfig(device="cpu"), -np.ones(2), np.ones(2))


def outcomes(results) -> list[tuple]:
    return [(r.episode_index, r.seed, r.success, r.sum_reward, r.n_steps) for r in results]


def run(env, **settings) -> list:
    try:
        return run_episodes(env, random_policy(), range(6), RolloutSettings(start_seed=0, **settings))
    finally:
        env.close()


def test_a_worker_that_dies_is_replaced_and_its_episode_rerun(tmp_path):
    reference = run(make_vec(2))
    results = run(make_vec(2, fail_once=("die", 3, str(tmp_path / "died"))))
    assert (tmp_path / "died").exists()  # the worker really died once
    assert outcomes(results) == outcomes(reference)
    assert [r.retries for r in results] == [0, 0, 0, 1, 0, 0]
    assert all(r.failure_reason is None for r in results)


def test_a_hung_worker_is_killed_after_the_step_timeout(tmp_path):
    reference = run(make_vec(2))
    results = run(make_vec(2, step_timeout_s=5.0, fail_once=("hang", 4, str(tmp_path / "hung"))))
    assert outcomes(results) == outcomes(reference)
    assert results[4].retries == 1


def test_an_episode_failing_every_time_is_recorded_as_failed_and_the_rest_goes_on():
    results = run(make_vec(2, crash_seeds=(2,)), max_episode_retries=1)
    assert [r.episode_index for r in results] == [0, 1, 2, 3, 4, 5]
    failed = results[2]
    assert not failed.success and failed.retries == 1
    assert "fake crash at seed 2" in failed.failure_reason and "reset (error)" in failed.failure_reason
    assert all(r.failure_reason is None for r in results if r.episode_index != 2)


def test_signals_wait_for_the_end_of_a_journal_append(tmp_path):
    import os
    import signal

    from lerobot.configs.env import TaskSpec
    from lerobot.evaluation.results import EpisodeResult
    from lerobot.evaluation.store.journal import EpisodeJournal
    from lerobot.utils.signals import Interrupted, interrupts_as_exceptions, signals_deferred

    journal = EpisodeJournal(tmp_path)
    result = EpisodeResult(0, 0, True, True, 1.0, 1.0, 3, 0.1)
    with interrupts_as_exceptions():
        try:
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGINT)  # arrives mid-block, handled after it
                journal.append(TaskSpec("g", 0, "t", "d", fps=10), result)
                interrupted_inside = False
        except Interrupted:
            interrupted_inside = None
    assert interrupted_inside is None  # the interrupt was raised, but only after the block
    assert len(journal) == 1 == len((tmp_path / "episodes.jsonl").read_text().splitlines())


def test_building_the_simulator_does_not_count_against_the_step_timeout():
    """A worker's first reset builds its simulator (tens of seconds for LIBERO on a loaded
    machine): it gets STARTUP_TIMEOUT_S, the step timeout applies from then on."""
    results = run(make_vec(2, step_timeout_s=0.5, start_s=1.5))
    assert all(r.retries == 0 and r.failure_reason is None for r in results)


def test_a_workers_traceback_is_one_line_at_info_and_whole_at_debug(caplog):
    logger = "lerobot.evaluation.run.rollout"
    with caplog.at_level(logging.INFO, logger=logger):
        run(make_vec(2, crash_seeds=(2,)), max_episode_retries=0)
    (line,) = [r.getMessage() for r in caplog.records if "episode 2" in r.getMessage()]
    assert "fake crash at seed 2" in line and "\n" not in line
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=logger):
        run(make_vec(2, crash_seeds=(2,)), max_episode_retries=0)
    (whole,) = [r.getMessage() for r in caplog.records if "episode 2" in r.getMessage()]
    assert whole.startswith(line) and "Traceback (most recent call last)" in whole
