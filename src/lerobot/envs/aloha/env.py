"""ALOHA's gym env in LeRobot's observation format, and its spaces (the benchmark's config is
`lerobot.envs.aloha`, its tasks and constants `lerobot.envs.aloha.tasks`; neither imports
gymnasium nor NumPy)."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.envs.aloha.tasks import (
    ACTION_DIM,
    CAMERA,
    DESCRIPTIONS,
    ENV_STATE_DIM,
    EPISODE_LENGTH,
    FPS,
    JOINTS_DIM,
    MAX_REWARD,
    SIM_TASKS,
)
from lerobot.envs.blind_steps import StepsWithoutImages
from lerobot.utils.gl import default_mujoco_gl


class AlohaEnv(StepsWithoutImages, gym.Env):
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
        self._max_episode_steps = episode_length  # where LeRobot's rollout reads the limit
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
            image = self.render() if self._images_wanted else np.zeros((self.height, self.width, 3), np.uint8)
            obs["pixels"] = {CAMERA: image}
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
