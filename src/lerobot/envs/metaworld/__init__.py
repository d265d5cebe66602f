"""Meta-World: 50 single-arm Sawyer manipulation tasks (MuJoCo).

Tasks: the 50 v3 tasks of Meta-World 3.0.0 (`push-v3`, ..., also spelled `metaworld-push-v3`),
grouped by LeRobot's difficulty split into `easy` (28), `medium` (11), `hard` (6) and
`very_hard` (5), plus `mt50` (all). `--env.task` takes one task, one group or a comma list.
Randomisation: object and goal positions are drawn uniformly from the task's reset space.
Seeding: the env's generator is re-seeded at every `reset(seed=...)`; an episode's initial
state depends on its seed alone (Meta-World's own `reset` ignores its seed argument, and
without `seeded_rand_vec` draws from NumPy's global generator).
Success: Meta-World's `info["success"]`; like LeRobot, the episode ends at the first success.
Horizon: 500 steps (Meta-World's max_path_length).
Observations (LeRobot's convention, so checkpoints trained on its Meta-World data load):
`pixels` (corner2 camera, 480x480, upright) and `agent_pos` (hand xyz + gripper opening), plus
the full 39-d state as `environment_state`, which the scripted experts read.
Names: `--env.task=metaworld-push-v3` keeps that spelling as the task's group, so results,
video folders and CI keys say `metaworld-push-v3_0`, as LeRobot writes them.

The package: this module holds the config, `tasks` the task table and constants (neither
imports gymnasium nor NumPy, so a command line is checked before either loads), `env` the
gymnasium env, which the config names by its entry point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from lerobot.configs.env import EnvConfig, env_class_getter, parse_name_list
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.metaworld.tasks import (
    ACTION_DIM,
    AGENT_POS_DIM,
    CAMERAS,
    FULL_STATE_DIM,
    MAX_PATH_LENGTH,
    OBS_TYPES,
    resolve_task_groups,
    task_description,
)
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGE, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import ConfigError, require_choice


@EnvConfig.register_subclass("metaworld")
@dataclass
class MetaworldEnvConfig(EnvConfig):
    worker_preload: ClassVar[tuple[str, ...]] = ("metaworld",)
    simulator_distributions: ClassVar[tuple[str, ...]] = ("metaworld", "mujoco")
    native_bindings: ClassVar[tuple[str, ...]] = ("mujoco",)
    env_entry_point: ClassVar[str] = "lerobot.envs.metaworld.env:MetaworldEnv"
    extra: ClassVar[str] = "metaworld"
    extra_modules: ClassVar[tuple[str, ...]] = ("metaworld", "mujoco")

    task: str = "push-v3"
    """A task (`push-v3`), a group (`easy`, `medium`, `hard`, `very_hard`, `mt50`) or a comma list."""
    fps: int = 80
    """Frame rate of the recorded videos (Meta-World's render fps)."""
    obs_type: str = "pixels_agent_pos"
    """`pixels_agent_pos` (camera image + 4-d hand/gripper state), `pixels`, or `state` (full 39-d)."""
    camera_names: list[str] | str = field(default_factory=lambda: ["corner2"])
    """Cameras to render, e.g. `[corner2]` or `[corner2,gripperPOV]` (a single name works too);
    one becomes `observation.image`, several `observation.images.<name>`."""
    observation_height: int = 480
    """Height of the rendered camera images, in pixels."""
    observation_width: int = 480
    """Width of the rendered camera images, in pixels."""
    episode_length: int = MAX_PATH_LENGTH
    """Step limit per episode (at most Meta-World's 500)."""
    terminate_on_success: bool = True
    """End an episode at its first success (LeRobot's protocol)."""
    fast_render: bool = False
    """Render without shadows, reflections and anti-aliasing: faster on software GL, but the
    images differ from the default ones, so use it only for policies trained with it."""
    multitask_eval: bool = True
    """LeRobot's flag, accepted so its command lines run; LeRobot 0.6.1 reads it nowhere, nor
    does this build: a comma list or group in --env.task is what evaluates several tasks."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require_choice("--env.obs_type", self.obs_type, OBS_TYPES)
        self.camera_names = parse_name_list(self.camera_names, "--env.camera_names", CAMERAS)
        for flag, value in (
            ("observation_height", self.observation_height),
            ("observation_width", self.observation_width),
        ):
            if value <= 0:
                raise ConfigError(f"--env.{flag}={value}: must be a positive number of pixels")
        if not 0 < self.episode_length <= MAX_PATH_LENGTH:
            raise ConfigError(f"--env.episode_length={self.episode_length}: must be in 1..{MAX_PATH_LENGTH}")
        self.task_groups()  # reject unknown tasks now, before anything starts

    @classmethod
    def tiny_config(cls) -> MetaworldEnvConfig:
        return cls(task="reach-v3", observation_height=32, observation_width=32, episode_length=3)

    def task_groups(self) -> dict[str, list[str]]:
        return resolve_task_groups(self.task)

    def task_description(self, task_name: str) -> str:
        return task_description(task_name)

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        return {
            "task": task_name,
            "obs_type": self.obs_type,
            "camera_names": tuple(self.camera_names),
            "observation_height": self.observation_height,
            "observation_width": self.observation_width,
            "episode_length": self.episode_length,
            "terminate_on_success": self.terminate_on_success,
            "fast_render": self.fast_render,
        }

    def policy_features(self) -> dict[str, PolicyFeature]:
        features = {ACTION: PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
        state_dim = FULL_STATE_DIM if self.obs_type == "state" else AGENT_POS_DIM
        if self.obs_type != "pixels":
            features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (state_dim,))
        features[OBS_ENV_STATE] = PolicyFeature(FeatureType.ENV, (FULL_STATE_DIM,))
        if self.obs_type != "state":
            image = PolicyFeature(FeatureType.VISUAL, (3, self.observation_height, self.observation_width))
            if len(self.camera_names) == 1:
                features[OBS_IMAGE] = image
            else:
                features.update({f"{OBS_IMAGES}.{cam}": image for cam in self.camera_names})
        return features


__getattr__ = env_class_getter(
    __name__, "MetaworldEnv", MetaworldEnvConfig
)  # LeRobot's import path of the env class
