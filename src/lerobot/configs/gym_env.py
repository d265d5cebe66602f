"""How an env config's envs are built: from an entry point, or LeRobot's way from a gym id.

The built-in benchmarks name their env class by an entry point (`"module:Class"`, Gymnasium's
registry form), imported inside the worker that builds the env (`make_entry_point_env`).
LeRobot's "adding a benchmark" pattern registers an `EnvConfig` subclass that names a
gymnasium id (`gym_<type>/<task>`, the package `gym_<type>` registers it) and the keyword
arguments of `gym.make`. Such a config runs here without implementing `EnvConfig`'s other
methods: the env is built by `gym.make` inside each worker, and what the run needs to know
beforehand (spaces, instruction, step limit) is read once from one env built in this process
and closed again (`probe`). gymnasium is imported only when one of these is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGE, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import ConfigError

# Env observation keys and the policy keys LeRobot maps them to (as the rollout does).
STATE_KEYS = {"agent_pos": OBS_STATE, "environment_state": OBS_ENV_STATE}


@dataclass(frozen=True)
class GymEnvInfo:
    """What a run needs to know about an env before its workers start."""

    observation_space: Any
    action_space: Any
    task_description: str
    max_episode_steps: int | None
    render_fps: int | None


def make_gym_env(gym_id: str, package: str, disable_env_checker: bool, gym_kwargs: Mapping[str, Any]):
    """`gym.make(gym_id, **gym_kwargs)`, importing `package` first when it registers the id."""
    import gymnasium as gym

    if gym_id not in gym.registry:
        try:
            importlib.import_module(package)
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"--env.task: gym id {gym_id!r} is not registered and its package {package!r} is not "
                f"installed ({exc})"
            ) from None
        if gym_id not in gym.registry:
            raise ConfigError(f"--env.task: {package} was imported but registers no gym id {gym_id!r}")
    return gym.make(gym_id, disable_env_checker=disable_env_checker, **gym_kwargs)


def load_entry_point(entry_point: str) -> Any:
    """The object `"package.module:Name"` names, its module imported now."""
    module_name, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module_name), name)


def make_entry_point_env(entry_point: str, kwargs: Mapping[str, Any]) -> Any:
    """One env of the class `entry_point` names (what a benchmark config's factory runs in a worker)."""
    return load_entry_point(entry_point)(**kwargs)


def probe(env_factory: Callable[[], Any]) -> GymEnvInfo:
    """Build one env, read what the run needs from it, close it."""
    env = env_factory()
    try:
        unwrapped = getattr(env, "unwrapped", env)
        description = getattr(unwrapped, "task_description", None) or getattr(unwrapped, "task", None)
        spec = getattr(env, "spec", None)
        limit = getattr(spec, "max_episode_steps", None) or getattr(unwrapped, "_max_episode_steps", None)
        fps = (getattr(env, "metadata", None) or {}).get("render_fps")
        return GymEnvInfo(
            observation_space=env.observation_space,
            action_space=env.action_space,
            task_description=description if isinstance(description, str) else "",
            max_episode_steps=int(limit) if limit else None,
            render_fps=int(fps) if fps else None,
        )
    finally:
        env.close()


def features_from_lerobot_map(
    features: Mapping[str, PolicyFeature], features_map: Mapping[str, str]
) -> dict[str, PolicyFeature]:
    """LeRobot's `features` (env keys, images channel-last) under the policy keys of its
    `features_map`, images channel-first, as policies see them."""
    policy_features = {}
    for key, feature in features.items():
        shape = tuple(feature.shape)
        if feature.type is FeatureType.VISUAL and len(shape) == 3:
            shape = (shape[2], shape[0], shape[1])
        policy_features[features_map.get(key, key)] = PolicyFeature(feature.type, shape)
    return policy_features


def features_from_spaces(observation_space: Any, action_space: Any) -> dict[str, PolicyFeature]:
    """Policy features of a gymnasium env, by the keys the rollout maps its observations to."""
    features = {ACTION: PolicyFeature(FeatureType.ACTION, tuple(action_space.shape))}
    entries = dict(getattr(observation_space, "spaces", {}) or {})
    pixels = entries.pop("pixels", None)
    cameras = dict(pixels.spaces) if hasattr(pixels, "spaces") else {None: pixels} if pixels else {}
    for camera, space in cameras.items():
        height, width, channels = space.shape
        key = OBS_IMAGE if camera is None else f"{OBS_IMAGES}.{camera}"
        features[key] = PolicyFeature(FeatureType.VISUAL, (channels, height, width))
    for env_key, space in entries.items():
        if env_key in STATE_KEYS and getattr(space, "shape", None):
            kind = FeatureType.ENV if env_key == "environment_state" else FeatureType.STATE
            features[STATE_KEYS[env_key]] = PolicyFeature(kind, tuple(space.shape))
    return features
