"""Meta-World: 50 single-arm Sawyer manipulation tasks (MuJoCo).

Tasks: the 50 v3 tasks of Meta-World 3.0.0 (`push-v3`, ..., also spelled `metaworld-push-v3`),
grouped by LeRobot's difficulty split into `easy` (28), `medium` (11), `hard` (6) and
`very_hard` (5), plus `mt50` (all). `--env.task` takes one task, one group or a comma list.
Randomisation: object and goal positions are drawn uniformly from the task's reset space.
Seeding: the env's generator is re-seeded at every `reset(seed=...)`; an episode's initial
state depends on its seed alone (Meta-World's own `reset` ignores its seed argument, and
without `seeded_rand_vec` draws from NumPy's global generator).
Success: Meta-World's `info["success"]`; like LeRobot, the episode ends at the first success.
Horizon: 500 steps (Meta-World's max_path_length).
Observations (LeRobot's convention, so checkpoints trained on its Meta-World data load):
`pixels` (corner2 camera, 480x480, upright) and `agent_pos` (hand xyz + gripper opening), plus
the full 39-d state as `environment_state`, which the scripted experts read.
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import pickle
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, ClassVar, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from lerobot.configs.env import EnvConfig, parse_name_list
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGE, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import ConfigError
from lerobot.utils.gl import default_mujoco_gl

logger = logging.getLogger(__name__)

# MuJoCo picks its GL backend when first imported, in whichever process imports it first (the
# fork server preloading Meta-World, a worker, or this one): make EGL the default before then.
default_mujoco_gl()

TASK_PREFIX = "metaworld-"
ACTION_DIM = 4
AGENT_POS_DIM = 4
FULL_STATE_DIM = 39
MAX_PATH_LENGTH = 500
CAMERAS = ("corner", "corner2", "corner3", "topview", "behindGripper", "gripperPOV")
# corner2 moved as in LeRobot's Meta-World datasets (after Seo et al., 2022); its images come
# out upside down from MuJoCo and are rotated 180 degrees.
CORNER2_POSITION = (0.75, 0.075, 0.7)
ROTATED_CAMERAS = frozenset({"corner2"})
ObsType = Literal["pixels", "pixels_agent_pos", "state"]
OBS_TYPES: tuple[str, ...] = ("pixels", "pixels_agent_pos", "state")


@functools.cache
def load_task_table() -> dict[str, Any]:
    """Task names, descriptions, difficulty groups and expert class names (shipped JSON)."""
    text = resources.files("lerobot.envs").joinpath("metaworld_tasks.json").read_text()
    return json.loads(text)


def task_description(task: str) -> str:
    return load_task_table()["tasks"][task]["description"]


def expert_policy_name(task: str) -> str:
    return load_task_table()["tasks"][task]["expert_policy"]


def difficulty_groups() -> dict[str, list[str]]:
    """{group: tasks} in LeRobot's order, so task ids (and video folders) match its runs."""
    return {name: list(tasks) for name, tasks in load_task_table()["groups"].items()}


def resolve_task_groups(task_arg: str) -> dict[str, list[str]]:
    """`push-v3`, `metaworld-push-v3`, `easy`, `mt50` or a comma list -> {group: tasks}."""
    groups = difficulty_groups()
    known_tasks = load_task_table()["tasks"]
    resolved: dict[str, list[str]] = {}
    for token in (t.strip() for t in task_arg.split(",")):
        name = token.removeprefix(TASK_PREFIX)
        if name.startswith("libero"):
            raise ConfigError(
                f"--env.task={token!r}: a LIBERO suite, not a Meta-World task; use --env.type=libero"
            )
        if name in groups:
            resolved[name] = groups[name]
        elif name in known_tasks:
            resolved[name] = [name]
        else:
            choices = list(known_tasks) + list(groups)
            guess = difflib.get_close_matches(name, choices, n=1)
            hint = f"did you mean {guess[0]!r}? " if guess else ""
            raise ConfigError(
                f"--env.task={token!r}: unknown Meta-World task or group; {hint}"
                f"groups: {', '.join(groups)}; tasks: {', '.join(known_tasks)}"
            )
    return resolved


class MetaworldEnv(gym.Env):
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
    ):
        self.task = task
        self.fast_render = fast_render
        self.task_description = task_description(task)
        self.obs_type = obs_type
        self.camera_names = tuple(camera_names)
        self.height, self.width = observation_height, observation_width
        self.episode_length = episode_length
        self.terminate_on_success = terminate_on_success
        self.render_mode = "rgb_array"
        self.observation_space = build_observation_space(
            obs_type, self.camera_names, observation_height, observation_width
        )
        self.action_space = spaces.Box(-1.0, 1.0, shape=(ACTION_DIM,), dtype=np.float32)
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
        if len(self.camera_names) == 1:
            obs["pixels"] = self._render_camera(self.camera_names[0])
        else:
            obs["pixels"] = {cam: self._render_camera(cam) for cam in self.camera_names}
        return obs


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


@EnvConfig.register_subclass("metaworld")
@dataclass
class MetaworldEnvConfig(EnvConfig):
    worker_preload: ClassVar[tuple[str, ...]] = ("metaworld",)

    task: str = "push-v3"
    """A task (`push-v3`), a group (`easy`, `medium`, `hard`, `very_hard`, `mt50`) or a comma list."""
    fps: int = 80
    """Frame rate of the recorded videos (Meta-World's render fps)."""
    obs_type: ObsType = "pixels_agent_pos"
    """`pixels_agent_pos` (camera image + 4-d hand/gripper state), `pixels`, or `state` (full 39-d)."""
    camera_names: list[str] | str = field(default_factory=lambda: ["corner2"])
    """Cameras to render, e.g. `[corner2]` or `[corner2,gripperPOV]` (a single name works too);
    one becomes `observation.image`, several `observation.images.<name>`."""
    observation_height: int = 480
    observation_width: int = 480
    episode_length: int = MAX_PATH_LENGTH
    """Step limit per episode (at most Meta-World's 500)."""
    terminate_on_success: bool = True
    """End an episode at its first success (LeRobot's protocol)."""
    fast_render: bool = False
    """Render without shadows, reflections and anti-aliasing: faster on software GL, but the
    images differ from the default ones, so use it only for policies trained with it."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.obs_type not in OBS_TYPES:
            raise ConfigError(f"--env.obs_type={self.obs_type!r}: must be one of {', '.join(OBS_TYPES)}")
        self.camera_names = parse_name_list(self.camera_names, "--env.camera_names", CAMERAS)
        for flag, value in (
            ("observation_height", self.observation_height),
            ("observation_width", self.observation_width),
        ):
            if value <= 0:
                raise ConfigError(f"--env.{flag}={value}: must be a positive number of pixels")
        if not 0 < self.episode_length <= MAX_PATH_LENGTH:
            raise ConfigError(f"--env.episode_length={self.episode_length}: must be in 1..{MAX_PATH_LENGTH}")
        self.task_groups()  # reject unknown tasks now, before anything starts

    def task_groups(self) -> dict[str, list[str]]:
        return resolve_task_groups(self.task)

    def task_description(self, task_name: str) -> str:
        return task_description(task_name)

    def env_factory(self, task_name: str):
        return functools.partial(
            MetaworldEnv,
            task=task_name,
            obs_type=self.obs_type,
            camera_names=tuple(self.camera_names),
            observation_height=self.observation_height,
            observation_width=self.observation_width,
            episode_length=self.episode_length,
            terminate_on_success=self.terminate_on_success,
            fast_render=self.fast_render,
        )

    def observation_space(self) -> spaces.Dict:
        return build_observation_space(
            self.obs_type, tuple(self.camera_names), self.observation_height, self.observation_width
        )

    def action_space(self) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, shape=(ACTION_DIM,), dtype=np.float32)

    def policy_features(self) -> dict[str, PolicyFeature]:
        features = {ACTION: PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
        state_dim = FULL_STATE_DIM if self.obs_type == "state" else AGENT_POS_DIM
        if self.obs_type != "pixels":
            features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (state_dim,))
        features[OBS_ENV_STATE] = PolicyFeature(FeatureType.ENV, (FULL_STATE_DIM,))
        if self.obs_type != "state":
            image = PolicyFeature(FeatureType.VISUAL, (3, self.observation_height, self.observation_width))
            if len(self.camera_names) == 1:
                features[OBS_IMAGE] = image
            else:
                features.update({f"{OBS_IMAGES}.{cam}": image for cam in self.camera_names})
        return features
