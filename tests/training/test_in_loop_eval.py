"""In-loop evaluation runs lerobot-eval's runner: same settings, same hang protection."""

import functools
import json
import os
import time
from dataclasses import dataclass, fields

import gymnasium as gym
import numpy as np
import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.parser import CliError, parse_config
from lerobot.configs.train import TrainPipelineConfig
from lerobot.datasets.reader import EpisodeFrames
from lerobot.envs.metaworld import MetaworldEnvConfig
from lerobot.training.train import build_trainee, evaluate_in_loop
from tests.training.conftest import ENV_FLAGS, TINY_ACT, make_frames


class HangOnce(gym.Wrapper):
    """Meta-World that hangs on the first step of one episode, once (a marker file remembers)."""

    def __init__(self, make_env, seed: int, marker: str):
        super().__init__(make_env())
        self.hang_seed, self.marker, self.seed_ = seed, marker, None

    def reset(self, *, seed=None, options=None):
        self.seed_ = seed
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        if self.seed_ == self.hang_seed and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            time.sleep(600)
        return self.env.step(action)


@dataclass
class HangOnceMetaworld(MetaworldEnvConfig):
    hang_seed: int = -1
    marker: str = ""

    def env_factory(self, task_name: str):
        return functools.partial(HangOnce, super().env_factory(task_name), self.hang_seed, self.marker)


def config(tmp_path, *flags: str) -> TrainPipelineConfig:
    return parse_config(
        TrainPipelineConfig,
        [
            f"--dataset.root={tmp_path}",
            f"--output_dir={tmp_path / 'out'}",
            "--env.type=metaworld",
            "--env.task=reach-v3",
            "--env.episode_length=4",
            *ENV_FLAGS,
            *TINY_ACT,
            *flags,
        ],
    )


@pytest.mark.slow
def test_a_hung_worker_during_in_loop_eval_is_replaced_and_its_episode_rerun(tmp_path, register_env_type):
    register_env_type("metaworld_hang_once", HangOnceMetaworld)  # its settings are recorded as provenance
    cfg = config(
        tmp_path,
        "--eval.n_episodes=2",
        "--eval.batch_size=2",
        "--eval.use_async_envs=true",
        "--eval.step_timeout_s=20",
        "--eval.max_episodes_rendered=0",
        "--seed=7",
    )
    marker = tmp_path / "hung"
    settings = {f.name: getattr(cfg.env, f.name) for f in fields(MetaworldEnvConfig)}
    cfg.env = HangOnceMetaworld(**settings, hang_seed=8, marker=str(marker))
    trainee = build_trainee(cfg, make_frames())

    evaluate_in_loop(cfg, trainee, step=1, wandb_run=None)

    assert marker.exists()  # the worker really hung once
    info = json.loads((cfg.output_dir / "eval" / "step_1" / "eval_info.json").read_text())
    retries = {e["episode_index"]: e["retries"] for e in info["per_episode"]}
    assert retries == {0: 0, 1: 1} and info["n_episodes_failed"] == 0
    assert info["complete"] is True and info["overall"]["n_episodes"] == 2
    # Recorded as lerobot-eval records its runs, with the training's own settings.
    provenance = info["provenance"]
    assert (
        provenance["command"].startswith("lerobot-train ") and "--eval.n_episodes=2" in provenance["command"]
    )
    assert provenance["config"]["env"]["task"] == "reach-v3" and provenance["versions"]["lerobot"]


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--eval.resume=true", "--eval.resume=True: not used by lerobot-train"),
        ("--eval.shard=0/2", "--eval.shard=0/2: not used by lerobot-train"),
        ("--eval.recording=true", "--eval.recording=True: not used by lerobot-train"),
        ("--env.max_parallel_tasks=2", "--env.max_parallel_tasks=2: not used by lerobot-train"),
        ("--eval.measure_batch_size=true", "--eval.measure_batch_size=True: not used by lerobot-train"),
    ],
)
def test_eval_flags_that_only_mean_something_to_lerobot_eval_are_refused(tmp_path, flag, message):
    with pytest.raises(CliError, match=f"^{message}"):
        config(tmp_path, flag)


def test_in_loop_evaluation_runs_at_the_batch_size_measured_for_its_workload(tmp_path, monkeypatch, caplog):
    """Settled the way lerobot-eval settles it: a measurement remembered for this env, policy
    type and device on this machine stands in for --eval.batch_size=0's core-count rule."""
    from lerobot.evaluation.run.batching.remembered import BatchRate, RememberedBatchSize, remember_batch_size
    from lerobot.evaluation.run.batching.settle import BatchRun
    from lerobot.evaluation.run.plan import RunPlan
    from lerobot.evaluation.run.rollout import RolloutSettings

    monkeypatch.setenv("LEROBOT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("lerobot.evaluation.run.batching.layout.usable_cores", lambda: 4)  # the rule: 2 envs
    cfg = config(
        tmp_path, "--eval.n_episodes=2", "--eval.max_episodes_rendered=0", "--eval.use_async_envs=false"
    )
    trainee = build_trainee(cfg, make_frames())
    plan = RunPlan.from_config(cfg.env.tasks(), cfg.eval)
    workload = BatchRun(cfg.eval, cfg.env, cfg.policy, trainee.policy, RolloutSettings(), plan).workload()
    remember_batch_size(workload, RememberedBatchSize(1, 1, "2026-12-07T03:00:00", (BatchRate(1, 500.0),)))

    with caplog.at_level("INFO", logger="lerobot.evaluation"):
        evaluate_in_loop(cfg, trainee, step=1, wandb_run=None)

    assert "batch size 1 and row groups 1: measured for this workload on this machine" in caplog.text
    assert "envs per task: 1 (in-process)" in caplog.text
    info = json.loads((cfg.output_dir / "eval" / "step_1" / "eval_info.json").read_text())
    assert info["overall"]["n_episodes"] == 2


def echo_frames(n: int = 8) -> EpisodeFrames:
    """Episodes with the echo benchmark's features (2-d state, env state and actions), the
    actions near 0: an untrained policy's actions come out near 0 too."""
    rng = np.random.default_rng(0)
    return EpisodeFrames(
        info={"fps": 10},
        vectors={
            "observation.state": rng.normal(size=(n, 2)).astype(np.float32),
            "observation.environment_state": rng.normal(size=(n, 2)).astype(np.float32),
            "action": rng.normal(scale=0.01, size=(n, 2)).astype(np.float32),
        },
        images={},
        episode_starts=np.array([0, n // 2]),
        episode_lengths=np.array([n // 2, n - n // 2]),
        episode_indices=np.arange(2),
    )


def test_in_loop_evaluation_runs_a_benchmarks_own_envs_with_its_env_processors(tmp_path, echo_plugin):
    """The echo plugin (tests/plugin_packages.py) builds its own envs and shifts the env's
    actions by +100 in its env postprocessor; its step's reward is the action's first component."""
    cfg = parse_config(
        TrainPipelineConfig,
        [
            f"--dataset.root={tmp_path}",
            f"--output_dir={tmp_path / 'out'}",
            "--env.type=echo",
            *TINY_ACT,
            "--eval.n_episodes=2",
            "--eval.batch_size=2",
            "--eval.use_async_envs=false",
            "--eval.max_episodes_rendered=0",
        ],
    )
    evaluate_in_loop(cfg, build_trainee(cfg, echo_frames()), step=1, wandb_run=None)

    info = json.loads((cfg.output_dir / "eval" / "step_1" / "eval_info.json").read_text())
    assert [(t["task_group"], t["task_id"], t["task"]) for t in info["per_task"]] == [
        ("echo", 0, "echo-0"),
        ("echo", 1, "echo-1"),
    ]
    assert all(e["n_steps"] == 3 and abs(e["sum_reward"] - 300) < 1 for e in info["per_episode"])
