import json

from lerobot.evaluation.results import EpisodeResult, RunResult, Summary, TaskResult


def episode(index: int, success: bool, reward: float = 1.0, steps: int = 10) -> EpisodeResult:
    return EpisodeResult(
        episode_index=index,
        seed=1000 + index,
        success=success,
        success_at_end=success,
        sum_reward=reward,
        max_reward=reward,
        n_steps=steps,
        wall_s=0.1,
    )


def test_aggregate_values():
    agg = Summary.of([episode(0, True, 2.0, 4), episode(1, False, 4.0, 6)], eval_s=2.0).to_json()
    assert agg["pc_success"] == 50.0
    assert agg["avg_sum_reward"] == 3.0 and agg["avg_episode_length"] == 5.0
    assert agg["n_episodes"] == 2 and agg["eval_ep_s"] == 1.0


def test_nothing_to_average_gives_null_not_nan():
    agg = Summary.of([], eval_s=0.0).to_json()
    assert agg["pc_success"] is None and agg["eval_ep_s"] is None
    json.dumps(agg, allow_nan=False)


def test_eval_info_layout_groups_and_lerobot_keys():
    tasks = [
        TaskResult("easy", 0, "reach-v3", "Reach a goal position", (episode(0, True), episode(1, True)), 1.0),
        TaskResult(
            "hard", 0, "push-v3", "Push the puck to a goal", (episode(0, False, reward=float("nan")),), 1.0
        ),
    ]
    info = RunResult.of(tasks, eval_s=2.0).to_eval_info()
    assert set(info) >= {"per_episode", "per_task", "per_group", "overall", "aggregated"}
    assert info["per_group"]["easy"]["pc_success"] == 100.0
    assert info["per_group"]["hard"]["pc_success"] == 0.0
    assert round(info["overall"]["pc_success"], 4) == round(200 / 3, 4)
    assert info["per_task"][1]["metrics"]["sum_rewards"] == [None]
    assert info["per_task"][0]["task_description"] == "Reach a goal position"
    json.dumps(info, allow_nan=False)
