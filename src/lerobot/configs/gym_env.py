"""How an env config's envs are built: from an entry point, LeRobot's way from a gym id, or by
the config itself.

The built-in benchmarks name their env class by an entry point (`"module:Class"`, Gymnasium's
registry form), imported inside the worker that builds the env (`make_entry_point_env`).
LeRobot's "adding a benchmark" pattern registers an `EnvConfig` subclass that names a
gymnasium id (`gym_<type>/<task>`, the package `gym_<type>` registers it) and the keyword
arguments of `gym.make`. Such a config runs here without implementing `EnvConfig`'s other
methods: the env is built by `gym.make` inside each worker, and what the run needs to know
beforehand (spaces, instruction, step limit) is read once from one env built in this process
and closed again (`probe`). A config that overrides `create_envs` (LeRobot's way to build a
benchmark's vector envs itself) is read the same way from one build of its vector envs, one env
per task (`probe_created_envs`). gymnasium is imported only when one of these is used.
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
    name: str = ""
    """The task's name, where the env states one (a vector env built by a config's own
    `create_envs`, in its metadata or its sub-envs' `task`)."""


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


def probe_created_envs(
    create_envs: Callable[..., Mapping[str, Mapping[int, Any]]],
) -> dict[tuple[str, int], GymEnvInfo]:
    """{(suite, task_id): what the run needs of that task}, read from the vector envs a config's
    own `create_envs` builds with one env each in this process, closed again."""
    envs = create_envs(n_envs=1, use_async_envs=False)
    try:
        return {
            (group, task_id): vector_env_info(env)
            for group, by_id in envs.items()
            for task_id, env in by_id.items()
        }
    finally:
        for by_id in envs.values():
            for env in by_id.values():
                env.close()


def vector_env_info(env: Any) -> GymEnvInfo:
    """A gymnasium vector env's task, as LeRobot reads it: name and instruction from its metadata
    (`task`, `task_description`), else from its first sub-env's attributes; the step limit of
    its sub-envs (`vector_max_episode_steps`)."""
    metadata = env.metadata or {}
    name = metadata.get("task") or first_sub_env_attribute(env, "task")
    description = metadata.get("task_description") or first_sub_env_attribute(env, "task_description")
    fps = metadata.get("render_fps")
    return GymEnvInfo(
        observation_space=env.single_observation_space,
        action_space=env.single_action_space,
        task_description=description if isinstance(description, str) else "",
        max_episode_steps=vector_max_episode_steps(env),
        render_fps=int(fps) if fps else None,
        name=name if isinstance(name, str) else "",
    )


def vector_max_episode_steps(env: Any) -> int | None:
    """The step limit of a vector env's episodes, when it states one: its first sub-env's
    registered spec (a SyncVectorEnv), its own spec, else its sub-envs' `_max_episode_steps`."""
    import gymnasium as gym
    import numpy as np

    first = env.envs[0] if isinstance(env, gym.vector.SyncVectorEnv) else None
    spec = getattr(first, "spec", None) or getattr(env, "spec", None)
    limit = getattr(spec, "max_episode_steps", None)
    if limit is None:
        limit = first_sub_env_attribute(env, "_max_episode_steps")
    return int(limit) if isinstance(limit, int | np.integer) else None


def first_sub_env_attribute(env: Any, name: str) -> Any:
    """A vector env's first sub-env's attribute `name` (through its wrappers), or None."""
    values = sub_env_attribute(env, name)
    return values[0] if values else None


def sub_env_attribute(env: Any, name: str) -> list[Any] | None:
    """Every sub-env's attribute `name` (looked up through its wrappers), or None when they
    lack it.

    Asked first whether they have it: a gymnasium AsyncVectorEnv shuts a worker down for good
    when a call in it raises, so probing with `call` and catching AttributeError would break it.
    """
    sub_envs = getattr(env, "envs", None)
    if sub_envs is not None:  # a SyncVectorEnv: ask the sub-envs directly
        if not all(sub.has_wrapper_attr(name) for sub in sub_envs):
            return None
        return [sub.get_wrapper_attr(name) for sub in sub_envs]
    try:
        if not all(env.call("has_wrapper_attr", name)):
            return None
        return list(env.call(name))
    except (AttributeError, NotImplementedError):  # a vector env without `call`
        return None
