"""One robomimic task as a gymnasium env in LeRobot's observation format (see
`lerobot.envs.robomimic`).

Kept apart from the config so that a command line is checked without gymnasium, NumPy,
robosuite or MuJoCo: the config names `RobomimicEnv` by its entry point, and this module is
imported only where an env is built.
"""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.envs.blind_steps import StepsWithoutImages
from lerobot.envs.robomimic.tasks import FPS, TASKS, Task
from lerobot.envs.robosuite_support import CameraSwitch, gate_cameras, import_robosuite
from lerobot.envs.spaces import cameras_and_states_space

SEED_RANGE = 2**31
"""Seeds drawn for an unseeded reset (NumPy's legacy seeding takes 32-bit seeds)."""


class RobomimicEnv(StepsWithoutImages, gym.Env):
    """One task; robosuite's env is built on first reset.

    Building lazily keeps the EGL context out of the process that reads the spaces and forks
    the workers (one created before a fork crashes the worker).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": FPS}

    def __init__(
        self,
        task: str,
        cameras: Mapping[str, tuple[int, int]] | None = None,
        episode_length: int | None = None,
        terminate_on_success: bool = True,
        reward_shaping: bool = False,
        render_size: int = 256,
    ):
        """`cameras`: {camera: (height, width)}, empty for state only; None: the task's
        robomimic cameras at robomimic's size."""
        self.spec_task: Task = TASKS[task]
        self.task = task
        self.task_description = self.spec_task.description
        if cameras is None:
            size = self.spec_task.camera_size
            cameras = {camera: (size, size) for camera in self.spec_task.cameras}
        self.cameras = dict(cameras)
        self.episode_length = episode_length or self.spec_task.horizon
        self._max_episode_steps = self.episode_length  # where LeRobot's rollout reads the limit
        self.terminate_on_success = terminate_on_success
        self.reward_shaping = reward_shaping
        self.render_size = render_size
        self.render_mode = "rgb_array"
        self.observation_space = cameras_and_states_space(
            self.cameras, self.spec_task.state, self.spec_task.object_state
        )
        self.action_space = spaces.Box(-1.0, 1.0, shape=(self.spec_task.action,), dtype=np.float32)
        self._sim: Any = None
        self._close_sim: weakref.finalize | None = None
        self._steps = 0
        self._cameras = CameraSwitch()

    # --- the simulator ----------------------------------------------------------------------
    def make_kwargs(self) -> dict[str, Any]:
        """robosuite's `suite.make` arguments for this env (after the env name): what a raw
        robosuite loop passes to get the same scene (the fidelity tests build theirs with them).
        robomimic's dataset settings (`tasks`), with only the cameras this run asked for."""
        robosuite = import_robosuite()
        kwargs: dict[str, Any] = {
            "robots": list(self.spec_task.robots),
            "controller_configs": robosuite.load_controller_config(default_controller="OSC_POSE"),
            "control_freq": FPS,
            "reward_shaping": self.reward_shaping,
            "ignore_done": True,  # the step limit is ours (robomimic's rollouts ignore robosuite's)
            "use_object_obs": True,
            "use_camera_obs": bool(self.cameras),
            "has_renderer": False,
            "has_offscreen_renderer": True,  # also for the video frames of a state-only run
            "camera_depths": False,
        }
        if self.cameras:
            kwargs["camera_names"] = list(self.cameras)
            kwargs["camera_heights"] = [h for h, _ in self.cameras.values()]
            kwargs["camera_widths"] = [w for _, w in self.cameras.values()]
        if self.spec_task.env_configuration is not None:
            kwargs["env_configuration"] = self.spec_task.env_configuration
        return kwargs

    def _ensure_sim(self) -> Any:
        if self._sim is None:
            robosuite = import_robosuite()
            self._sim = robosuite.make(self.spec_task.env_name, **self.make_kwargs())
            # Closing frees robosuite's GL context; left to the garbage collector at exit, after
            # robosuite's own exit hook has shut EGL down, it prints EGL errors.
            self._close_sim = weakref.finalize(self, self._sim.close)
            atexit.register(self._close_sim)
        return self._sim

    # --- gymnasium ----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None:  # robosuite would draw from wherever NumPy's generator stands
            seed = int(self.np_random.integers(SEED_RANGE))
        sim = self._ensure_sim()
        np.random.seed(seed)  # robosuite's placements and initial joint noise draw from it
        raw_obs = sim.reset()
        for camera, (height, width) in self.cameras.items():  # a hard reset rebuilt the sensors
            gate_cameras(sim, sim.sim, [f"{camera}_image"], (height, width, 3), self._cameras)
        self._steps = 0
        return format_observation(raw_obs, self.spec_task, self.cameras), {
            "is_success": False,
            "task": self.task,
        }

    def step(self, action: np.ndarray):
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (self.spec_task.action,):
            arms = f" ({self.spec_task.arms} arms x 7)" if self.spec_task.arms > 1 else ""
            raise ValueError(
                f"robomimic {self.task} expects one action of shape ({self.spec_task.action},){arms}, "
                f"got {action.shape}"
            )
        sim = self._ensure_sim()
        self._cameras.on = self._images_wanted  # off: black images, nothing rendered
        try:
            raw_obs, reward, _, _ = sim.step(action)
        finally:
            self._cameras.on = True
        self._steps += 1
        success = bool(sim._check_success())
        terminated = success and self.terminate_on_success
        truncated = self._steps >= self.episode_length
        info = {"is_success": success, "task": self.task}
        return (
            format_observation(raw_obs, self.spec_task, self.cameras),
            float(reward),
            terminated,
            truncated,
            info,
        )

    def render(self) -> np.ndarray:
        """The first camera (agentview without cameras) at `render_size`, upright: rendered from
        the current state, so a step that skipped its images still has its video frame."""
        if self._sim is None:
            raise RuntimeError("RobomimicEnv.render() needs a reset() first")
        camera = next(iter(self.cameras), "agentview")
        frame = self._sim.sim.render(camera_name=camera, height=self.render_size, width=self.render_size)
        return upright(frame)

    def close(self) -> None:
        if self._sim is not None:
            atexit.unregister(self._close_sim)
            self._close_sim()
            self._sim = None


def upright(image: np.ndarray) -> np.ndarray:
    """robosuite's images come bottom row first (OpenGL's origin); robomimic flips their rows,
    and its datasets hold them so (a copy: the renderer reuses its buffer)."""
    return np.ascontiguousarray(image[::-1])


def format_observation(raw_obs: Mapping[str, Any], task: Task, cameras: Mapping[str, Any]) -> dict[str, Any]:
    obs: dict[str, Any] = {}
    if cameras:
        obs["pixels"] = {camera: upright(raw_obs[f"{camera}_image"]) for camera in cameras}
    obs["agent_pos"] = np.concatenate([raw_obs[key] for key in task.proprio_keys]).astype(np.float32)
    obs["environment_state"] = np.asarray(raw_obs["object-state"], dtype=np.float32)
    return obs
