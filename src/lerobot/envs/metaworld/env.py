"""The Meta-World simulator as a gymnasium env (see `lerobot.envs.metaworld` for the benchmark).

Kept apart from the benchmark's config so that parsing and validating a command line never
imports gymnasium, NumPy or MuJoCo: the config names `MetaworldEnv` by its entry point, and this
module is imported only where an env is built (inside the worker processes, or once to read
the spaces).
"""

from __future__ import annotations

import pickle
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.envs.blind_steps import StepsWithoutImages
from lerobot.envs.metaworld.tasks import (
    ACTION_DIM,
    AGENT_POS_DIM,
    CORNER2_POSITION,
    FULL_STATE_DIM,
    MAX_PATH_LENGTH,
    ROTATED_CAMERAS,
    TASK_PREFIX,
    task_description,
)
from lerobot.utils.gl import default_mujoco_gl


class MetaworldEnv(StepsWithoutImages, gym.Env):
    """One Meta-World task as a gymnasium env whose simulator is built on first reset.

    Building lazily matters: vector envs construct their sub-envs in the parent to read the
    spaces, and a MuJoCo/EGL context created before a worker forks crashes that worker.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 80}

    def __init__(
        self,
        task: str,
        obs_type: str = "pixels_agent_pos",
        camera_names: tuple[str, ...] = ("corner2",),
        observation_height: int = 480,
        observation_width: int = 480,
        episode_length: int = MAX_PATH_LENGTH,
        terminate_on_success: bool = True,
        fast_render: bool = False,
        camera_name: str | None = None,
        render_mode: str = "rgb_array",
    ):
        """`camera_name` (one camera) and `render_mode` are LeRobot's spellings, and the task
        may carry LeRobot's `metaworld-` prefix, so code that builds LeRobot's env builds this one."""
        if render_mode != "rgb_array":
            raise ValueError(f"render_mode={render_mode!r}: only rgb_array (offscreen images) is supported")
        if camera_name is not None:
            camera_names = (camera_name,)
        task = task.removeprefix(TASK_PREFIX)
        self.task = task
        self.fast_render = fast_render
        self.task_description = task_description(task)
        self.obs_type = obs_type
        self.camera_names = tuple(camera_names)
        self.height, self.width = observation_height, observation_width
        self.episode_length = episode_length
        self._max_episode_steps = self.episode_length  # where LeRobot's code reads the limit
        self.terminate_on_success = terminate_on_success
        self.render_mode = "rgb_array"
        self.observation_space = build_observation_space(
            obs_type, self.camera_names, observation_height, observation_width
        )
        self.action_space = action_space()
        self._sim = None
        self._renderer = None
        self._frames: dict[str, np.ndarray] = {}
        self._steps = 0

    # --- simulator ----------------------------------------------------------------------
    def _ensure_sim(self):
        if self._sim is None:
            self._sim = _build_simulator(self.task)
            model = self._sim.model
            model.vis.global_.offwidth = max(model.vis.global_.offwidth, self.width)
            model.vis.global_.offheight = max(model.vis.global_.offheight, self.height)
            if self.fast_render:
                model.vis.quality.offsamples = 0  # no multisample anti-aliasing
        return self._sim

    def _render_camera(self, camera: str) -> np.ndarray:
        """Render one camera of the current state (cached until the state changes)."""
        if camera not in self._frames:
            import mujoco

            sim = self._ensure_sim()
            if self._renderer is None:
                self._renderer = mujoco.Renderer(sim.model, self.height, self.width)
            self._renderer.update_scene(sim.data, camera=camera)
            if self.fast_render:
                self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
                self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
            image = self._renderer.render()
            if camera in ROTATED_CAMERAS:
                image = np.ascontiguousarray(image[::-1, ::-1])
            self._frames[camera] = image
        return self._frames[camera]

    # --- gymnasium API ------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        sim = self._ensure_sim()
        if seed is not None:
            sim.seed(seed)
        raw_obs, _ = sim.reset()
        self._steps = 0
        self._frames.clear()
        return self._format_observation(raw_obs), {"is_success": False, "task": self.task}

    def step(self, action: np.ndarray):
        sim = self._ensure_sim()
        action = np.asarray(action, dtype=np.float32)
        if action.shape != (ACTION_DIM,):
            raise ValueError(f"Meta-World expects one action of shape ({ACTION_DIM},), got {action.shape}")
        raw_obs, reward, _, sim_truncated, info = sim.step(action)
        self._steps += 1
        self._frames.clear()
        success = bool(info.get("success", False))
        terminated = success and self.terminate_on_success
        truncated = bool(sim_truncated) or self._steps >= self.episode_length
        out_info = {"is_success": success, "task": self.task}
        return self._format_observation(raw_obs), float(reward), terminated, truncated, out_info

    def render(self) -> np.ndarray:
        """The first camera's view of the current state, upright."""
        return self._render_camera(self.camera_names[0])

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        if self._sim is not None:
            self._sim.close()
            self._sim = None

    def _format_observation(self, raw_obs: np.ndarray) -> dict[str, Any]:
        state = np.asarray(raw_obs, dtype=np.float32)
        obs: dict[str, Any] = {"environment_state": state}
        if self.obs_type == "state":
            obs["agent_pos"] = state
            return obs
        if self.obs_type == "pixels_agent_pos":
            obs["agent_pos"] = state[:AGENT_POS_DIM].copy()
        image = self._render_camera if self._images_wanted else self._black_image
        if len(self.camera_names) == 1:
            obs["pixels"] = image(self.camera_names[0])
        else:
            obs["pixels"] = {cam: image(cam) for cam in self.camera_names}
        return obs

    def _black_image(self, camera: str) -> np.ndarray:
        return np.zeros((self.height, self.width, 3), dtype=np.uint8)


def _build_simulator(task: str):
    """Meta-World's env for `task`, with the corner2 camera moved and seeded resets.

    The task is set the way Meta-World's MT1 benchmark sets it (fully observable goal), but
    without building MT1 itself, which resets a fresh env 50 times to draw goals we never use
    (about 3 s per task and worker): every reset here draws its own from the seeded generator.
    """
    default_mujoco_gl()  # before MuJoCo is first imported in this (worker) process
    import metaworld
    from metaworld import env_dict

    env_cls = env_dict.ALL_V3_ENVIRONMENTS[task]
    task_kwargs = {k: v for k, v in env_dict.ML1_args_kwargs[task]["kwargs"].items() if k != "task_id"}
    sim = env_cls()
    placeholder_goal = sim._random_reset_space.low  # replaced at the first reset
    task_data = {
        **task_kwargs,
        "rand_vec": placeholder_goal,
        "env_cls": env_cls,
        "partially_observable": False,
    }
    sim.set_task(metaworld.Task(env_name=task, data=pickle.dumps(task_data)))
    sim.model.cam_pos[sim.model.camera("corner2").id] = CORNER2_POSITION
    # Fresh object/goal positions at every reset, drawn from the env's own (seedable) generator.
    sim._freeze_rand_vec = False
    sim.seeded_rand_vec = True
    return sim


def action_space() -> spaces.Box:
    return spaces.Box(-1.0, 1.0, shape=(ACTION_DIM,), dtype=np.float32)


def build_observation_space(
    obs_type: str, camera_names: tuple[str, ...], height: int, width: int
) -> spaces.Dict:
    full_state = spaces.Box(-np.inf, np.inf, shape=(FULL_STATE_DIM,), dtype=np.float32)
    entries: dict[str, spaces.Space] = {"environment_state": full_state}
    if obs_type == "state":
        entries["agent_pos"] = full_state
        return spaces.Dict(entries)
    if obs_type == "pixels_agent_pos":
        entries["agent_pos"] = spaces.Box(-np.inf, np.inf, shape=(AGENT_POS_DIM,), dtype=np.float32)
    image = spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)
    if len(camera_names) == 1:
        entries["pixels"] = image
    else:
        entries["pixels"] = spaces.Dict({cam: image for cam in camera_names})
    return spaces.Dict(entries)
