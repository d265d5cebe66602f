"""ManiSkill3: GPU-parallel robot manipulation on SAPIEN (PhysX), from the package index.

Tasks: the seventeen that need no download (`tasks.TASKS`): PickCube, PushCube, StackCube,
PullCube, PokeCube, PlaceSphere, RollBall, LiftPegUpright, PegInsertionSide, PlugCharger, PushT,
PullCubeTool, StackPyramid, DrawTriangle, TwoRobotPickCube (Panda arms), PickCubeSO100 and
SO100GraspCube (LeRobot's SO-100 arm), all `-v1`; `--env.task` takes one, a comma list, or a
group: `offline` (all of them), `panda`, `so100`. A group is evaluated under its name, a task
named alone under its own. Tasks that need ManiSkill's downloads are refused with the asset
to download and the command that does it.
Seeding: `reset(seed=s)` draws the episode's randomisation from s (ManiSkill's own seeding,
one env per process here); episode e of a run starts from seed + e, whatever the batch.
Success: ManiSkill's `success`; an episode that reports `fail` ends there, unsuccessful. Both
success at any step and success at the last step are recorded (ManiSkill reports both). By
default episodes run to the task's step limit, as ManiSkill's evaluations do; with
`--env.terminate_on_success=true` they end at the first success (LeRobot's other benchmarks).
Observations (LeRobot's form): each camera `observation.images.<camera>` (`pixels_agent_pos`;
uint8 HWC from the env), `observation.state` the robot's proprioception (ManiSkill's `agent`:
qpos, qvel, and a target controller's targets), `observation.environment_state` the task's extra
state (ManiSkill's `extra`: object and goal poses...). state + environment_state is exactly
ManiSkill's flat `obs_mode="state"` vector. Actions: the control mode's (each task's ManiSkill
default unless `--env.control_mode`), in ManiSkill's bounds (normalised to [-1, 1] for delta
controllers); two arms' actions concatenated in agent order.
Simulation: `physx_cpu` (one scene per env, in the env workers) or `physx_cuda` (where CUDA
is); cameras render through Vulkan (`scripts/install_vulkan.sh` installs Mesa's lavapipe where
there is no GPU).

The package: this module holds the config, `tasks` the task table and sizes (neither imports
gymnasium, NumPy nor ManiSkill), `env` the gymnasium env, `observation` the flattening.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from lerobot.configs import gym_env
from lerobot.configs.env import EnvConfig, PerTaskSpaces, TaskSpec, env_class_getter
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.maniskill.tasks import (
    FPS,
    OBS_TYPES,
    SIM_BACKENDS,
    TASKS,
    TaskSizes,
    check_control_mode,
    check_reward_mode,
    resolve_tasks,
    reward_modes,
    task_sizes,
)
from lerobot.envs.maniskill.vulkan import require_vulkan
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import require_at_least, require_choice

BATCHED_SCENE = "lerobot.envs.maniskill.env:BatchedScene"


@EnvConfig.register_subclass("maniskill")
@dataclass
class ManiskillEnvConfig(PerTaskSpaces, EnvConfig):
    simulator_distributions: ClassVar[tuple[str, ...]] = ("mani-skill", "sapien")
    worker_preload: ClassVar[tuple[str, ...]] = ("mani_skill.envs",)
    env_entry_point: ClassVar[str] = "lerobot.envs.maniskill.env:ManiskillEnv"
    extra: ClassVar[str] = "maniskill"
    extra_modules: ClassVar[tuple[str, ...]] = ("mani_skill", "sapien")

    task: str = "PickCube-v1"
    """A task (`PickCube-v1`; `PickCube` works too), a group (`offline`, `panda`, `so100`) or a
    comma list of either."""
    fps: int = FPS
    """Control and video frame rate (ManiSkill's 20 Hz)."""
    obs_type: str = "pixels_agent_pos"
    """`pixels_agent_pos` (the task's cameras + proprioception + extra state) or `state`
    (proprioception + extra state, no camera: no Vulkan needed)."""
    control_mode: str | None = None
    """ManiSkill's controller (`pd_joint_delta_pos`, `pd_ee_delta_pose`, ...); None: each
    task's own default."""
    observation_height: int | None = None
    """Height of every camera image; None: each camera's own (128 for most tasks)."""
    observation_width: int | None = None
    """Width of every camera image; None: each camera's own."""
    render_size: int = 256
    """Side of the square video frames (ManiSkill's render camera)."""
    episode_length: int | None = None
    """Step limit per episode; None: each task's registered limit (50 for most)."""
    terminate_on_success: bool = False
    """End an episode at its first success; by default it runs to the step limit, as
    ManiSkill's evaluations do, so that success at the end means something."""
    reward_mode: str | None = None
    """ManiSkill's reward: `normalized_dense`, `dense`, `sparse` or `none`, where the task
    computes it; None: each task's default (`normalized_dense`, `sparse` for the long tasks)."""
    sim_backend: str = "auto"
    """`physx_cpu`, `physx_cuda`, or `auto`: physx_cuda where CUDA is and SAPIEN's PhysX GPU
    library is installed (~/.sapien/physx/), physx_cpu elsewhere, saying why in one line."""
    batched: bool | None = None
    """Simulate a task's whole batch in this process, in one scene (`num_envs` = the batch) on
    the GPU, instead of one env per worker; None: where the simulation runs on the GPU
    (physx_cuda). On physx_cpu (one env per scene) the batch's scenes step one after another."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require_choice("--env.obs_type", self.obs_type, OBS_TYPES)
        require_choice("--env.sim_backend", self.sim_backend, SIM_BACKENDS)
        for flag in ("observation_height", "observation_width", "episode_length"):
            if getattr(self, flag) is not None:
                require_at_least(f"--env.{flag}", getattr(self, flag), 1)
        require_at_least("--env.render_size", self.render_size, 1)
        self._groups = resolve_tasks(self.task)
        if self.control_mode is not None:
            check_control_mode("--env.control_mode", self.control_mode, self.task_names)
        if self.reward_mode is not None:
            check_reward_mode("--env.reward_mode", self.reward_mode, self.task_names)
        if self.obs_type != "state":
            require_vulkan("--env.obs_type", self.obs_type)

    @classmethod
    def tiny_config(cls) -> ManiskillEnvConfig:
        return cls(
            task="PickCube-v1", observation_height=32, observation_width=32, episode_length=3, render_size=32
        )

    @property
    def task_names(self) -> list[str]:
        return [name for names in self._groups.values() for name in names]

    def sizes(self, task_name: str) -> TaskSizes:
        return task_sizes(task_name, self.control_mode)

    def task_groups(self) -> dict[str, list[str]]:
        return {group: list(names) for group, names in self._groups.items()}

    def task_description(self, task_name: str) -> str:
        return TASKS[task_name].description

    def max_episode_steps(self, task_name: str) -> int:
        return self.episode_length or TASKS[task_name].max_steps

    def control_mode_of(self, task_name: str) -> str:
        """The controller `task_name` runs with: `--env.control_mode`, else the task's default."""
        return self.control_mode or TASKS[task_name].default_control_mode

    def camera_shape(self, task_name: str, camera: str) -> tuple[int, int]:
        """(height, width) of a camera's images in this run."""
        height, width = self.sizes(task_name).cameras[camera]
        return self.observation_height or height, self.observation_width or width

    def batched_slot_env(self, task: TaskSpec, n_envs: int) -> Any | None:
        """One scene of `n_envs` envs (the env module's `BatchedScene`, named by entry point like
        the env) where `--env.batched` asks for it, by default on physx_cuda."""
        from lerobot.envs.maniskill.backend import resolve_sim_backend  # torch and SAPIEN: the env layer's

        backend = resolve_sim_backend(self.sim_backend)
        if not (self.batched if self.batched is not None else backend == "physx_cuda"):
            return None
        return gym_env.load_entry_point(BATCHED_SCENE)(self.env_kwargs(task.name), n_envs, task)

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        return {
            "task": task_name,
            "obs_type": self.obs_type,
            "control_mode": self.control_mode_of(task_name),
            "cameras": {camera: self.camera_shape(task_name, camera) for camera in TASKS[task_name].cameras},
            "render_size": self.render_size,
            "episode_length": self.max_episode_steps(task_name),
            "terminate_on_success": self.terminate_on_success,
            "reward_mode": self.reward_mode or reward_modes(task_name)[0],
            "sim_backend": self.sim_backend,
        }

    def task_policy_features(self, task_name: str) -> dict[str, PolicyFeature]:
        sizes = self.sizes(task_name)
        features: dict[str, PolicyFeature] = {}
        if self.obs_type != "state":
            for camera in TASKS[task_name].cameras:
                height, width = self.camera_shape(task_name, camera)
                features[f"{OBS_IMAGES}.{camera}"] = PolicyFeature(FeatureType.VISUAL, (3, height, width))
        features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (sizes.state,))
        features[OBS_ENV_STATE] = PolicyFeature(FeatureType.ENV, (sizes.environment_state,))
        features[ACTION] = PolicyFeature(FeatureType.ACTION, (sizes.action,))
        return features


__getattr__ = env_class_getter(__name__, "ManiskillEnv", ManiskillEnvConfig)  # the env class, imported on use
