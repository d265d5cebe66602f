"""ALOHA env: tasks and flags, LeRobot's observations, seeding, and what LeRobot 0.6.1's env returns."""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from lerobot.envs.aloha import AlohaEnvConfig
from lerobot.envs.aloha.env import AlohaEnv
from lerobot.envs.aloha.tasks import resolve_tasks
from lerobot.envs.factory import make_env, make_env_config
from lerobot.processor.observation import observation_to_batch
from lerobot.utils.errors import ConfigError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "envs"
TINY = {"observation_height": 24, "observation_width": 32}


def digest(frame: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()


def test_tasks_take_lerobots_names_prefixes_and_comma_lists():
    assert resolve_tasks("AlohaTransferCube-v0") == ["AlohaTransferCube-v0"]
    assert resolve_tasks("gym_aloha/AlohaInsertion-v0, AlohaTransferCube-v0") == [
        "AlohaInsertion-v0",
        "AlohaTransferCube-v0",
    ]
    with pytest.raises(ConfigError) as err:
        AlohaEnvConfig(task="AlohaInsert-v0")
    assert str(err.value) == (
        "--env.task='AlohaInsert-v0': unknown ALOHA task; did you mean 'AlohaInsertion-v0'? "
        "tasks: AlohaInsertion-v0, AlohaTransferCube-v0"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"obs_type": "depth"}, "--env.obs_type='depth': must be one of pixels_agent_pos, pixels, state"),
        ({"observation_width": 0}, "--env.observation_width=0: must be an integer >= 1"),
        ({"episode_length": -1}, "--env.episode_length=-1: must be an integer >= 1"),
    ],
)
def test_bad_settings_fail_in_one_line_naming_the_flag(kwargs, message):
    with pytest.raises(ConfigError) as err:
        AlohaEnvConfig(**kwargs)
    assert str(err.value) == message


def test_defaults_follow_lerobot_and_the_factory_is_lazy():
    cfg = make_env_config("aloha", task="AlohaTransferCube-v0,AlohaInsertion-v0")
    tasks = cfg.tasks()
    assert [(t.name, t.fps, t.max_steps) for t in tasks] == [
        ("AlohaTransferCube-v0", 50, 400),
        ("AlohaInsertion-v0", 50, 400),
    ]
    assert tasks[1].description == "Insert the peg into the socket."
    features = cfg.policy_features()
    assert features["observation.images.top"].shape == (3, 480, 640)
    assert features["observation.state"].shape == (14,) and features["action"].shape == (14,)
    envs = make_env(cfg, n_envs=2)
    assert list(envs) == ["aloha"] and list(envs["aloha"]) == [0, 1]  # LeRobot's group name
    env = envs["aloha"][1]
    assert env.task.name == "AlohaInsertion-v0"
    assert not env.started
    assert AlohaEnv("AlohaInsertion-v0")._sim is None


@pytest.mark.parametrize("obs_type", ["pixels", "state"])
def test_observations_match_the_config_spaces_and_features(obs_type):
    """The observation types tests/envs/test_contract.py does not run (it runs the default)."""
    cfg = AlohaEnvConfig(task="AlohaInsertion-v0", obs_type=obs_type, **TINY)
    env = cfg.env_factory("AlohaInsertion-v0")()
    try:
        obs, _ = env.reset(seed=0)
        assert cfg.observation_space().contains(obs)
        batch = observation_to_batch(
            {
                k: ({c: f[None] for c, f in v.items()} if isinstance(v, dict) else v[None])
                for k, v in obs.items()
            }
        )
        expected = {k: v.shape for k, v in cfg.policy_features().items() if k != "action"}
        assert {k: tuple(v.shape[1:]) for k, v in batch.items()} == expected
        assert env.render().shape == (24, 32, 3)
    finally:
        env.close()


def test_the_seed_places_the_objects():
    """Another seed, another placement, within gym-aloha's ranges. (The same seed, the same
    start, whatever ran before: tests/envs/test_contract.py.)"""
    env = AlohaEnv("AlohaTransferCube-v0", obs_type="state")
    try:
        first, _ = env.reset(seed=3)
        other, _ = env.reset(seed=4)
        assert not np.array_equal(first["environment_state"], other["environment_state"])
        cube = first["environment_state"]
        assert 0.0 <= cube[0] <= 0.2 and 0.4 <= cube[1] <= 0.6 and not cube[7:].any()
    finally:
        env.close()


@pytest.mark.slow
def test_transfer_cube_episode_matches_lerobots_env_to_the_success():
    """LeRobot 0.6.1's env replayed our scripted transfer-cube episode (seed 1000) to its
    success; ours gives the same joints, rewards and success at every step, and the same top
    camera images (LeRobot's 480x640) at the first steps."""
    recorded = np.load(FIXTURES / "aloha_lerobot.npz")
    actions = np.load(FIXTURES / "aloha_scripted_actions.npz")["transfer_cube"]
    states, rewards, successes = replay(AlohaEnv("AlohaTransferCube-v0", obs_type="state"), 1000, actions)
    np.testing.assert_array_equal(
        states, recorded["transfer_cube.agent_pos"][: len(states)].astype(np.float32)
    )
    np.testing.assert_array_equal(rewards, recorded["transfer_cube.reward"])
    np.testing.assert_array_equal(successes, recorded["transfer_cube.is_success"])
    assert successes[-1] and rewards[-1] == 4.0 and not any(successes[:-1])
    frames = first_frames(
        AlohaEnv("AlohaTransferCube-v0"), 1000, actions, len(recorded["transfer_cube.top_sha256"])
    )
    assert frames == list(recorded["transfer_cube.top_sha256"])


def test_insertion_images_and_joints_match_lerobots_env():
    recorded = np.load(FIXTURES / "aloha_lerobot.npz")
    actions = np.load(FIXTURES / "aloha_scripted_actions.npz")["insertion"]
    env = AlohaEnv("AlohaInsertion-v0")
    states, rewards, _ = replay(env, int(recorded["insertion.seed"]), actions, close=False)
    try:
        np.testing.assert_array_equal(states, recorded["insertion.agent_pos"].astype(np.float32))
        np.testing.assert_array_equal(rewards, recorded["insertion.reward"])
    finally:
        env.close()
    frames = first_frames(
        AlohaEnv("AlohaInsertion-v0"), int(recorded["insertion.seed"]), actions, len(actions) + 1
    )
    assert frames == list(recorded["insertion.top_sha256"])


def replay(env: AlohaEnv, seed: int, actions: np.ndarray, close: bool = True):
    """States after the reset and after every step that did not end the episode; rewards and
    successes of every step, up to the end of the episode."""
    try:
        obs, _ = env.reset(seed=seed)
        states, rewards, successes = [obs["agent_pos"]], [], []
        for action in actions:
            obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
            successes.append(info["is_success"])
            if terminated or truncated:
                break
            states.append(obs["agent_pos"])
        return np.stack(states), np.array(rewards), np.array(successes)
    finally:
        if close:
            env.close()


def first_frames(env: AlohaEnv, seed: int, actions: np.ndarray, n: int) -> list[str]:
    try:
        obs, _ = env.reset(seed=seed)
        frames = [digest(obs["pixels"]["top"])]
        for action in actions[: n - 1]:
            frames.append(digest(env.step(action)[0]["pixels"]["top"]))
        return frames
    finally:
        env.close()


def test_a_step_without_images_renders_nothing(monkeypatch):
    """What the blind step saves: the camera render. (That it simulates the same step, with a
    black image, and that render() still shows the real view: tests/envs/test_contract.py.)"""
    env = AlohaEnv("AlohaInsertion-v0", **TINY)
    try:
        first, _ = env.reset(seed=2)
        renders = []
        original = AlohaEnv.render
        monkeypatch.setattr(AlohaEnv, "render", lambda self: renders.append(self) or original(self))
        for _ in range(2):
            env.step_without_images(first["agent_pos"] + 0.05)
        assert renders == []
        env.step(first["agent_pos"])
        assert renders == [env]
    finally:
        env.close()
