"""An env config written LeRobot's way (a gym id, gym_kwargs, features) needs nothing else."""

from __future__ import annotations

import importlib
import pickle
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.configs.types import FeatureType, PolicyFeature
from tests.plugin_packages import write_plugins


@pytest.fixture(scope="module")
def toy_config_class(tmp_path_factory):
    """The plugin's config class, registered for this module's tests only."""
    site = write_plugins(tmp_path_factory.mktemp("site"))
    sys.path.insert(0, str(site))
    sys.modules.pop("lerobot_env_toy", None)  # imported afresh, so that it registers its type
    try:
        yield importlib.import_module("lerobot_env_toy").ToyEnv
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("lerobot_env_toy", None)
        for name in ("toy", "toy_bare"):
            EnvConfig._choice_registry.pop(name, None)


def test_one_task_named_after_the_env_type_with_the_envs_own_description(toy_config_class):
    assert toy_config_class().tasks() == (
        TaskSpec("toy", 0, "Reach-v0", "move the point to the goal", fps=10, max_steps=6),
    )


def test_features_come_from_lerobots_features_map(toy_config_class):
    assert toy_config_class().policy_features() == {
        "action": PolicyFeature(FeatureType.ACTION, (2,)),
        "observation.state": PolicyFeature(FeatureType.STATE, (2,)),
    }


def test_the_env_factory_pickles_for_worker_processes_and_builds_the_gym_env(toy_config_class):
    cfg = toy_config_class(episode_length=3)
    factory = pickle.loads(pickle.dumps(cfg.env_factory("Reach-v0")))
    env = factory()
    try:
        env.reset(seed=0)
        truncated = [env.step(np.zeros(2, np.float32))[3] for _ in range(3)]
        assert truncated == [False, False, True]  # gym_kwargs' max_episode_steps
    finally:
        env.close()
    assert cfg.action_space().shape == (2,) and "agent_pos" in cfg.observation_space().spaces


def test_without_features_they_are_read_from_the_spaces(toy_config_class):
    @EnvConfig.register_subclass("toy_bare")
    @dataclass
    class Bare(EnvConfig):
        task: str = "Reach-v0"

        @property
        def package_name(self) -> str:
            return "gym_toy"  # registers the id; not gym_toy_bare, LeRobot's default name

        @property
        def gym_id(self) -> str:
            return f"gym_toy/{self.task}"

    assert Bare().tasks()[0].group == "toy_bare"
    assert Bare().policy_features() == {
        "action": PolicyFeature(FeatureType.ACTION, (2,)),
        "observation.state": PolicyFeature(FeatureType.STATE, (2,)),
    }
