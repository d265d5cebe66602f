import math

import pytest

from lerobot.evaluation.intervals import Z_95, pc_wilson_interval, wilson_interval
from lerobot.evaluation.results import EpisodeResult, RunResult, TaskResult


def episodes(n_success: int, n: int) -> tuple[EpisodeResult, ...]:
    return tuple(
        EpisodeResult(
            episode_index=i,
            seed=i,
            success=i < n_success,
            success_at_end=i < n_success,
            sum_reward=1.0,
            max_reward=1.0,
            n_steps=10,
            wall_s=0.1,
        )
        for i in range(n)
    )


@pytest.mark.parametrize(
    ("successes", "n", "expected_pc"),
    [
        # Closed forms of the Wilson bounds, z = 1.96: at 0 successes the upper bound is
        # z^2 / (n + z^2); at n successes the lower bound is n / (n + z^2); at half, it is
        # 0.5 +- z * sqrt(n/4 + z^2/4) / (n + z^2).
        (0, 10, (0.0, 27.75)),
        (5, 10, (23.66, 76.34)),
        (10, 10, (72.25, 100.0)),
        (40, 50, (66.96, 88.76)),
    ],
)
def test_wilson_interval_matches_published_values(successes, n, expected_pc):
    low, high = pc_wilson_interval(successes, n)
    assert low == pytest.approx(expected_pc[0], abs=0.01)
    assert high == pytest.approx(expected_pc[1], abs=0.01)


def test_wilson_bounds_follow_their_closed_forms():
    z2 = Z_95**2
    assert wilson_interval(0, 10) == (0.0, pytest.approx(z2 / (10 + z2)))
    assert wilson_interval(10, 10) == (pytest.approx(10 / (10 + z2)), 1.0)
    half = Z_95 * math.sqrt(10 / 4 + z2 / 4) / (10 + z2)
    assert wilson_interval(5, 10) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))


def test_wilson_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    for successes, n in [(0, 1), (1, 3), (7, 20), (49, 50), (123, 500)]:
        ci = stats.binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(successes, n) == (
            pytest.approx(ci.low, abs=1e-9),
            pytest.approx(ci.high, abs=1e-9),
        )


def test_more_episodes_give_a_narrower_interval_around_the_rate():
    small, large = pc_wilson_interval(5, 10), pc_wilson_interval(50, 100)
    assert small[0] < large[0] < 50.0 < large[1] < small[1]


def test_no_episodes_no_interval_and_bad_counts_are_refused():
    assert pc_wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="successes=11: must be between 0 and n=10"):
        wilson_interval(11, 10)


def test_every_aggregate_of_eval_info_carries_its_interval():
    tasks = [
        TaskResult("libero_spatial", 0, "a", "", episodes(5, 10), 1.0),
        TaskResult("libero_spatial", 1, "b", "", episodes(10, 10), 1.0),
        TaskResult("libero_object", 0, "c", "", episodes(0, 10), 1.0),
    ]
    info = RunResult.of(tasks, eval_s=3.0).to_eval_info()
    blocks = [t["metrics"] for t in info["per_task"]] + list(info["per_group"].values())
    blocks += [info["overall"], info["aggregated"]]
    for block in blocks:
        low, high = block["pc_success_ci95"]
        assert 0.0 <= low <= block["pc_success"] <= high <= 100.0
    assert info["per_task"][0]["metrics"]["pc_success_ci95"] == pytest.approx([23.66, 76.34], abs=0.01)
    assert info["per_group"]["libero_spatial"]["n_successes"] == 15
    assert info["overall"]["pc_success_ci95"] == pytest.approx(pc_wilson_interval(15, 30))
