"""One ManiSkill3 task as a gymnasium env in LeRobot's observation format (see `lerobot.envs.maniskill`).

Kept apart from the config so that a command line is checked without gymnasium, NumPy, torch or
SAPIEN: the config names `ManiskillEnv` by its entry point, and this module is imported only
where an env is built.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.envs.blind_steps import StepsWithoutImages
from lerobot.envs.maniskill.observation import as_numpy, camera_image, flat_vector
from lerobot.envs.maniskill.tasks import FPS, TASKS, TaskSizes, task_sizes

SEED_RANGE = 2**31
"""Seeds drawn for an unseeded reset: below 2**31, as ManiSkill's own episode seeds are."""


class ManiskillEnv(StepsWithoutImages, gym.Env):
    """One task, one scene (`num_envs=1`), built on first reset.

    Building lazily keeps SAPIEN, and its Vulkan and PhysX contexts, out of the process that
    reads the spaces and forks the workers; only a worker's env builds a scene.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": FPS}

    def __init__(
        self,
        task: str,
        obs_type: str = "pixels_agent_pos",
        control_mode: str | None = None,
        cameras: dict[str, tuple[int, int]] | None = None,
        render_size: int = 256,
        episode_length: int | None = None,
        terminate_on_success: bool = False,
        reward_mode: str = "normalized_dense",
        sim_backend: str = "auto",
    ):
        """`cameras`: {camera: (height, width)}; None: the task's cameras at their own sizes."""
        spec = TASKS[task]
        self.task = task
        self.task_description = spec.description
        self.obs_type = obs_type
        self.control_mode = control_mode or spec.default_control_mode
        self.sizes: TaskSizes = task_sizes(task, self.control_mode)
        self.cameras = dict(cameras) if cameras is not None else dict(self.sizes.cameras)
        self.render_size = render_size
        self.episode_length = episode_length or spec.max_steps
        self._max_episode_steps = self.episode_length  # where LeRobot's rollout reads the limit
        self.terminate_on_success = terminate_on_success
        self.reward_mode = reward_mode
        self.sim_backend = sim_backend
        self.render_mode = "rgb_array"
        self.observation_space = build_observation_space(
            self.sizes, self.cameras if obs_type == "pixels_agent_pos" else {}
        )
        self.action_space = spaces.Box(
            np.asarray(self.sizes.action_low, np.float32), np.asarray(self.sizes.action_high, np.float32)
        )
        self._sim: Any = None
        self._steps = 0

    # --- the scene ------------------------------------------------------------------------
    @property
    def wants_cameras(self) -> bool:
        return self.obs_type == "pixels_agent_pos"

    def make_kwargs(self) -> dict[str, Any]:
        """ManiSkill's `gym.make` arguments for this env: what a raw ManiSkill loop passes to get
        the same scene (the fidelity tests build theirs with them)."""
        sim_backend = resolve_sim_backend(self.sim_backend)
        return {
            "obs_mode": "rgb+state_dict" if self.wants_cameras else "state_dict",
            "control_mode": self.control_mode,
            "reward_mode": self.reward_mode,
            "sim_backend": sim_backend,
            "render_backend": "cpu" if sim_backend == "physx_cpu" and not cuda_available() else "gpu",
            "render_mode": "rgb_array",
            "sensor_configs": {camera: {"height": h, "width": w} for camera, (h, w) in self.cameras.items()},
            "human_render_camera_configs": {"height": self.render_size, "width": self.render_size},
            "max_episode_steps": self.episode_length,
            "num_envs": 1,
        }

    def _ensure_sim(self) -> Any:
        if self._sim is None:
            import mani_skill.envs  # noqa: F401  (registers the tasks)

            self._sim = gym.make(self.task, **self.make_kwargs()).unwrapped
        return self._sim

    # --- gymnasium --------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is None:  # ManiSkill would draw from the OS; the env's own generator is seeded
            seed = int(self.np_random.integers(SEED_RANGE))
        raw_obs, raw_info = self._ensure_sim().reset(seed=seed)
        self._steps = 0
        return self.format_observation(raw_obs), self.reset_info(raw_info)

    def step(self, action: np.ndarray):
        action = np.asarray(action, dtype=np.float32)
        if action.shape != (self.sizes.action,):
            raise ValueError(
                f"{self.task} ({self.control_mode}) expects one action of shape ({self.sizes.action},), "
                f"got {action.shape}"
            )
        sim = self._ensure_sim()
        blind = self.wants_cameras and not self._images_wanted
        if blind:  # ManiSkill renders while it builds the observation: ask it for the state only
            sim._obs_mode = "state_dict"
        try:
            raw_obs, reward, _, _, raw_info = sim.step(self._sim_action(action))
        finally:
            if blind:
                sim._obs_mode = "rgb+state_dict"
        self._steps += 1
        info, terminated, truncated = self.step_outcome(raw_info, self._steps)
        return (
            self.format_observation(raw_obs, blind),
            float(as_numpy(reward)[0]),
            terminated,
            truncated,
            info,
        )

    def step_outcome(self, raw_info: dict, steps: int, row: int = 0) -> tuple[dict, bool, bool]:
        """(info, terminated, truncated) of batch row `row` after its `steps`-th step: ManiSkill's
        `fail` ends the episode, its `success` only with `terminate_on_success`."""
        info = scalar_info(raw_info, row)
        success, failed = bool(info.pop("success", False)), bool(info.get("fail", False))
        info.update(is_success=success, task=self.task)
        terminated = failed or (success and self.terminate_on_success)
        truncated = steps >= self.episode_length and not terminated
        return info, terminated, truncated

    def reset_info(self, raw_info: dict, row: int = 0) -> dict:
        info = {"task": self.task, **scalar_info(raw_info, row)}
        info["is_success"] = bool(info.pop("success", False))
        return info

    def render(self) -> np.ndarray:
        """ManiSkill's render camera (its view for videos), at `render_size`."""
        frame = as_numpy(self._ensure_sim().render())
        return np.ascontiguousarray(frame[0, ..., :3], dtype=np.uint8)

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None

    # --- formats ----------------------------------------------------------------------------
    def _sim_action(self, action: np.ndarray) -> Any:
        """A two-arm task takes one action per agent (a dict, in ManiSkill's agent order)."""
        if not self.sizes.agents:
            return action
        parts, start = {}, 0
        for uid, size in self.sizes.agents:
            parts[uid], start = action[start : start + size], start + size
        return parts

    def format_observation(self, raw_obs: dict, blind: bool = False, row: int = 0) -> dict[str, Any]:
        """Batch row `row` of ManiSkill's observation in LeRobot's layout (black images when
        `blind`: ManiSkill was asked for the state only)."""
        obs: dict[str, Any] = {}
        if self.wants_cameras:
            obs["pixels"] = {
                camera: np.zeros((h, w, 3), np.uint8)
                if blind
                else camera_image(raw_obs["sensor_data"], camera, row)
                for camera, (h, w) in self.cameras.items()
            }
        obs["agent_pos"] = flat_vector(raw_obs["agent"], row)
        obs["environment_state"] = flat_vector(raw_obs["extra"], row)
        return obs


def scalar_info(raw_info: dict, row: int = 0) -> dict[str, Any]:
    """Batch row `row` of ManiSkill's info as Python scalars: its per-env flags and metrics."""
    info: dict[str, Any] = {}
    for key, value in raw_info.items():
        array = as_numpy(value)
        if array.ndim == 1 and row < array.shape[0]:
            info[key] = array[row].item()
        elif array.ndim == 0:
            info[key] = array.item()
    return info


def build_observation_space(sizes: TaskSizes, cameras: dict[str, tuple[int, int]]) -> spaces.Dict:
    def vector(dim: int) -> spaces.Box:
        return spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float32)

    entries: dict[str, spaces.Space] = {}
    if cameras:
        entries["pixels"] = spaces.Dict(
            {
                camera: spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8)
                for camera, (h, w) in cameras.items()
            }
        )
    entries["agent_pos"] = vector(sizes.state)
    entries["environment_state"] = vector(sizes.environment_state)
    return spaces.Dict(entries)


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def resolve_sim_backend(sim_backend: str) -> str:
    """`auto`: PhysX on the GPU where CUDA is, else on the CPU."""
    if sim_backend != "auto":
        return sim_backend
    return "physx_cuda" if cuda_available() else "physx_cpu"
