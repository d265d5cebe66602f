"""LIBERO's suites, tasks and constants (see `lerobot.envs.libero`): task ids, instructions,
step limits, cameras; read from the shipped tasks.json, without importing LIBERO, gymnasium
or NumPy."""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Callable
from importlib import resources

from lerobot.utils.errors import ConfigError

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
OBS_TYPES: tuple[str, ...] = ("pixels", "pixels_agent_pos")
# LeRobot's `--env.control_mode` values: delta (default) or absolute end-effector poses.
CONTROL_MODES = ("relative", "absolute")
# Length of LeRobot's LIBERO state: eef position (3), axis-angle (3), gripper qpos (2).
STATE_DIM = 8


@functools.cache
def load_suites() -> dict[str, list[dict[str, str]]]:
    """{suite: [{"name", "description"}, ...]} in task-id order (shipped JSON, no LIBERO import)."""
    text = resources.files(__package__).joinpath("tasks.json").read_text()
    return json.loads(text)["suites"]


@functools.cache
def _task_index() -> dict[str, tuple[str, str]]:
    """task name -> (suite, description); names are unique across the five suites."""
    return {
        task["name"]: (suite, task["description"]) for suite, tasks in load_suites().items() for task in tasks
    }


def suite_episode_length(suite: str) -> int:
    """The step limit of `suite`, or of the standard suite a LIBERO-PRO variant perturbs
    (`libero_spatial_lan` runs as long as `libero_spatial`)."""
    for base, length in SUITE_EPISODE_LENGTHS.items():
        if suite == base or suite.startswith(base + "_"):
            return length
    raise ValueError(f"no LIBERO suite is a prefix of {suite!r}; suites: {', '.join(SUITES)}")


def suite_of(task: str) -> str:
    if task not in _task_index():
        raise ValueError(
            f"unknown LIBERO task {task!r}; the tasks are listed in lerobot/envs/libero/tasks.json"
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


def standard_task_names(suite: str) -> list[str]:
    return [task["name"] for task in load_suites()[suite]]


def select_tasks(
    suites: list[str],
    task_ids: list[int] | None,
    task_names: Callable[[str], list[str]] = standard_task_names,
) -> dict[str, dict[int, str]]:
    """{suite: {task_id: task name}} for the given ids (all tasks when None), ids ascending;
    `task_names` lists a suite's tasks in id order (LIBERO-PRO passes its own)."""
    if task_ids is not None and not task_ids:
        raise ConfigError("--env.task_ids=[]: list at least one task id, or leave it unset for all tasks")
    selected: dict[str, dict[int, str]] = {}
    for suite in suites:
        names = task_names(suite)
        ids = range(len(names)) if task_ids is None else sorted(set(task_ids))
        bad = [i for i in ids if not 0 <= i < len(names)]
        if bad:
            raise ConfigError(
                f"--env.task_ids={task_ids}: {suite} has task ids 0..{len(names) - 1}, "
                f"not {', '.join(map(str, bad))}"
            )
        selected[suite] = {i: names[i] for i in ids}
    return selected
