"""Training curves: in-loop evaluations by step, the best one, each paired with the previous."""

from lerobot.evaluation.results import EpisodeResult, RunResult, StepEvaluation, TaskResult, training_curve
from lerobot.evaluation.results.training_curve import paired_change


def run(outcomes: str, task: str = "push-v3", failed: tuple[int, ...] = ()) -> RunResult:
    """'1100': episode e (seed 1000 + e) succeeded where the character is 1."""
    episodes = [
        EpisodeResult(
            episode_index=i,
            seed=1000 + i,
            success=c == "1",
            success_at_end=c == "1",
            sum_reward=0.0,
            max_reward=0.0,
            n_steps=10,
            wall_s=0.1,
            failure_reason="worker crashed" if i in failed else None,
        )
        for i, c in enumerate(outcomes)
    ]
    return RunResult.of([TaskResult(task, 0, task, task, tuple(episodes), 1.0)], eval_s=1.0)


def test_evaluations_are_in_step_order_and_each_is_paired_with_the_previous():
    curve = training_curve([StepEvaluation(200, run("1110")), StepEvaluation(100, run("1001"))])
    assert [e.step for e in curve.evaluations] == [100, 200]
    assert curve.changes[0] is None
    change = curve.changes[1]
    assert (change.n_pairs, change.only_before, change.only_after) == (4, 1, 2)
    assert change.pc_difference == 25.0


def test_the_best_is_the_highest_rate_and_the_earliest_of_equal_ones():
    curve = training_curve(
        [StepEvaluation(100, run("1000")), StepEvaluation(200, run("1100")), StepEvaluation(300, run("0011"))]
    )
    assert curve.best.step == 200


def test_only_episodes_both_evaluations_scored_are_paired():
    change = paired_change(run("1111", failed=(0,)), run("0000"))
    assert (change.n_pairs, change.only_before, change.only_after) == (3, 3, 0)
    assert paired_change(run("11", task="reach-v3"), run("00")).n_pairs == 0


def test_each_change_carries_the_paired_interval_and_the_exact_mcnemar_p():
    change = paired_change(run("0000000000"), run("1111111100"))
    assert (change.only_before, change.only_after) == (0, 8)
    assert change.p_value == 2 / 2**8  # exact binomial: 8 discordant pairs, all one way
    low, high = change.pc_interval
    assert 0 < low < change.pc_difference == 80.0 < high <= 100
    assert paired_change(run("1"), run("1", task="reach-v3")).p_value is None
