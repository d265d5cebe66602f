"""robomimic's datasets (HDF5) as LeRobot v3 datasets whose frames are what `--env.type=robomimic`
gives a policy: `lerobot-train --dataset.root=<out>` then trains a policy that `lerobot-eval
--env.type=robomimic` evaluates as it is.

robomimic's layout (its docs/datasets/overview.md): the `data` group's `env_args` attribute is
JSON with `env_name` (robosuite's class), `type` (1: robosuite) and `env_kwargs`; each
demonstration is a group `data/demo_<i>` with `actions` (N, A) in [-1, 1] and `obs/`, one
dataset of N rows per observation key; an optional `mask/` group lists demo names per filter
key (`train`, `valid`, `20_percent`, ...). A raw `demo.hdf5` holds MuJoCo states only, no
`obs/`: robomimic's `dataset_states_to_obs.py` renders its observations.

The mapping is the env's (`lerobot.envs.robomimic.env.format_observation`), key for key:
- `observation.state`: each arm's `robot{i}_eef_pos`, `robot{i}_eef_quat`,
  `robot{i}_gripper_qpos` (`Task.proprio_keys`), float32;
- `observation.environment_state`: `object` (robomimic's name for robosuite's `object-state`);
- `observation.images.<camera>`: each `<camera>_image` as stored (robomimic stored them upright,
  as the env returns them), as videos;
- `action`: `actions`; 20 fps (robomimic's control frequency); one episode per demo, in the
  order of their numbers; the task string is the task table's description, the instruction
  the env gives.
Rewards, dones, MuJoCo states and `next_obs/` are left out: the policies train on none of them.

The demos go through the recorder (`recorder.DatasetRecorder`) as env observations, so the files
are those `lerobot-record-sim` writes and each demo is committed whole as it ends. Its
meta/recording.json keeps the conversion's settings, and each episode's demo: rollout i is
`data/demo_i`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lerobot.datasets.recording_log import RecordingLog
from lerobot.envs.robomimic.tasks import FPS, PROPRIO_SIZES, TASKS, Task, check_task
from lerobot.utils.errors import ConfigError, require_at_least, require_extra

if TYPE_CHECKING:
    from lerobot.datasets.recorder import DatasetRecorder

logger = logging.getLogger(__name__)

HDF5_ARG = "HDF5"
OUT_DIR_ARG = "OUT_DIR"
MODULES = ("h5py", "pyarrow")
"""What the robomimic extra installs for the conversion: HDF5 in, parquet out."""
DATA = "data"
MASK = "mask"
OBS = "obs"
ACTIONS = "actions"
OBJECT = "object"
IMAGE_SUFFIX = "_image"
DEMO_NAME = re.compile(r"demo_(\d+)")
ROBOSUITE_ENV_TYPE = 1
"""`env_args["type"]` of a robosuite dataset (robomimic's `EnvType.ROBOSUITE_TYPE`)."""
READ_STEPS = 100
"""Rows read from the file at once: a ToolHang demo's 240x240 frames (hundreds of MB) never sit
in memory whole."""


@dataclass(frozen=True)
class Conversion:
    """A conversion whose input checked out: which demos of `source` become episodes, and where."""

    source: Path
    out_dir: Path
    task: str
    """Our task name (`tasks.TASKS`), from the file's `env_name`."""
    demos: tuple[str, ...]
    """`data/` group names in the order of their numbers: the filter key's, at most max_episodes."""
    cameras: tuple[str, ...]
    """Cameras with a `<camera>_image` key (none in a low-dim dataset)."""
    repo_id: str
    filter_key: str | None = None

    def settings(self) -> dict[str, Any]:
        """What meta/recording.json says made the dataset."""
        return {
            "converted_from": str(self.source.resolve()),
            "repo_id": self.repo_id,
            "env_name": TASKS[self.task].env_name,
            "filter_key": self.filter_key,
        }


def plan_conversion(
    hdf5: Path,
    out_dir: Path,
    filter_key: str | None = None,
    max_episodes: int | None = None,
    repo_id: str | None = None,
) -> Conversion:
    """Check the file and the arguments, reading the file's layout only (no frame); a one-line
    ConfigError naming the argument on bad input. Neither torch nor a simulator is imported."""
    hdf5, out_dir = Path(hdf5), Path(out_dir)
    require_extra(f"{HDF5_ARG} {hdf5}", "robomimic", MODULES)
    if max_episodes is not None:
        require_at_least("--max_episodes", max_episodes, 1)
    check_out_dir(out_dir)
    with open_hdf5(hdf5) as handle:
        data = data_group(handle, hdf5)
        task = TASKS[task_of(data, hdf5)]
        demos = select_demos(handle, data, hdf5, filter_key)[:max_episodes]
        cameras = cameras_of(data[demos[0]], task, hdf5)
        for demo in demos:
            check_demo(data[demo], task, cameras, hdf5)
        demos = drop_empty(data, demos, hdf5)
    logger.info(
        "%s: %d demos of %s; cameras %s",
        hdf5,
        len(demos),
        task.env_name,
        ", ".join(f"{camera} {h}x{w}" for camera, (h, w) in cameras.items()) or "none (low-dim)",
    )
    repo_id = repo_id or f"robomimic/{task.name}_{hdf5.stem}"
    return Conversion(hdf5, out_dir, task.name, demos, tuple(cameras), repo_id, filter_key)


def convert(conversion: Conversion) -> Path:
    """Write the demos as episodes; returns the dataset's root. Each episode is committed as it
    ends: a conversion stopped part-way leaves the dataset of the demos before."""
    import h5py

    from lerobot.datasets.recorder import DatasetRecorder  # loads torch: only once the input checked out

    task = TASKS[conversion.task]
    log = RecordingLog(conversion.settings())
    recorder = DatasetRecorder(conversion.out_dir, FPS, task.description, log=log)
    try:
        with h5py.File(conversion.source, "r") as handle:
            for done, demo in enumerate(conversion.demos, start=1):
                add_demo(recorder, handle[DATA][demo], demo_number(demo), task, conversion.cameras)
                if done % 50 == 0:
                    logger.info("%d of %d demos converted", done, len(conversion.demos))
    finally:
        recorder.close()
    return recorder.finish()


def add_demo(
    recorder: DatasetRecorder, demo: Any, episode: int, task: Task, cameras: tuple[str, ...]
) -> None:
    """One demo as one episode of `recorder`, committed at its end."""
    for step, (observation, action) in enumerate(demo_steps(demo, task, cameras)):
        recorder.add_step(episode, observation, action, step)
    recorder.end_episode(episode, keep=True)


def demo_steps(
    demo: Any, task: Task, cameras: tuple[str, ...]
) -> Iterator[tuple[dict[str, Any], np.ndarray]]:
    """Each step of `demo` as (the observation the env would give, the action)."""
    obs = demo[OBS]
    n_steps = len(demo[ACTIONS])
    for start in range(0, n_steps, READ_STEPS):
        rows = slice(start, min(start + READ_STEPS, n_steps))
        # float64 in the file, concatenated then cast as the env does
        state = np.concatenate([obs[key][rows] for key in task.proprio_keys], axis=1).astype(np.float32)
        env_state = np.asarray(obs[OBJECT][rows], dtype=np.float32)
        frames = {camera: obs[camera + IMAGE_SUFFIX][rows] for camera in cameras}
        actions = np.asarray(demo[ACTIONS][rows], dtype=np.float32)
        for i, action in enumerate(actions):
            observation: dict[str, Any] = {"agent_pos": state[i], "environment_state": env_state[i]}
            if cameras:
                observation["pixels"] = {camera: images[i] for camera, images in frames.items()}
            yield observation, action


# --- checking the input -----------------------------------------------------------------------
def check_out_dir(out_dir: Path) -> None:
    """A new (or empty) directory: a conversion never mixes its episodes into another dataset."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ConfigError(f"{OUT_DIR_ARG} {out_dir}: already exists; choose a new directory")


def open_hdf5(path: Path) -> Any:
    """The file, open for reading (an h5py.File, a context manager)."""
    if not path.is_file():
        raise ConfigError(f"{HDF5_ARG} {path}: no such file")
    import h5py

    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise ConfigError(f"{HDF5_ARG} {path}: not an HDF5 file ({exc})") from None


def data_group(handle: Any, path: Path) -> Any:
    data = handle.get(DATA)
    if data is None or "env_args" not in data.attrs:
        raise ConfigError(
            f"{HDF5_ARG} {path}: not a robomimic dataset (no `{DATA}` group with an `env_args` attribute)"
        )
    return data


def task_of(data: Any, path: Path) -> str:
    """Our task name for the file's `env_name` (robosuite's class name)."""
    try:
        env_args = json.loads(data.attrs["env_args"])
    except (TypeError, ValueError):
        raise ConfigError(f"{HDF5_ARG} {path}: its `env_args` attribute is not JSON") from None
    if env_args.get("type") != ROBOSUITE_ENV_TYPE:
        raise ConfigError(
            f"{HDF5_ARG} {path}: env_args type={env_args.get('type')!r}, not a robosuite dataset "
            f"(type {ROBOSUITE_ENV_TYPE}); --env.type=robomimic runs robosuite's tasks only"
        )
    env_name = str(env_args.get("env_name"))
    try:
        return check_task(env_name)
    except ConfigError:
        raise ConfigError(
            f"{HDF5_ARG} {path}: env_name {env_name!r} is not a robomimic task; robomimic's are "
            f"{', '.join(task.env_name for task in TASKS.values())}"
        ) from None


def demo_number(name: str) -> int:
    match = DEMO_NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"{name!r} is not a demo name (demo_<i>)")
    return int(match[1])


def select_demos(handle: Any, data: Any, path: Path, filter_key: str | None) -> tuple[str, ...]:
    """The demos to convert, in the order of their numbers (demo_10 after demo_9)."""
    every = {name for name in data if DEMO_NAME.fullmatch(name)}
    if not every:
        raise ConfigError(f"{HDF5_ARG} {path}: not a robomimic dataset (no {DATA}/demo_<i> group)")
    if filter_key is None:
        return tuple(sorted(every, key=demo_number))
    masks = handle.get(MASK)
    keys = sorted(masks) if masks is not None else []
    if filter_key not in keys:
        offered = f"its filter keys: {', '.join(keys)}" if keys else f"the file has no `{MASK}` group"
        raise ConfigError(f"--filter_key={filter_key}: not in {path}; {offered}")
    named = [name.decode() if isinstance(name, bytes) else str(name) for name in masks[filter_key][()]]
    unknown = [name for name in named if name not in every]
    if unknown:
        raise ConfigError(f"--filter_key={filter_key}: names {unknown[0]!r}, which {path} lacks")
    if not named:
        raise ConfigError(f"--filter_key={filter_key}: names no demo in {path}")
    return tuple(sorted(set(named), key=demo_number))


def cameras_of(demo: Any, task: Task, path: Path) -> dict[str, tuple[int, int]]:
    """{camera: (height, width)} of the `<camera>_image` keys of the first demo (which every demo
    must have): the task's robomimic cameras first, in its order."""
    if OBS not in demo:
        raise ConfigError(
            f"{HDF5_ARG} {path}: has no observations (a raw demo.hdf5, MuJoCo states only); "
            "robomimic's dataset_states_to_obs.py extracts them"
        )
    found = sorted(key.removesuffix(IMAGE_SUFFIX) for key in demo[OBS] if key.endswith(IMAGE_SUFFIX))
    ordered = [*(c for c in task.cameras if c in found), *(c for c in found if c not in task.cameras)]
    return {camera: tuple(demo[OBS][camera + IMAGE_SUFFIX].shape[1:3]) for camera in ordered}


def expected_widths(task: Task) -> dict[str, int]:
    """The width of each low-dim key the env's observation is made of."""
    widths = {key: PROPRIO_SIZES[key.split("_", 1)[1]] for key in task.proprio_keys}
    widths[OBJECT] = task.object_state
    return widths


def check_demo(demo: Any, task: Task, cameras: Mapping[str, tuple[int, int]], path: Path) -> None:
    """The demo has every key the env's observation is made of, at the env's sizes, with as many
    rows as actions: otherwise the dataset would not be what the env gives a policy."""
    where = f"{HDF5_ARG} {path}: {demo.name.lstrip('/')}"
    if OBS not in demo or ACTIONS not in demo:
        raise ConfigError(
            f"{where} lacks `{OBS}` or `{ACTIONS}` (every demo of a robomimic dataset has both)"
        )
    obs, n_steps = demo[OBS], len(demo[ACTIONS])
    if demo[ACTIONS].shape[1:] != (task.action,):
        raise ConfigError(
            f"{where}: actions of shape {demo[ACTIONS].shape[1:]}; {task.env_name}'s are ({task.action},)"
        )
    for key, width in expected_widths(task).items():
        if key not in obs:
            observed = ", ".join(expected_widths(task))
            raise ConfigError(f"{where} lacks obs/{key}; {task.env_name}'s env observes {observed}")
        if obs[key].shape != (n_steps, width):
            raise ConfigError(
                f"{where}: obs/{key} has shape {obs[key].shape}; the env's is ({n_steps}, {width})"
            )
    for camera, (height, width) in cameras.items():
        key = camera + IMAGE_SUFFIX
        if key not in obs:
            raise ConfigError(f"{where} lacks obs/{key}, which the first demo has")
        if obs[key].shape != (n_steps, height, width, 3):
            raise ConfigError(
                f"{where}: obs/{key} has shape {obs[key].shape}; the first demo's frames are "
                f"({height}, {width}, 3), and it has {n_steps} steps"
            )


def drop_empty(data: Mapping[str, Any], demos: tuple[str, ...], path: Path) -> tuple[str, ...]:
    """The demos with steps (an episode has at least one frame); the others are named in a warning."""
    empty = [demo for demo in demos if len(data[demo][ACTIONS]) == 0]
    if empty:
        logger.warning("left out %d demos without steps: %s", len(empty), ", ".join(empty))
    kept = tuple(demo for demo in demos if demo not in empty)
    if not kept:
        raise ConfigError(f"{HDF5_ARG} {path}: the selected demos have no steps ({', '.join(empty)})")
    return kept
