"""robomimic: Lift, Can, Square, Transport and ToolHang on robosuite, under robomimic's published
evaluation settings.

Tasks (`tasks.TASKS`): `lift`, `can`, `square`, `transport`, `tool_hang` (robosuite's `Lift`,
`PickPlaceCan`, `NutAssemblySquare`, `TwoArmTransport`, `ToolHang`); `--env.task` takes one, a
comma list, or `all`, each task evaluated under its own name.
Defaults are robomimic's image setting for each task, written once in the task table with
where each value comes from: the OSC_POSE controller at 20 Hz, robomimic's cameras at 84x84
(ToolHang 240x240), its rollout horizon (400; 700 for Transport and ToolHang), sparse reward.
Episodes end at the first success, as robomimic's rollouts do (`--env.terminate_on_success`).
Seeding: robosuite draws object placement and the robot's initial joint noise from NumPy's
global generator; `reset(seed=s)` seeds it with s first (one env per process), so episode e of
a run starts from seed + e, whatever the batch.
Observations (LeRobot's form): each camera `observation.images.<camera>` (upright, as
robomimic's datasets store them: robosuite renders them upside down), `observation.state` the
robot's proprioception in robomimic's order (eef position, eef quaternion, gripper finger
positions; per arm), `observation.environment_state` robosuite's `object-state` (robomimic's
`object`). Actions: OSC_POSE deltas and the gripper, 7 per arm, in [-1, 1].
Success: the env's `_check_success()`.

The package: this module holds the config, `tasks` the task table (neither imports gymnasium,
NumPy nor robosuite), `env` the gymnasium env.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from lerobot.configs.env import EnvConfig, PerTaskSpaces, env_class_getter, parse_name_list
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.robomimic.tasks import (
    FPS,
    OBS_TYPES,
    TASKS,
    check_cameras,
    check_reward_shaping,
    check_robosuite_has,
    resolve_tasks,
)
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import require_at_least, require_choice


@EnvConfig.register_subclass("robomimic")
@dataclass
class RobomimicEnvConfig(PerTaskSpaces, EnvConfig):
    simulator_distributions: ClassVar[tuple[str, ...]] = ("robosuite", "mujoco")
    native_bindings: ClassVar[tuple[str, ...]] = ("mujoco",)
    env_entry_point: ClassVar[str] = "lerobot.envs.robomimic.env:RobomimicEnv"
    extra: ClassVar[str] = "robomimic"
    extra_modules: ClassVar[tuple[str, ...]] = ("robosuite", "mujoco")

    task: str = "lift"
    """A task (`lift`, `can`, `square`, `transport`, `tool_hang`; robosuite's class names work
    too), a comma list of them, or `all`."""
    fps: int = FPS
    """Control and video frame rate (robomimic's 20 Hz)."""
    obs_type: str = "pixels_agent_pos"
    """`pixels_agent_pos` (cameras + proprioception + object state) or `state` (robomimic's
    low-dim keys only: no rendering at all)."""
    camera_names: str | None = None
    """Comma list of cameras; None: each task's robomimic cameras (agentview and the wrist
    camera; Transport's shoulder and wrist cameras; ToolHang's sideview and wrist camera)."""
    observation_height: int | None = None
    """Height of every camera image; None: each task's robomimic size (84; ToolHang 240)."""
    observation_width: int | None = None
    """Width of every camera image; None: each task's robomimic size."""
    episode_length: int | None = None
    """Step limit per episode; None: robomimic's rollout horizon for the task (400; 700)."""
    terminate_on_success: bool = True
    """End an episode at its first success, as robomimic's rollouts do."""
    reward_shaping: bool = False
    """robosuite's shaped reward instead of the sparse one robomimic's datasets record (Lift,
    Can and Square have one)."""
    render_size: int = 256
    """Side of the square video frames (the first camera, rendered again at this size)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require_choice("--env.obs_type", self.obs_type, OBS_TYPES)
        for flag in ("observation_height", "observation_width", "episode_length"):
            if getattr(self, flag) is not None:
                require_at_least(f"--env.{flag}", getattr(self, flag), 1)
        require_at_least("--env.render_size", self.render_size, 1)
        self._tasks = resolve_tasks(self.task)
        self._cameras: tuple[str, ...] | None = None
        if self.camera_names is not None:
            self._cameras = tuple(parse_name_list(self.camera_names, "--env.camera_names", _every_camera()))
            check_cameras("--env.camera_names", self._cameras, self._tasks)
        if self.reward_shaping:
            check_reward_shaping("--env.reward_shaping", self._tasks)
        check_robosuite_has(self._tasks)

    @classmethod
    def tiny_config(cls) -> RobomimicEnvConfig:
        return cls(task="lift", observation_height=32, observation_width=32, episode_length=3, render_size=32)

    @property
    def task_names(self) -> list[str]:
        return list(self._tasks)

    def task_groups(self) -> dict[str, list[str]]:
        return {name: [name] for name in self._tasks}

    def task_description(self, task_name: str) -> str:
        return TASKS[task_name].description

    def max_episode_steps(self, task_name: str) -> int:
        return self.episode_length or TASKS[task_name].horizon

    def cameras_of(self, task_name: str) -> dict[str, tuple[int, int]]:
        """{camera: (height, width)} of `task_name` in this run; none for `state`."""
        if self.obs_type == "state":
            return {}
        task = TASKS[task_name]
        names = task.cameras if self._cameras is None else self._cameras
        height = self.observation_height or task.camera_size
        width = self.observation_width or task.camera_size
        return {name: (height, width) for name in names}

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        return {
            "task": task_name,
            "cameras": self.cameras_of(task_name),
            "episode_length": self.max_episode_steps(task_name),
            "terminate_on_success": self.terminate_on_success,
            "reward_shaping": self.reward_shaping,
            "render_size": self.render_size,
        }

    def task_policy_features(self, task_name: str) -> dict[str, PolicyFeature]:
        task = TASKS[task_name]
        features = {
            f"{OBS_IMAGES}.{camera}": PolicyFeature(FeatureType.VISUAL, (3, height, width))
            for camera, (height, width) in self.cameras_of(task_name).items()
        }
        features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (task.state,))
        features[OBS_ENV_STATE] = PolicyFeature(FeatureType.ENV, (task.object_state,))
        features[ACTION] = PolicyFeature(FeatureType.ACTION, (task.action,))
        return features


def _every_camera() -> list[str]:
    return sorted({camera for task in TASKS.values() for camera in task.model_cameras})


__getattr__ = env_class_getter(__name__, "RobomimicEnv", RobomimicEnvConfig)  # the env class, imported on use
