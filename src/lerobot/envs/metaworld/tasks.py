"""Meta-World's tasks and constants: names, instructions, difficulty groups, sizes.

Read by the benchmark's config (`lerobot.envs.metaworld`), its env (`.env`) and the scripted
experts; imports neither gymnasium nor NumPy.
"""

from __future__ import annotations

import difflib
import functools
import json
from importlib import resources
from typing import Any

from lerobot.utils.errors import ConfigError

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
OBS_TYPES: tuple[str, ...] = ("pixels", "pixels_agent_pos", "state")


@functools.cache
def load_task_table() -> dict[str, Any]:
    """Task names, descriptions, difficulty groups and expert class names (shipped JSON)."""
    text = resources.files(__package__).joinpath("tasks.json").read_text()
    return json.loads(text)


def task_description(task: str) -> str:
    return load_task_table()["tasks"][task]["description"]


def expert_policy_name(task: str) -> str:
    return load_task_table()["tasks"][task]["expert_policy"]


def difficulty_groups() -> dict[str, list[str]]:
    """{group: tasks} in LeRobot's order, so task ids (and video folders) match its runs."""
    return {name: list(tasks) for name, tasks in load_task_table()["groups"].items()}


def resolve_task_groups(task_arg: str) -> dict[str, list[str]]:
    """`push-v3`, `metaworld-push-v3`, `easy`, `mt50` or a comma list -> {group: tasks}.

    A group is named as the user wrote it (`metaworld-push-v3` stays so, as in LeRobot's
    results); the task names inside are Meta-World's own (`push-v3`).
    """
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
            resolved[token] = groups[name]
        elif name in known_tasks:
            resolved[token] = [name]
        else:
            choices = list(known_tasks) + list(groups)
            guess = difflib.get_close_matches(name, choices, n=1)
            hint = f"did you mean {guess[0]!r}? " if guess else ""
            raise ConfigError(
                f"--env.task={token!r}: unknown Meta-World task or group; {hint}"
                f"groups: {', '.join(groups)}; tasks: {', '.join(known_tasks)}"
            )
    return resolved
