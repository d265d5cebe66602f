"""`--eval.recording`: the evaluated rollouts as LeRobot v3 datasets, one per task.

Written by the same recorder as `lerobot-record-sim` (tests/datasets/test_recorder.py checks
the files against LeRobot's format); here: which episodes land where, in which order.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from lerobot.configs.env import TaskSpec
from lerobot.datasets.reader import load_episodes, read_info
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.evaluate import run_evaluation
from lerobot.evaluation.run.backend import LocalBackend
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.recording import EvalRecorders
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.scripts.lerobot_eval import main
from tests.evaluation.run.rollout.test_loop import RecordingPolicy, expected_length, make_vec
from tests.fakes import FakeEnv, fake_spaces


def test_dataset_episode_k_is_evaluation_episode_k_whatever_order_they_end_in(tmp_path):
    # Seeds 4, 5, 6 last 6, 2 and 3 steps: on two slots, episodes 1 and 2 end before episode 0.
    task = TaskSpec("g", 2, "fake-task", "do the fake-task", fps=10)
    backend = LocalBackend(
        RecordingPolicy(),
        RolloutSettings(start_seed=4),
        lambda _: make_vec(2),
        recorders=EvalRecorders(tmp_path),
    )
    run = run_evaluation(RunPlan((task,), 3), backend)

    frames = load_episodes(tmp_path / "g_2")
    assert [e.n_steps for e in run.tasks[0].episodes] == [expected_length(s) for s in (4, 5, 6)] == [6, 2, 3]
    assert frames.episode_lengths.tolist() == [6, 2, 3]
    seeds = frames.vectors["observation.state"][:, 0]  # the fake env's state holds its seed
    assert seeds.tolist() == [4.0] * 6 + [5.0] * 2 + [6.0] * 3
    assert frames.tasks == ["do the fake-task"] and frames.fps == 10


def test_an_episode_the_harness_gave_up_on_is_not_recorded(tmp_path):
    crashing = functools.partial(FakeEnv, crash_seeds=(1,))
    env = LazyVectorEnv([crashing], *fake_spaces(), metadata={"render_fps": 10})
    task = TaskSpec("", 0, "fake-task", "do it", fps=10)
    settings = RolloutSettings(start_seed=0, max_episode_retries=0)
    run = run_evaluation(
        RunPlan((task,), 3),
        LocalBackend(RecordingPolicy(), settings, lambda _: env, recorders=EvalRecorders(tmp_path)),
    )

    assert [e.failure_reason is not None for e in run.tasks[0].episodes] == [False, True, False]
    assert load_episodes(tmp_path).episode_lengths.tolist() == [expected_length(0), expected_length(2)]


@pytest.mark.slow
def test_lerobot_eval_records_each_task_under_the_recording_root(tmp_path):
    root = tmp_path / "datasets"
    argv = [
        "--env.type=metaworld",
        "--env.task=metaworld-reach-v3",
        "--env.obs_type=pixels_agent_pos",
        "--env.observation_height=64",
        "--env.observation_width=64",
        "--env.fast_render=true",
        "--env.episode_length=12",
        "--policy.type=metaworld_expert",
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        "--eval.use_async_envs=false",
        "--eval.max_episodes_rendered=0",
        "--eval.recording=true",
        f"--eval.recording_root={root}",
        f"--output_dir={tmp_path / 'run'}",
    ]
    assert main(argv) == 0

    info = json.loads((tmp_path / "run" / "eval_info.json").read_text())
    dataset = root / "metaworld-reach-v3_0"
    frames = load_episodes(dataset, cache_dir=tmp_path / "cache")
    assert frames.episode_lengths.tolist() == [e["n_steps"] for e in info["per_episode"]]
    assert frames.tasks == ["Reach a goal position"]
    assert read_info(dataset)["fps"] == 80
    image = frames.camera_frames("observation.image", np.arange(frames.n_frames))
    assert image.shape == (frames.n_frames, 64, 64, 3) and image.std() > 0
    assert frames.vectors["action"].shape == (frames.n_frames, 4)
    assert not (tmp_path / "run" / "recordings").exists()
