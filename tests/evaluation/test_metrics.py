import json
import math

from lerobot.evaluation.metrics import (
    TaskResult,
    aggregate,
    build_eval_info,
    to_strict_json,
    write_json_atomic,
)
from lerobot.evaluation.rollout import EpisodeResult


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
    agg = aggregate([episode(0, True, 2.0, 4), episode(1, False, 4.0, 6)], eval_s=2.0)
    assert agg["pc_success"] == 50.0
    assert agg["avg_sum_reward"] == 3.0 and agg["avg_episode_length"] == 5.0
    assert agg["n_episodes"] == 2 and agg["eval_ep_s"] == 1.0


def test_nothing_to_average_gives_null_not_nan():
    agg = aggregate([], eval_s=0.0)
    assert agg["pc_success"] is None and agg["eval_ep_s"] is None
    json.dumps(agg, allow_nan=False)


def test_strict_json_replaces_non_finite_numbers():
    cleaned = to_strict_json({"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": -math.inf}})
    assert cleaned == {"a": None, "b": [None, 1.5], "c": {"d": None}}


def test_eval_info_layout_groups_and_lerobot_keys():
    tasks = [
        TaskResult("easy", 0, "reach-v3", "Reach a goal position", (episode(0, True), episode(1, True)), 1.0),
        TaskResult(
            "hard", 0, "push-v3", "Push the puck to a goal", (episode(0, False, reward=float("nan")),), 1.0
        ),
    ]
    info = build_eval_info(tasks, eval_s=2.0)
    assert set(info) >= {"per_episode", "per_task", "per_group", "overall", "aggregated"}
    assert info["per_group"]["easy"]["pc_success"] == 100.0
    assert info["per_group"]["hard"]["pc_success"] == 0.0
    assert round(info["overall"]["pc_success"], 4) == round(200 / 3, 4)
    assert info["per_task"][1]["metrics"]["sum_rewards"] == [None]
    assert info["per_task"][0]["task_description"] == "Reach a goal position"
    json.dumps(info, allow_nan=False)


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    path = write_json_atomic({"x": float("nan")}, tmp_path / "out" / "eval_info.json")
    assert json.loads(path.read_text()) == {"x": None}
    assert [p.name for p in path.parent.iterdir()] == ["eval_info.json"]
