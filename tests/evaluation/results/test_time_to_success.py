"""The time-to-success curve: how fast a run's episodes succeed, from the episodes alone."""

from dataclasses import replace

from lerobot.evaluation.results import EpisodeResult, success_curve


def episode(index: int, success_step: int | None, n_steps: int = 100, **extra) -> EpisodeResult:
    return EpisodeResult(
        episode_index=index,
        seed=1000 + index,
        success=success_step is not None,
        success_at_end=success_step is not None,
        sum_reward=0.0,
        max_reward=0.0,
        n_steps=n_steps,
        wall_s=0.1,
        success_step=success_step,
        **extra,
    )


def test_a_policy_as_successful_but_twice_as_fast_has_a_curve_that_rises_earlier():
    slow = success_curve([episode(0, 40), episode(1, 60), episode(2, 80), episode(3, None)])
    fast = success_curve([episode(0, 20), episode(1, 30), episode(2, 40), episode(3, None)])
    assert slow.fraction_by(100) == fast.fraction_by(100) == 0.75
    assert fast.fraction_by(40) == 0.75 and slow.fraction_by(40) == 0.25
    assert (slow.median_success_step, fast.median_success_step) == (60, 30)
    assert (slow.step_to_half, fast.step_to_half) == (60, 30)


def test_the_curve_is_a_step_function_from_zero_to_the_success_rate_at_the_last_step():
    curve = success_curve([episode(0, 5, n_steps=5), episode(1, 5, n_steps=5), episode(2, None, n_steps=50)])
    assert curve.points() == [(0, 0.0), (5, 2 / 3), (50, 2 / 3)]
    assert curve.n_episodes == 3 and curve.last_step == 50


def test_episodes_the_harness_failed_are_not_in_the_denominator():
    failed = replace(episode(1, None), failure_reason="worker crashed")
    curve = success_curve([episode(0, 10), failed])
    assert curve.n_episodes == 1 and curve.fraction_by(10) == 1.0


def test_no_curve_without_scored_episodes_or_from_files_that_lack_the_step():
    assert success_curve([]) is None
    old = replace(episode(0, None), success=True)  # a success from a file without success_step
    assert success_curve([old, episode(1, 10)]) is None
    never = success_curve([episode(0, None)])
    assert never.points() == [(0, 0.0), (100, 0.0)] and never.step_to_half is None
    assert never.median_success_step is None


def test_old_records_without_success_step_still_read():
    record = episode(0, 12).to_record()
    assert EpisodeResult.from_record(record).success_step == 12
    del record["success_step"]
    assert EpisodeResult.from_record(record).success_step is None
