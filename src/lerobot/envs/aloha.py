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
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import logging
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.configs.env import EnvConfig
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import ConfigError
from lerobot.utils.gl import default_mujoco_gl

logger = logging.getLogger(__name__)

# dm_control picks its GL backend when first imported: make EGL the default before then.
default_mujoco_gl()

TASK_PREFIX = "gym_aloha/"
# LeRobot's task name -> gym-aloha's task name.
SIM_TASKS = {"AlohaInsertion-v0": "insertion", "AlohaTransferCube-v0": "transfer_cube"}
# The instructions LeRobot's aloha_sim_* datasets store.
DESCRIPTIONS = {
    "AlohaInsertion-v0": "Insert the peg into the socket.",
    "AlohaTransferCube-v0": "Pick up the cube with the right arm and transfer it to the left arm.",
}
TASKS = tuple(SIM_TASKS)
FPS = 50
EPISODE_LENGTH = 400
MAX_REWARD = 4
JOINTS_DIM = 14
ACTION_DIM = 14
OBJECT_POSE_DIM = 7
ENV_STATE_DIM = 2 * OBJECT_POSE_DIM
CAMERA = "top"
INSTALL_HINT = "install the extra: pip install 'lerobot[aloha]'"
ObsType = Literal["pixels_agent_pos", "pixels", "state"]
OBS_TYPES: tuple[str, ...] = ("pixels_agent_pos", "pixels", "state")


def resolve_tasks(task_arg: str) -> list[str]:
    """`AlohaTransferCube-v0`, `gym_aloha/AlohaInsertion-v0` or a comma list -> task names."""
    tasks: list[str] = []
    for token in (t.strip() for t in task_arg.split(",")):
        name = token.removeprefix(TASK_PREFIX)
        if name not in SIM_TASKS:
            guess = difflib.get_close_matches(name, TASKS, n=1)
            hint = f"did you mean {guess[0]!r}? " if guess else ""
            raise ConfigError(f"--env.task={token!r}: unknown ALOHA task; {hint}tasks: {', '.join(TASKS)}")
        if name not in tasks:
            tasks.append(name)
    return tasks


def check_installed() -> None:
    """Fail in one line, before any worker starts, when the `aloha` extra is missing."""
    for module in ("gym_aloha", "dm_control"):
        if importlib.util.find_spec(module) is None:
            raise ConfigError(f"--env.type=aloha: {module} is not installed; {INSTALL_HINT}")


class AlohaEnv(gym.Env):
    """One gym-aloha task in LeRobot's observation format, simulated from the first reset on.

    Building lazily matters: vector envs construct their sub-envs in the parent, and a GL
    context created before a worker forks breaks that worker.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": FPS}

    def __init__(
        self,
        task: str,
        obs_type: str = "pixels_agent_pos",
        observation_height: int = 480,
        observation_width: int = 640,
        episode_length: int = EPISODE_LENGTH,
    ):
        self.task = task
        self.sim_task = SIM_TASKS[task]
        self.task_description = DESCRIPTIONS[task]
        self.obs_type = obs_type
        self.height, self.width = observation_height, observation_width
        self.episode_length = episode_length
        self.render_mode = "rgb_array"
        self.observation_space = build_observation_space(obs_type, observation_height, observation_width)
        self.action_space = build_action_space()
        self._sim = None
        self._frame: np.ndarray | None = None
        self._steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**31))
        sim = self._ensure_sim()
        place_objects(self.sim_task, seed)
        sim.task.random.seed(seed)
        time_step = sim.reset()
        self._steps = 0
        self._frame = None
        return self._format(time_step.observation), {"is_success": False, "task": self.task}

    def step(self, action: np.ndarray):
        action = np.asarray(action)
        if action.shape != (ACTION_DIM,):
            raise ValueError(f"ALOHA expects one action of shape ({ACTION_DIM},), got {action.shape}")
        time_step = self._ensure_sim().step(action)
        self._steps += 1
        self._frame = None
        success = time_step.reward == MAX_REWARD
        truncated = self._steps >= self.episode_length
        info = {"is_success": bool(success), "task": self.task}
        return self._format(time_step.observation), float(time_step.reward), bool(success), truncated, info

    def render(self) -> np.ndarray:
        """The top camera's view of the current state, at the observation size."""
        if self._frame is None:
            # dm_control flips MuJoCo's bottom-up image with a view; copy it into a plain array.
            frame = self._ensure_sim().physics.render(height=self.height, width=self.width, camera_id=CAMERA)
            self._frame = np.ascontiguousarray(frame)
        return self._frame

    def close(self) -> None:
        if self._sim is not None:
            self._sim.physics.free()
            self._sim = None

    def _ensure_sim(self):
        if self._sim is None:
            self._sim = build_simulator(self.sim_task)
        return self._sim

    def _format(self, raw_obs: dict[str, np.ndarray]) -> dict[str, Any]:
        obs: dict[str, Any] = {"environment_state": raw_obs["env_state"]}
        if self.obs_type != "state":
            obs["pixels"] = {CAMERA: self.render()}
        if self.obs_type != "pixels":
            obs["agent_pos"] = raw_obs["qpos"]
        return obs


def place_objects(sim_task: str, seed: int) -> None:
    """Set the initial object poses the way gym-aloha's reset does for `seed`.

    gym-aloha's tasks read them from a module-level slot at reset; one worker runs one env,
    so the slot is never shared between envs.
    """
    from gym_aloha.tasks import sim
    from gym_aloha.utils import sample_box_pose, sample_insertion_pose

    if sim_task == "transfer_cube":
        sim.BOX_POSE[0] = sample_box_pose(seed)
    else:
        sim.BOX_POSE[0] = np.concatenate(sample_insertion_pose(seed))


def build_simulator(sim_task: str):
    """gym-aloha's dm_control environment for `sim_task`, observing joints and objects only.

    Same scene file, task (reset, reward) and control step as gym-aloha's own env; the only
    change is that the task's observation renders no cameras (our env renders the top one, at
    the size asked for, when it formats the observation).
    """
    default_mujoco_gl()
    from dm_control import mujoco
    from dm_control.rl import control
    from gym_aloha.constants import ASSETS_DIR, DT

    scene = ASSETS_DIR / f"bimanual_viperx_{sim_task}.xml"
    physics = mujoco.Physics.from_xml_path(str(scene))
    task = _unrendered_task_class(sim_task)()
    return control.Environment(
        physics, task, time_limit=float("inf"), control_timestep=DT, n_sub_steps=None, flat_observation=False
    )


@functools.cache
def _unrendered_task_class(sim_task: str) -> type:
    """gym-aloha's task class for `sim_task`, with an observation that renders nothing."""
    from gym_aloha.tasks.sim import InsertionTask, TransferCubeTask

    base = TransferCubeTask if sim_task == "transfer_cube" else InsertionTask

    def get_observation(self, physics) -> dict[str, np.ndarray]:
        qpos = self.get_qpos(physics).astype(np.float32)
        objects = np.zeros(ENV_STATE_DIM, dtype=np.float32)
        poses = self.get_env_state(physics)
        objects[: len(poses)] = poses
        return {"qpos": qpos, "env_state": objects}

    return type(f"Unrendered{base.__name__}", (base,), {"get_observation": get_observation})


def build_observation_space(obs_type: str, height: int, width: int) -> spaces.Dict:
    entries: dict[str, spaces.Space] = {
        "environment_state": spaces.Box(-np.inf, np.inf, shape=(ENV_STATE_DIM,), dtype=np.float32),
    }
    if obs_type != "state":
        image = spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)
        entries["pixels"] = spaces.Dict({CAMERA: image})
    if obs_type != "pixels":
        entries["agent_pos"] = spaces.Box(-np.inf, np.inf, shape=(JOINTS_DIM,), dtype=np.float32)
    return spaces.Dict(entries)


def build_action_space() -> spaces.Box:
    # gym-aloha's bounds. Joint targets are radians and go past 1 (the start pose has -0.96 and
    # 1.16), so only the random policy samples inside them.
    return spaces.Box(-1.0, 1.0, shape=(ACTION_DIM,), dtype=np.float32)


@EnvConfig.register_subclass("aloha")
@dataclass
class AlohaEnvConfig(EnvConfig):
    task: str = "AlohaInsertion-v0"
    """`AlohaInsertion-v0`, `AlohaTransferCube-v0` or a comma list of both."""
    fps: int = FPS
    """Control and video frame rate (gym-aloha's 50 Hz)."""
    obs_type: ObsType = "pixels_agent_pos"
    """`pixels_agent_pos` (top camera + 14 joint positions), `pixels` (top camera only) or
    `state` (joint positions and object poses, no camera: no rendering except for videos)."""
    observation_height: int = 480
    observation_width: int = 640
    episode_length: int = EPISODE_LENGTH
    """Step limit per episode."""

    def __post_init__(self) -> None:
        if self.obs_type not in OBS_TYPES:
            raise ConfigError(f"--env.obs_type={self.obs_type!r}: must be one of {', '.join(OBS_TYPES)}")
        for flag in ("observation_height", "observation_width", "episode_length"):
            if getattr(self, flag) < 1:
                raise ConfigError(f"--env.{flag}={getattr(self, flag)}: must be an integer >= 1")
        self._tasks = resolve_tasks(self.task)
        check_installed()

    def task_groups(self) -> dict[str, list[str]]:
        """One group named after the benchmark, as LeRobot's eval names it (`aloha`); a task's
        id is its position in `--env.task`, so a one-task run is `aloha` task 0, as in LeRobot."""
        return {"aloha": list(self._tasks)}

    def task_description(self, task_name: str) -> str:
        return DESCRIPTIONS[task_name]

    def env_factory(self, task_name: str):
        return functools.partial(
            AlohaEnv,
            task=task_name,
            obs_type=self.obs_type,
            observation_height=self.observation_height,
            observation_width=self.observation_width,
            episode_length=self.episode_length,
        )

    def observation_space(self) -> spaces.Dict:
        return build_observation_space(self.obs_type, self.observation_height, self.observation_width)

    def action_space(self) -> spaces.Box:
        return build_action_space()

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
