"""PushT env: task and flags, LeRobot's observations, seeding, and what LeRobot 0.6.1's env returns."""

import json
from pathlib import Path

import numpy as np
import pytest

from lerobot.envs.factory import make_env, make_env_config
from lerobot.envs.pusht import PushtEnvConfig
from lerobot.envs.pusht.env import PushtEnv
from lerobot.processor.observation import observation_to_batch
from lerobot.scripts.lerobot_eval import main
from lerobot.utils.errors import ConfigError

LEROBOT_ENV = Path(__file__).resolve().parents[1] / "fixtures" / "envs" / "pusht_lerobot.npz"
OBS_TYPES = ("pixels_agent_pos", "environment_state_agent_pos")


def test_task_accepts_lerobots_spellings_and_rejects_others():
    assert PushtEnvConfig().task_groups() == {"pusht": ["PushT-v0"]}
    assert PushtEnvConfig(task="gym_pusht/PushT-v0").task == "PushT-v0"
    with pytest.raises(
        ConfigError, match=r"^--env.task='PushT-v1': unknown PushT task; the one task is 'PushT-v0'$"
    ):
        PushtEnvConfig(task="PushT-v1")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"obs_type": "pixels"},
            "--env.obs_type='pixels': must be one of pixels_agent_pos, environment_state_agent_pos, state",
        ),
        ({"observation_height": 0}, "--env.observation_height=0: must be an integer >= 1"),
        ({"visualization_width": 64}, "--env.visualization_width=64: must be an integer >= 96"),
        ({"episode_length": 0}, "--env.episode_length=0: must be an integer >= 1"),
    ],
)
def test_bad_settings_fail_in_one_line_naming_the_flag(kwargs, message):
    with pytest.raises(ConfigError) as err:
        PushtEnvConfig(**kwargs)
    assert str(err.value) == message


def test_defaults_follow_lerobot_and_the_factory_is_lazy():
    cfg = make_env_config("pusht")
    [task] = cfg.tasks()
    assert (task.name, task.fps, task.max_steps) == ("PushT-v0", 10, 300)
    assert task.description == "Push the T-shaped block onto the T-shaped target."
    features = cfg.policy_features()
    assert features["observation.image"].shape == (3, 96, 96)
    assert features["observation.state"].shape == (2,) and features["action"].shape == (2,)
    env = make_env(cfg, n_envs=2)["pusht"][0]  # LeRobot's group name, task 0
    assert not env.started and env.single_action_space.high.tolist() == [512.0, 512.0]
    assert PushtEnv()._sim is None


@pytest.mark.parametrize("obs_type", ["environment_state_agent_pos", "state"])
def test_observations_match_the_config_spaces_and_features(obs_type):
    """The observation types tests/envs/test_contract.py does not run (it runs the default)."""
    cfg = PushtEnvConfig(obs_type=obs_type)
    env = cfg.env_factory("PushT-v0")()
    try:
        obs, info = env.reset(seed=0)
        assert cfg.observation_space().contains(obs) and info["is_success"] is False
        obs, reward, terminated, truncated, info = env.step(np.array([256.0, 256.0], np.float32))
        assert cfg.observation_space().contains(obs) and 0.0 <= reward <= 1.0
        batch = observation_to_batch({k: v[None] for k, v in obs.items()})
        expected = {k: v.shape for k, v in cfg.policy_features().items() if k != "action"}
        assert {k: tuple(v.shape[1:]) for k, v in batch.items()} == expected
        assert env.render().shape == (384, 384, 3)
    finally:
        env.close()


@pytest.mark.parametrize("obs_type", OBS_TYPES)
def test_same_observations_and_rewards_as_lerobots_env(obs_type):
    """LeRobot 0.6.1's PushT env (its make_env, two envs reset with seeds 1000 and 1001, as its
    eval seeds a batch) against ours, one env per seed, for the same actions."""
    recorded = np.load(LEROBOT_ENV)
    best_reward = 0.0
    for row, seed in enumerate(recorded["seeds"]):
        env = PushtEnv(obs_type=obs_type)
        try:
            observations, rewards, successes = [env.reset(seed=int(seed))[0]], [], []
            for action in recorded["actions"][:, row]:
                obs, reward, _, _, info = env.step(action)
                observations.append(obs)
                rewards.append(reward)
                successes.append(info["is_success"])
        finally:
            env.close()
        for key in observations[0]:
            expected = recorded[f"{obs_type}.{key}"][row]
            got = np.stack([o[key] for o in observations])
            if key == "pixels":
                np.testing.assert_array_equal(got, expected)
            else:  # LeRobot hands float64 to its policies as float32, as we do
                np.testing.assert_array_equal(got, expected.astype(np.float32))
        np.testing.assert_array_equal(rewards, recorded[f"{obs_type}.reward"][row])
        np.testing.assert_array_equal(successes, recorded[f"{obs_type}.is_success"][row])
        best_reward = max(best_reward, *rewards)
    assert best_reward > 0  # a block overlaps the target: coverage itself is compared, not only zeros


def per_episode(out: Path) -> list[tuple]:
    info = json.loads((out / "eval_info.json").read_text())
    return [(e["episode_index"], e["seed"], e["sum_reward"], e["n_steps"]) for e in info["per_episode"]]


def test_episodes_are_the_same_for_any_batch_size_sync_or_async(tmp_path):
    flags = [
        "--policy.type=random",
        "--env.type=pusht",
        "--env.episode_length=6",
        "--eval.n_episodes=3",
        "--seed=7",
    ]
    runs = {
        "one_env": ["--eval.batch_size=1", "--eval.max_episodes_rendered=1"],
        "two_async": ["--eval.batch_size=2", "--eval.use_async_envs=true", "--eval.max_episodes_rendered=0"],
        "two_sync": ["--eval.batch_size=2", "--eval.use_async_envs=false", "--eval.max_episodes_rendered=0"],
    }
    results = {}
    for name, extra in runs.items():
        assert main([*flags, *extra, f"--output_dir={tmp_path / name}"]) == 0
        results[name] = per_episode(tmp_path / name)
    assert results["one_env"] == results["two_async"] == results["two_sync"]
    assert [seed for _, seed, _, _ in results["one_env"]] == [7, 8, 9]
    assert (tmp_path / "one_env" / "videos" / "pusht_0" / "eval_episode_0.mp4").stat().st_size > 0
