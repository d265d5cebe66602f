"""Third-party plugins are found by name at start-up; a broken one is one warning line."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lerobot.configs.env import EnvConfig
from lerobot.utils import import_utils
from tests.plugin_packages import write_plugins

BIN = Path(sys.executable).parent


@pytest.fixture
def site(tmp_path, monkeypatch):
    """The plugins on sys.path; what they register is forgotten afterwards."""
    path = write_plugins(tmp_path / "site")
    monkeypatch.syspath_prepend(str(path))
    for name in ("lerobot_env_toy", "lerobot_policy_broken", "gym_toy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield path
    EnvConfig._choice_registry.pop("toy", None)
    sys.modules.pop("lerobot_env_toy", None)


def test_plugins_are_found_by_their_distribution_names(site):
    assert import_utils.plugin_module_names() == ["lerobot_env_toy", "lerobot_policy_broken"]


def test_a_broken_plugin_is_one_warning_and_the_others_still_load(site, caplog):
    with caplog.at_level(logging.WARNING):
        imported = import_utils.register_third_party_plugins.__wrapped__()
    assert imported == ("lerobot_env_toy",)
    [record] = caplog.records
    assert record.getMessage() == (
        "plugin lerobot_policy_broken failed to import and is skipped "
        "(ImportError: No module named 'lerobot.optim')"
    )


@pytest.mark.slow
def test_lerobot_eval_runs_a_plugins_env_config_written_lerobots_way(site, tmp_path):
    """The plugin's config names only a gym id, gym_kwargs and features: the run needs nothing else."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "run"
    argv = [
        "--env.type=toy",
        "--policy.type=random",
        "--policy.device=cpu",
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        "--eval.max_episodes_rendered=1",
        f"--output_dir={out}",
    ]
    result = subprocess.run(
        [str(BIN / "lerobot-eval"), *argv], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "plugin lerobot_policy_broken failed to import" in warnings[0]
    info = json.loads((out / "eval_info.json").read_text())
    [task] = info["per_task"]
    assert (task["task_group"], task["task_id"], task["task"]) == ("toy", 0, "Reach-v0")
    assert task["task_description"] == "move the point to the goal"
    assert [e["seed"] for e in info["per_episode"]] == [1000, 1001]
    assert all(1 <= e["n_steps"] <= 6 for e in info["per_episode"])  # the gym_kwargs' step limit
    assert (out / "videos" / "toy_0" / "eval_episode_0.mp4").is_file()
