"""ALOHA: bimanual manipulation with two ViperX 300 arms in simulation (gym-aloha; dm_control, MuJoCo).

Tasks (LeRobot's names; `gym_aloha/...` works too; one task or a comma list, reported in one
group, `aloha`, with ids in the order given):
`AlohaTransferCube-v0`: the right arm picks up a red cube and hands it to the left arm in mid-air;
`AlohaInsertion-v0`: the left arm picks up a socket, the right arm a peg, and the peg is inserted
into the socket in mid-air. These are the two simulated tasks of ACT (Zhao et al., 2023).
Randomisation: the objects' positions on the table (cube x in [0, 0.2], y in [0.4, 0.6]; peg x in
[0.1, 0.2], socket x in [-0.2, -0.1], both y in [0.4, 0.6]), drawn with gym-aloha's sampler from
the episode's seed; the arms always start from the same pose.
Seeding: `reset(seed=s)` places the objects as gym-aloha does for seed s (LeRobot seeds episode e
of a run with seed + e, like us), so both start episode e from the same state. Without a seed,
gym-aloha draws from the OS's entropy; we draw the seed from the env's own generator instead.
Success: the task's staged reward (0-4, gym-aloha's contact checks) reaches its maximum, 4:
the cube held by the left gripper off the table, or the peg touching the socket's pin. Like
gym-aloha and LeRobot, the episode ends at its first success.
Horizon: 400 steps at 50 Hz (LeRobot's setting; each step runs 10 physics steps of 2 ms).
Observations (LeRobot's ALOHA format, as in its `aloha_sim_*` data): `pixels`, the `top` camera
(480x640, `observation.images.top`), and `agent_pos`, the 14 joint positions (per arm: six joint
angles in radians, then the gripper opening normalised to 0 closed .. 1 open;
`observation.state`); `state` gives the joints without the camera. Always also
`environment_state`: the objects' poses (x, y, z, then the quaternion w, x, y, z), cube then 7
zeros or peg then socket, for scripted policies; image policies ignore it.
Unlike gym-aloha, which renders three cameras at 480x640 every step, only the top camera is
rendered, at the size asked for: the physics, rewards and top images are the same, and a step
costs one render instead of three (67 against 183 ms with software rendering, and about the same
at any size: the scene's 4096x4096 shadow map dominates; 0.5 ms with `state`).
Actions: 14-d absolute joint targets in the same layout as the state (gripper: 0 closed, 1 open).
Protocol (ACT): 50 episodes per task, success rate; ACT reports 90% on transfer-cube and 50% on
insertion when trained on human demonstrations.

The package: this module holds the config, `tasks` the task names and constants (neither
imports gymnasium nor NumPy, so a command line is checked before either loads), `env` the
gymnasium env, which the config names by its entry point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from lerobot.configs.env import EnvConfig, env_class_getter
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.aloha.tasks import (
    ACTION_DIM,
    CAMERA,
    DESCRIPTIONS,
    ENV_STATE_DIM,
    EPISODE_LENGTH,
    FPS,
    JOINTS_DIM,
    OBS_TYPES,
    resolve_tasks,
)
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import require_at_least, require_choice


@EnvConfig.register_subclass("aloha")
@dataclass
class AlohaEnvConfig(EnvConfig):
    simulator_distributions: ClassVar[tuple[str, ...]] = ("gym-aloha", "dm-control", "mujoco")
    native_bindings: ClassVar[tuple[str, ...]] = ("mujoco",)
    env_entry_point: ClassVar[str] = "lerobot.envs.aloha.env:AlohaEnv"
    extra: ClassVar[str] = "aloha"
    extra_modules: ClassVar[tuple[str, ...]] = ("gym_aloha", "dm_control", "mujoco")

    task: str = "AlohaInsertion-v0"
    """`AlohaInsertion-v0`, `AlohaTransferCube-v0` or a comma list of both."""
    fps: int = FPS
    """Control and video frame rate (gym-aloha's 50 Hz)."""
    obs_type: str = "pixels_agent_pos"
    """`pixels_agent_pos` (top camera + 14 joint positions), `pixels` (top camera only) or
    `state` (joint positions and object poses, no camera: no rendering except for videos)."""
    observation_height: int = 480
    """Height of the top camera image (LeRobot's ALOHA data: 480)."""
    observation_width: int = 640
    """Width of the top camera image (LeRobot's ALOHA data: 640)."""
    episode_length: int = EPISODE_LENGTH
    """Step limit per episode."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require_choice("--env.obs_type", self.obs_type, OBS_TYPES)
        for flag in ("observation_height", "observation_width", "episode_length"):
            require_at_least(f"--env.{flag}", getattr(self, flag), 1)
        self._tasks = resolve_tasks(self.task)

    @classmethod
    def tiny_config(cls) -> AlohaEnvConfig:
        return cls(task="AlohaTransferCube-v0", observation_height=24, observation_width=32, episode_length=3)

    def task_groups(self) -> dict[str, list[str]]:
        """One group named after the benchmark, as LeRobot's eval names it (`aloha`); a task's
        id is its position in `--env.task`, so a one-task run is `aloha` task 0, as in LeRobot."""
        return {"aloha": list(self._tasks)}

    def task_description(self, task_name: str) -> str:
        return DESCRIPTIONS[task_name]

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        return {
            "task": task_name,
            "obs_type": self.obs_type,
            "observation_height": self.observation_height,
            "observation_width": self.observation_width,
            "episode_length": self.episode_length,
        }

    def policy_features(self) -> dict[str, PolicyFeature]:
        features = {}
        if self.obs_type != "state":
            image = PolicyFeature(FeatureType.VISUAL, (3, self.observation_height, self.observation_width))
            features[f"{OBS_IMAGES}.{CAMERA}"] = image
        if self.obs_type != "pixels":
            features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (JOINTS_DIM,))
        features[OBS_ENV_STATE] = PolicyFeature(FeatureType.ENV, (ENV_STATE_DIM,))
        features[ACTION] = PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))
        return features


__getattr__ = env_class_getter(__name__, "AlohaEnv", AlohaEnvConfig)  # LeRobot's import path of the env class
