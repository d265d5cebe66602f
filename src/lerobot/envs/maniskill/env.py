"""One ManiSkill3 task as a gymnasium env in LeRobot's observation format (see `lerobot.envs.maniskill`),
and a task's whole batch in one scene (`BatchedScene`).

Kept apart from the config so that a command line is checked without gymnasium, NumPy, torch or
SAPIEN: the config names `ManiskillEnv` by its entry point, and this module is imported only
where an env is built.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.configs.env import TaskSpec
from lerobot.envs.blind_steps import StepsWithoutImages
from lerobot.envs.commands import StepResult
from lerobot.envs.maniskill.backend import cuda_available, resolve_sim_backend
from lerobot.envs.maniskill.observation import as_numpy, camera_image, flat_vector
from lerobot.envs.maniskill.tasks import FPS, TASKS, TaskSizes, task_sizes
from lerobot.envs.slots import ResetOutcomes, SlotFailure, SlotRound, StepOutcomes
from lerobot.envs.spaces import cameras_and_states_space

logger = logging.getLogger(__name__)

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
        self.observation_space = cameras_and_states_space(
            self.cameras if obs_type == "pixels_agent_pos" else {},
            self.sizes.state,
            self.sizes.environment_state,
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
        blind = self.wants_cameras and not self._images_wanted
        raw_obs, reward, raw_info = self.step_scene(self._ensure_sim(), action, blind)
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
    def step_scene(self, scene: Any, actions: Any, blind: bool) -> tuple[Any, Any, dict]:
        """Step a ManiSkill scene (one env's action, or a batch's): (raw observation, reward,
        raw info). `blind`: nobody reads the images, and ManiSkill, which renders while it builds
        the observation, is asked for the state only."""
        if blind:
            scene._obs_mode = "state_dict"
        try:
            raw_obs, reward, _, _, raw_info = scene.step(self._sim_action(actions))
        finally:
            if blind:
                scene._obs_mode = "rgb+state_dict"
        return raw_obs, reward, raw_info

    def _sim_action(self, actions: Any) -> Any:
        """A two-arm task takes one action per agent (a dict, in ManiSkill's agent order), split
        along the last axis of one action or of a batch of them."""
        if not self.sizes.agents:
            return actions
        parts, start = {}, 0
        for uid, size in self.sizes.agents:
            parts[uid], start = actions[..., start : start + size], start + size
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


class BatchedScene:
    """Every slot of a task in this process, in batched ManiSkill scenes built on first use: one
    scene of `num_envs` envs on the GPU (physx_cuda), where ManiSkill simulates and renders a
    batch at once, so 64-1,024 envs cost one process instead of a worker each; one-env scenes on
    the CPU (physx_cpu builds no other), stepped one after the other. A `SlotEnv` (the slot API
    of `lerobot.envs.slots`): slot i is env i of the scenes in order.

    What sharing a scene changes, and how each slot still runs its own episode:
    - ManiSkill steps every env of a scene at once. A round's stepping slots get their actions;
      the others (finished, or about to reset) get zeros, and their state is dropped.
    - Resets come after the round's step, one slot at a time, each with its episode's seed in
      every place ManiSkill reads one (a partial reset draws from the first seed given, for all
      the envs it resets): a slot starts as a one-env scene reset with that seed starts.
    - A failed scene fails every slot of the round; `restart` builds new scenes.
    """

    runs_action_chunks = False

    def __init__(self, env_kwargs: dict[str, Any], num_envs: int, task: TaskSpec):
        self.formats = ManiskillEnv(**env_kwargs)  # spaces, gym.make arguments, row formats
        self.num_envs = num_envs
        self.task = task
        self.single_action_space = self.formats.action_space
        self.single_observation_space = self.formats.observation_space
        self.metadata = {"render_fps": task.fps, "task": task.name, "task_description": task.description}
        self._scenes: list[Any] = []
        self._steps = [0] * num_envs
        self._active: set[int] = set()

    @property
    def started(self) -> bool:
        return bool(self._scenes)

    @property
    def scene_size(self) -> int:
        """Envs per scene: the whole batch on the GPU, one on the CPU."""
        return 1 if resolve_sim_backend(self.formats.sim_backend) == "physx_cpu" else self.num_envs

    def _built_scenes(self) -> list[Any]:
        if not self._scenes:
            import mani_skill.envs  # noqa: F401  (registers the tasks)

            kwargs = {**self.formats.make_kwargs(), "num_envs": self.scene_size}
            count = self.num_envs // self.scene_size
            self._scenes = [gym.make(self.formats.task, **kwargs).unwrapped for _ in range(count)]
            logger.info(
                "%s: %d envs in %d %s scene(s), one process",
                self.task.name,
                self.num_envs,
                count,
                kwargs["sim_backend"],
            )
        return self._scenes

    def _where(self, slot: int) -> tuple[Any, int]:
        """(the scene of `slot`, its row there)."""
        return self._built_scenes()[slot // self.scene_size], slot % self.scene_size

    # --- the slot API -----------------------------------------------------------------------
    def step_and_reset_at(self, round_: SlotRound) -> tuple[StepOutcomes, ResetOutcomes]:
        self._check_every_running_slot_steps(round_)
        try:
            steps = self._step(round_) if round_.step_ids else []
            resets = [
                self._reset(slot, seed) for slot, seed in zip(round_.reset_ids, round_.seeds, strict=True)
            ]
        except Exception as exc:  # the scenes step together: every slot of the round fails
            message = f"{type(exc).__name__}: {exc}"
            logger.debug("batched ManiSkill scene failed", exc_info=True)
            failure = [SlotFailure(slot, "error", message) for slot in (*round_.step_ids, *round_.reset_ids)]
            return failure[: len(round_.step_ids)], failure[len(round_.step_ids) :]
        return steps, resets

    def render_at(self, env_ids: Sequence[int], tolerate_failures: bool = False) -> list[Any]:
        try:
            frames = self._frames(env_ids)
        except Exception as exc:
            if not tolerate_failures:
                raise
            return [SlotFailure(slot, "error", f"{type(exc).__name__}: {exc}") for slot in env_ids]
        return [frames[slot] for slot in env_ids]

    def restart(self, env_ids: Sequence[int]) -> None:
        """New scenes: the slots step together, so none of the old episodes go on."""
        self.close()

    def close(self) -> None:
        for scene in self._scenes:
            scene.close()
        self._scenes = []
        self._active.clear()

    def call(self, name: str, *args, **kwargs) -> tuple[Any, ...]:
        """An attribute of the slots' env, once per slot (LeRobot's `env.call`)."""
        attr = getattr(self.formats, name)
        return tuple(attr(*args, **kwargs) if callable(attr) else attr for _ in range(self.num_envs))

    # --- a round ------------------------------------------------------------------------------
    def _check_every_running_slot_steps(self, round_: SlotRound) -> None:
        """A scene steps every env at once: a slot mid-episode left out of a round would be
        stepped with a zero action all the same."""
        left_out = self._active - set(round_.step_ids) - set(round_.reset_ids)
        if left_out:
            raise RuntimeError(
                f"slots {sorted(left_out)} are mid-episode but not in this round: a batched ManiSkill "
                "scene steps all its envs together"
            )

    def _frames(self, slots: Sequence[int]) -> dict[int, np.ndarray]:
        """The render camera's frame of each of `slots` (one render per scene)."""
        by_scene: dict[int, np.ndarray] = {}
        frames = {}
        for slot in slots:
            index = slot // self.scene_size
            if index not in by_scene:
                by_scene[index] = as_numpy(self._built_scenes()[index].render())
            frames[slot] = np.ascontiguousarray(by_scene[index][slot % self.scene_size, ..., :3], np.uint8)
        return frames

    def _step(self, round_: SlotRound) -> list[StepResult]:
        stepping = dict(zip(round_.step_ids, round_.actions, strict=True))
        blind = self.formats.wants_cameras and set(stepping) <= set(round_.blind_ids)
        outcomes: dict[int, tuple] = {}
        for index, scene in enumerate(self._built_scenes()):
            rows = range(index * self.scene_size, (index + 1) * self.scene_size)
            if any(slot in stepping for slot in rows):
                outcomes.update(self._step_scene(scene, rows, stepping, blind))
        frames = self._frames(round_.render_ids) if round_.render_ids else {}
        results = []
        for slot in round_.step_ids:
            raw_obs, reward, raw_info, row = outcomes[slot]
            self._steps[slot] += 1
            info, terminated, truncated = self.formats.step_outcome(raw_info, self._steps[slot], row)
            observation = self.formats.format_observation(raw_obs, blind, row)
            results.append(
                StepResult(observation, reward, terminated, truncated, info, frames.get(slot), not blind)
            )
            if terminated or truncated:
                self._active.discard(slot)
        return results

    def _step_scene(self, scene: Any, slots: range, stepping: dict[int, np.ndarray], blind: bool) -> dict:
        """Step one scene: {slot: (raw observation, reward, raw info, row)} for its stepping slots."""
        import torch

        actions = np.zeros((len(slots), self.formats.sizes.action), np.float32)
        for row, slot in enumerate(slots):
            if slot in stepping:
                actions[row] = stepping[slot]
        batch = torch.from_numpy(actions).to(scene.device)
        raw_obs, reward, raw_info = self.formats.step_scene(scene, batch, blind)
        rewards = as_numpy(reward).reshape(-1)
        return {
            slot: (raw_obs, float(rewards[row]), raw_info, row)
            for row, slot in enumerate(slots)
            if slot in stepping
        }

    def _reset(self, slot: int, seed: int | None) -> tuple[dict, dict]:
        import torch

        scene, row = self._where(slot)
        if seed is None:
            seed = int(np.random.default_rng().integers(SEED_RANGE))
        # ManiSkill seeds a partial reset's draws with the first seed of the list and each env's
        # generator with its own entry: the episode's seed in every place makes this row start
        # as a one-env scene reset with `seed` does.
        raw_obs, raw_info = scene.reset(
            seed=[seed] * scene.num_envs, options={"env_idx": torch.tensor([row], device=scene.device)}
        )
        self._steps[slot] = 0
        self._active.add(slot)
        return self.formats.format_observation(raw_obs, row=row), self.formats.reset_info(raw_info, row)
