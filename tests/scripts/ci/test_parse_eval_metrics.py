"""scripts/ci/parse_eval_metrics.py, run as CI runs it: a standard-library-only subprocess."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "ci" / "parse_eval_metrics.py"
RUN_LABELS = ["--env", "metaworld", "--task", "push-v3", "--policy", "metaworld_expert"]
NULL_METRICS = {"pc_success": None, "n_episodes": None, "avg_sum_reward": None, "eval_s": None}

# LeRobot's single-task output: totals under `aggregated`, without `n_episodes`.
LEROBOT_SINGLE_TASK = {
    "per_episode": [
        {"episode_ix": 0, "sum_reward": 12.0, "max_reward": 1.0, "success": True, "seed": 1000},
        {"episode_ix": 1, "sum_reward": 4.0, "max_reward": 0.5, "success": False, "seed": 1001},
    ],
    "aggregated": {"avg_sum_reward": 8.0, "avg_max_reward": 0.75, "pc_success": 50.0, "eval_s": 3.5},
    "video_paths": [],
}
# LeRobot's multi-task output: totals under `overall` only.
LEROBOT_MULTI_TASK = {
    "per_task": [],
    "per_group": {"easy": {"pc_success": 75.0, "n_episodes": 4}},
    "overall": {"avg_sum_reward": 20.25, "pc_success": 75.0, "n_episodes": 4, "eval_s": 9.0},
}


def run_script(artifacts: Path, *args: str) -> subprocess.CompletedProcess:
    # -I -S: no site-packages, no PYTHON* variables, so any import beyond the standard
    # library fails here as it would on the bare CI runner.
    return subprocess.run(
        [sys.executable, "-I", "-S", str(SCRIPT), "--artifacts-dir", str(artifacts), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def read_metrics(artifacts: Path) -> dict:
    text = (artifacts / "metrics.json").read_text()
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"metrics.json is not strict JSON: {c}"))


def metrics_of(artifacts: Path) -> dict:
    return {key: read_metrics(artifacts)[key] for key in NULL_METRICS}


def write_eval_info(artifacts: Path, info) -> None:
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "eval_info.json").write_text(json.dumps(info))


def test_multi_task_shape_reads_overall(tmp_path):
    write_eval_info(tmp_path, LEROBOT_MULTI_TASK)
    result = run_script(tmp_path, *RUN_LABELS)
    assert result.returncode == 0, result.stderr
    assert read_metrics(tmp_path) == {
        "env": "metaworld",
        "task": "push-v3",
        "policy": "metaworld_expert",
        "pc_success": 75.0,
        "n_episodes": 4,
        "avg_sum_reward": 20.25,
        "eval_s": 9.0,
        "task_descriptions": {},
    }
    assert result.stderr == ""


def test_single_task_shape_reads_aggregated_and_counts_episodes(tmp_path):
    write_eval_info(tmp_path, LEROBOT_SINGLE_TASK)
    assert run_script(tmp_path).returncode == 0
    assert metrics_of(tmp_path) == {"pc_success": 50.0, "n_episodes": 2, "avg_sum_reward": 8.0, "eval_s": 3.5}


def test_overall_wins_when_both_blocks_are_present(tmp_path):
    # Our eval_info.json repeats `overall` as `aggregated`; should they ever differ, the
    # multi-task totals are the run's totals.
    info = {**LEROBOT_MULTI_TASK, "aggregated": LEROBOT_SINGLE_TASK["aggregated"]}
    write_eval_info(tmp_path, info)
    assert run_script(tmp_path).returncode == 0
    assert metrics_of(tmp_path)["pc_success"] == 75.0


def test_nan_and_infinity_literals_become_null(tmp_path):
    # What json.dumps writes by default for float("nan") and float("inf"); json.loads accepts it.
    (tmp_path / "eval_info.json").write_text(
        '{"overall": {"pc_success": NaN, "n_episodes": 3, "avg_sum_reward": Infinity, "eval_s": -Infinity}}'
    )
    assert run_script(tmp_path).returncode == 0
    assert metrics_of(tmp_path) == {**NULL_METRICS, "n_episodes": 3}


@pytest.mark.parametrize(
    "value", ["NaN", "nan", "Infinity", "-inf", None, True, "not a number", [], {}, 1e999]
)
def test_nan_like_values_become_null(tmp_path, value):
    write_eval_info(tmp_path, {"aggregated": {"pc_success": value, "eval_s": 2.0}})
    assert run_script(tmp_path).returncode == 0
    assert metrics_of(tmp_path) == {**NULL_METRICS, "eval_s": 2.0}


def test_numeric_strings_are_read_as_numbers(tmp_path):
    write_eval_info(tmp_path, {"overall": {"pc_success": "87.5", "n_episodes": "8"}})
    assert run_script(tmp_path).returncode == 0
    assert metrics_of(tmp_path) == {**NULL_METRICS, "pc_success": 87.5, "n_episodes": 8}


def test_missing_eval_info_warns_and_writes_nulls(tmp_path):
    artifacts = tmp_path / "never_created"
    result = run_script(artifacts, *RUN_LABELS)
    assert result.returncode == 0
    assert "warning" in result.stderr and "eval_info.json not found" in result.stderr
    metrics = read_metrics(artifacts)
    assert metrics == {
        "env": "metaworld",
        "task": "push-v3",
        "policy": "metaworld_expert",
        **NULL_METRICS,
        "task_descriptions": {},
    }


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (b'{"overall": {"pc_success": 10', "not valid JSON"),
        (b"", "not valid JSON"),
        (b"\xff\xfe\x00garbage", "cannot read"),
        (b"[1, 2, 3]", "not an object"),
        (b'{"per_task": []}', "neither 'overall' nor 'aggregated'"),
    ],
    ids=["truncated", "empty", "not-utf8", "list", "no-totals"],
)
def test_corrupt_eval_info_warns_and_writes_nulls(tmp_path, content, complaint):
    (tmp_path / "eval_info.json").write_bytes(content)
    result = run_script(tmp_path)
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    assert complaint in result.stderr
    assert metrics_of(tmp_path) == NULL_METRICS


def test_task_descriptions_are_included_when_present(tmp_path):
    write_eval_info(tmp_path, LEROBOT_MULTI_TASK)
    descriptions = {"push-v3_0": "Push the puck to a goal", "easy_0": "Press a button"}
    (tmp_path / "task_descriptions.json").write_text(json.dumps(descriptions))
    assert run_script(tmp_path).returncode == 0
    assert read_metrics(tmp_path)["task_descriptions"] == descriptions


def test_missing_task_descriptions_are_an_empty_object_as_lerobot_writes_them(tmp_path):
    write_eval_info(tmp_path, LEROBOT_MULTI_TASK)
    result = run_script(tmp_path)
    assert result.returncode == 0 and "task_descriptions" not in result.stderr
    assert read_metrics(tmp_path)["task_descriptions"] == {}


def test_corrupt_task_descriptions_warn_and_become_empty(tmp_path):
    write_eval_info(tmp_path, LEROBOT_MULTI_TASK)
    (tmp_path / "task_descriptions.json").write_text('{"push-v3_0": ')
    result = run_script(tmp_path)
    assert result.returncode == 0
    assert "task_descriptions.json is not valid JSON" in result.stderr
    assert "task_descriptions will be {}" in result.stderr
    metrics = read_metrics(tmp_path)
    assert metrics["task_descriptions"] == {}
    assert metrics["pc_success"] == 75.0
