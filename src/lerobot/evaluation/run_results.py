"""eval_info.json read back as types: what every report view (HTML, markdown, log) shows.

Reports are rebuilt from eval_info.json alone, so results written by an older version, or by
LeRobot itself without intervals or provenance, still get one: missing intervals are computed
here from the success counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lerobot.evaluation.metrics import EVAL_INFO_FILENAME
from lerobot.evaluation.stats import pc_wilson_interval


@dataclass(frozen=True)
class Rate:
    """The aggregate numbers of a task, a suite or a whole run."""

    n_episodes: int
    pc_success: float | None
    pc_success_ci95: tuple[float, float] | None
    pc_success_at_end: float | None
    avg_episode_length: float | None
    avg_sum_reward: float | None
    eval_s: float | None


@dataclass(frozen=True)
class TaskRow:
    group: str
    task_id: int
    task: str
    description: str
    rate: Rate

    @property
    def key(self) -> tuple[str, str]:
        """What identifies a task across runs: ids depend on the task list a run was given."""
        return self.group, self.task


@dataclass(frozen=True)
class RunResults:
    """One evaluation run as the report reads it from its eval_info.json."""

    output_dir: Path
    tasks: tuple[TaskRow, ...]
    groups: dict[str, Rate]
    overall: Rate
    episodes: tuple[dict[str, Any], ...]
    provenance: dict[str, Any]
    complete: bool
    n_episodes_failed: int
    n_episodes_retried: int

    @property
    def config(self) -> dict[str, Any]:
        return self.provenance.get("config") or {}

    @property
    def name(self) -> str:
        return self.config.get("job_name") or self.output_dir.name

    @property
    def has_suites(self) -> bool:
        """Whether suites group several tasks; Meta-World task lists make one suite per task."""
        return any(row.group != row.task for row in self.tasks)

    def title(self) -> str:
        policy = (self.config.get("policy") or {}).get("type")
        env = (self.config.get("env") or {}).get("type")
        return f"{policy} on {env}" if policy and env else self.name


class UnreadableResultsError(ValueError):
    """An output directory without a readable eval_info.json; the message names the file."""


def load_run(output_dir: Path) -> RunResults:
    """Read `<output_dir>/eval_info.json`."""
    path = Path(output_dir) / EVAL_INFO_FILENAME
    if not path.is_file():
        raise UnreadableResultsError(
            f"{output_dir}: no {EVAL_INFO_FILENAME}; is it a lerobot-eval --output_dir?"
        )
    try:
        info = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UnreadableResultsError(f"{path}: not valid JSON ({exc})") from None
    return run_from_info(info, Path(output_dir))


def run_from_info(info: dict[str, Any], output_dir: Path) -> RunResults:
    tasks = tuple(
        TaskRow(
            group=str(t.get("task_group", "")),
            task=str(t.get("task") or t.get("task_group", "")),
            task_id=int(t.get("task_id", 0)),
            description=str(t.get("task_description") or ""),
            rate=rate_from_metrics(t.get("metrics", {})),
        )
        for t in info.get("per_task", [])
    )
    overall = info.get("overall") or info.get("aggregated") or {}
    return RunResults(
        output_dir=Path(output_dir),
        tasks=tasks,
        groups={g: rate_from_metrics(m) for g, m in (info.get("per_group") or {}).items()},
        overall=rate_from_metrics(overall),
        episodes=tuple(info.get("per_episode", [])),
        provenance=info.get("provenance") or {},
        complete=info.get("complete", True) is not False,
        n_episodes_failed=int(info.get("n_episodes_failed") or 0),
        n_episodes_retried=int(info.get("n_episodes_retried") or 0),
    )


def rate_from_metrics(metrics: dict[str, Any]) -> Rate:
    """A Rate from an aggregate block, computing the interval when an older file lacks it."""
    n = int(metrics.get("n_episodes") or 0)
    pc_success = metrics.get("pc_success")
    interval = metrics.get("pc_success_ci95")
    if interval is None and pc_success is not None and n:
        successes = metrics.get("n_successes", round(pc_success * n / 100))
        interval = pc_wilson_interval(int(successes), n)
    return Rate(
        n_episodes=n,
        pc_success=pc_success,
        pc_success_ci95=tuple(interval) if interval else None,
        pc_success_at_end=metrics.get("pc_success_at_end"),
        avg_episode_length=metrics.get("avg_episode_length"),
        avg_sum_reward=metrics.get("avg_sum_reward"),
        eval_s=metrics.get("eval_s"),
    )


def run_labels(runs: Sequence[RunResults]) -> list[str]:
    """'A: job name' per run; directory names where job names repeat (same policy type twice)."""
    names = [run.name for run in runs]
    if len(set(names)) < len(names):
        names = [run.output_dir.name for run in runs]
    if len(set(names)) < len(names):
        names = [str(run.output_dir) for run in runs]
    return [f"{chr(ord('A') + i)}: {name}" if i < 26 else name for i, name in enumerate(names)]


def compared_tasks(runs: Sequence[RunResults]) -> list[tuple[str, str]]:
    """Every (suite, task) of any run, in the order they first appear."""
    keys: dict[tuple[str, str], None] = {}
    for run in runs:
        keys.update(dict.fromkeys(row.key for row in run.tasks))
    return list(keys)


def comparability_warning(runs: Sequence[RunResults]) -> str | None:
    """Why the runs' overall rates must not be compared directly, if they must not."""
    task_sets = {frozenset(row.key for row in run.tasks) for run in runs}
    if len(task_sets) > 1:
        return "The runs cover different tasks: compare them task by task, not by their overall rates."
    episode_counts = {tuple(row.rate.n_episodes for row in run.tasks) for run in runs}
    if len(episode_counts) > 1:
        return "The runs have different numbers of episodes per task: their intervals differ in width."
    return None


def task_rates(run: RunResults) -> dict[tuple[str, str], Rate]:
    return {row.key: row.rate for row in run.tasks}
