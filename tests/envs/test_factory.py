"""`make_env` and `make_env_pre_post_processors` ask the env config, as LeRobot 0.6.1's do.

The built-in benchmarks answer with our lazy envs and identity processors (tests/envs/test_contract.py
holds every one to that). A benchmark written for LeRobot that builds its own envs
(`create_envs`) and has env processors (`get_env_processors`), the echo plugin of
tests/plugin_packages.py, is run on them: by `make_env`, by LeRobot's Python API and by
`lerobot-eval` (in-training evaluation: tests/training/test_in_loop_eval.py). Its processors
show in the rewards: the env gets the action +100 and pays its first component, and the policy
sees the state +10.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import pytest

from lerobot.configs.env import TaskSpec
from lerobot.envs.factory import (
    OwnEnvs,
    close_envs,
    make_env,
    make_env_config,
    make_env_pre_post_processors,
    make_task_env,
)
from lerobot.envs.pusht import PushtEnvConfig
from lerobot.envs.vector import LazyVectorEnv
from lerobot.scripts.lerobot_eval import eval_policy_all

BIN = Path(sys.executable).parent
ECHO_TASKS = (
    TaskSpec("echo", 0, "echo-0", "echo the action from 0", fps=10, max_steps=3),
    TaskSpec("echo", 1, "echo-1", "echo the action from 1", fps=10, max_steps=3),
)


class StateEcho:
    """A policy written for LeRobot: its action is the state it is given."""

    def reset(self) -> None:
        """Nothing to forget."""

    def select_action(self, batch):
        return batch["observation.state"].clone()


def test_make_env_returns_what_the_configs_create_envs_builds(echo_plugin):
    cfg = make_env_config("echo")
    envs = make_env(cfg, n_envs=2)
    try:
        assert {group: sorted(by_id) for group, by_id in envs.items()} == {"echo": [0, 1]}
        env = envs["echo"][1]
        assert isinstance(env, gym.vector.SyncVectorEnv) and env.num_envs == 2
        assert type(env.envs[0]).__name__ == "EchoEnv" and env.envs[0].start == 1.0
    finally:
        close_envs(envs)


def test_its_tasks_and_spaces_are_read_from_its_envs(echo_plugin):
    cfg = make_env_config("echo")
    assert cfg.builds_own_envs
    assert cfg.tasks() == ECHO_TASKS  # names and instructions as its envs say, limit its episode_length
    assert cfg.action_space().shape == (2,)


def test_make_env_pre_post_processors_gives_the_configs_own(echo_plugin):
    pre, post = make_env_pre_post_processors(make_env_config("echo"), policy_cfg=None)
    assert (type(pre).__name__, pre.offset) == ("AddToState", 10.0)
    assert (type(post).__name__, post.offset) == ("AddToAction", 100.0)


def test_the_python_api_runs_its_envs_with_its_processors_around_the_policy(echo_plugin):
    cfg = make_env_config("echo")
    envs = make_env(cfg, n_envs=2)
    env_preprocessor, env_postprocessor = make_env_pre_post_processors(cfg, policy_cfg=None)
    info = eval_policy_all(envs, StateEcho(), env_preprocessor, env_postprocessor, n_episodes=3)
    rewards = {(e["task_group"], e["task_id"]): set() for e in info["per_episode"]}
    for e in info["per_episode"]:
        rewards[e["task_group"], e["task_id"]].add(e["sum_reward"])
    # 3 steps of (state x + 10) + 100: the policy saw the state shifted, the env the action.
    assert rewards == {("echo", 0): {330.0}, ("echo", 1): {333.0}}


def test_its_envs_are_built_once_and_those_of_tasks_not_run_closed_at_once(echo_plugin):
    cfg = make_env_config("echo")
    source = OwnEnvs(cfg, n_envs=2, use_async_envs=False, tasks=[ECHO_TASKS[1]])
    env = source(ECHO_TASKS[1])
    try:
        assert isinstance(env, LazyVectorEnv) and env.task == ECHO_TASKS[1]  # slot by slot
        assert env.num_envs == 2
    finally:
        env.close()
    with pytest.raises(
        RuntimeError, match=r"^env type echo: its create_envs\(n_envs=2\) gave no env for task echo/0"
    ):
        source(ECHO_TASKS[0])


def test_make_task_env_gives_one_task_of_its_envs(echo_plugin):
    """What lerobot-record-sim and the Ray backend's actors build, task by task."""
    env = make_task_env(make_env_config("echo"), ECHO_TASKS[0], 2, use_async_envs=False)
    try:
        assert env.task == ECHO_TASKS[0] and env.num_envs == 2
    finally:
        env.close()


def test_an_override_cannot_extend_the_default_create_envs():
    @dataclass
    class Wrapped(PushtEnvConfig):
        def create_envs(self, n_envs, use_async_envs=False):
            return super().create_envs(n_envs, use_async_envs)

    with pytest.raises(TypeError, match=r"^Wrapped.create_envs: an override builds every env itself"):
        Wrapped().tasks()


@pytest.mark.slow
def test_lerobot_eval_runs_its_envs_with_its_processors_and_our_seeds(echo_plugin, tmp_path):
    """Both ways its create_envs builds them: a SyncVectorEnv (stepped slot by slot) and an
    AsyncVectorEnv (stepped whole, in waves); episode e starts from seed 1000 + e either way,
    so the two runs' episodes are the same."""
    runs = {}
    for use_async in ("false", "true"):
        out = tmp_path / f"async_{use_async}"
        result = subprocess.run(
            [
                str(BIN / "lerobot-eval"),
                "--env.type=echo",
                "--policy.type=random",
                "--policy.device=cpu",
                "--eval.n_episodes=3",
                "--eval.batch_size=2",
                f"--eval.use_async_envs={use_async}",
                "--eval.max_episodes_rendered=0",
                f"--output_dir={out}",
            ],
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(echo_plugin), os.environ.get("PYTHONPATH", "")]),
            },
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        runs[use_async] = (json.loads((out / "eval_info.json").read_text()), result.stderr)

    info, log = runs["false"]
    assert [(t["task_group"], t["task_id"], t["task"]) for t in info["per_task"]] == [
        ("echo", 0, "echo-0"),
        ("echo", 1, "echo-1"),
    ]
    assert [e["seed"] for e in info["per_episode"]] == [1000, 1001, 1002] * 2
    # Random actions in [-1, 1], +100 from its env postprocessor, over 3 steps.
    assert all(e["n_steps"] == 3 and 297 <= e["sum_reward"] <= 303 for e in info["per_episode"])
    assert (
        "env type echo builds its own envs (create_envs overridden): SyncVectorEnv stepped slot by slot"
        in log
    )
    async_info, async_log = runs["true"]
    assert "AsyncVectorEnv stepped whole, in waves of 2 episodes" in async_log
    assert outcomes(async_info) == outcomes(info)


def outcomes(info: dict) -> list[tuple]:
    """What each episode of a run gave, in its order."""
    return [
        (e["task_id"], e["seed"], e["success"], e["sum_reward"], e["n_steps"]) for e in info["per_episode"]
    ]
