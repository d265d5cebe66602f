"""LeRobot's env helpers (`lerobot.envs.utils`) on real envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from lerobot.envs.freeze import NEW_ROLLOUT_OPTION
from lerobot.envs.metaworld import MetaworldEnvConfig
from lerobot.envs.pusht import PushtEnvConfig
from lerobot.envs.utils import (
    FreezeAfterEpisodeEnd,
    check_env_attributes_and_types,
    env_to_policy_features,
    freeze_after_episode_end,
    parse_camera_names,
)


def test_env_to_policy_features_is_what_a_policy_is_checked_against():
    cfg = MetaworldEnvConfig(obs_type="pixels_agent_pos", observation_height=64, observation_width=64)
    features = env_to_policy_features(cfg)
    assert features == cfg.policy_features()
    assert features["observation.image"].shape == (3, 64, 64) and features["action"].shape == (4,)


def test_camera_names_from_a_comma_string_or_a_list():
    assert parse_camera_names(" top, wrist ,") == ["top", "wrist"]
    assert parse_camera_names(("top",)) == ["top"]
    with pytest.raises(ValueError, match="empty list"):
        parse_camera_names(" , ")
    with pytest.raises(TypeError, match="must be str or sequence"):
        parse_camera_names(3)


def test_a_frozen_env_replays_its_last_step_until_a_new_rollout():
    """PushT with a 3-step limit: after the end, steps and autoresets simulate nothing."""
    cfg = PushtEnvConfig(obs_type="state", episode_length=3)
    env = freeze_after_episode_end(cfg.env_factory("PushT-v0"))()
    assert isinstance(env, FreezeAfterEpisodeEnd)
    try:
        env.reset(seed=0)
        for _ in range(3):
            last = env.step(np.array([200.0, 200.0]))
        assert last[3] and env.is_frozen
        again = env.step(np.array([100.0, 100.0]))
        np.testing.assert_array_equal(again[0]["agent_pos"], last[0]["agent_pos"])
        assert again[1] == 0.0
        np.testing.assert_array_equal(env.reset(seed=1)[0]["agent_pos"], last[0]["agent_pos"])
        fresh, _ = env.reset(seed=1, options={NEW_ROLLOUT_OPTION: True})
        assert not env.is_frozen and not np.array_equal(fresh["agent_pos"], last[0]["agent_pos"])
    finally:
        env.close()


def test_envs_without_a_task_are_warned_about():
    plain = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])
    with pytest.warns(UserWarning, match="does not have 'task_description' and 'task'"):
        check_env_attributes_and_types(plain)
    plain.close()
