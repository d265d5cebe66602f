"""eval_info.json read back: ours of any version, or LeRobot's own.

Reading is lenient, so an eval_info.json of an older version or of LeRobot itself (no
intervals, no provenance, fewer episode fields) still gives a run that reports can show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lerobot.evaluation.results.episodes import EpisodeResult
from lerobot.evaluation.results.run import MissingEpisode, RunResult, TaskKey, TaskResult
from lerobot.evaluation.results.summary import Summary

EVAL_INFO_FILENAME = "eval_info.json"

RESULT_KEYS = ("per_task", "per_episode", "overall", "aggregated")
"""Top-level keys of which an eval_info.json (ours or LeRobot's) has at least one."""


class UnreadableResultsError(ValueError):
    """An output directory without a readable eval_info.json; the message names the file."""


def load_run(output_dir: Path) -> RunResult:
    """Read `<output_dir>/eval_info.json`."""
    path = Path(output_dir) / EVAL_INFO_FILENAME
    if not path.is_file():
        raise UnreadableResultsError(
            f"{output_dir}: no {EVAL_INFO_FILENAME}; is it a lerobot-eval --output_dir?"
        )
    try:
        info = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UnreadableResultsError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(info, dict):
        raise UnreadableResultsError(
            f"{path}: not an eval_info.json (a JSON {type(info).__name__}, not an object)"
        )
    if not any(info.get(key) for key in RESULT_KEYS):
        raise UnreadableResultsError(f"{path}: holds no results (none of {', '.join(RESULT_KEYS)})")
    return run_from_eval_info(info, Path(output_dir))


def run_from_eval_info(info: Mapping[str, Any], output_dir: Path | None = None) -> RunResult:
    """A run as an eval_info.json document describes it (ours, older ones, or LeRobot's)."""
    episodes_by_task: dict[TaskKey, list[EpisodeResult]] = {}
    for record in info.get("per_episode") or []:
        key = (str(record.get("task_group", "")), int(record.get("task_id", 0)))
        episodes_by_task.setdefault(key, []).append(EpisodeResult.from_record(record))
    tasks = tuple(_task_from_json(t, episodes_by_task) for t in info.get("per_task") or [])
    overall = info.get("overall") or info.get("aggregated") or {}
    if not tasks and episodes_by_task:  # LeRobot's single-task shape: episodes, no tasks
        (group, task_id), episodes = next(iter(episodes_by_task.items()))
        tasks = (TaskResult(group, task_id, "", "", tuple(episodes), 0.0, Summary.from_json(overall)),)
    return RunResult(
        tasks=tasks,
        groups={g: Summary.from_json(m) for g, m in (info.get("per_group") or {}).items()},
        overall=Summary.from_json(overall),
        complete=info.get("complete", True) is not False,
        n_episodes_retried=int(info.get("n_episodes_retried") or 0),
        n_episodes_failed=int(info.get("n_episodes_failed") or 0),
        provenance=info.get("provenance") or {},
        missing_episodes=_missing_from_json(info.get("missing_episodes")),
        merged_from=tuple(info["merged_from"]) if info.get("merged_from") is not None else None,
        output_dir=Path(output_dir) if output_dir is not None else None,
    )


def _task_from_json(entry: Mapping[str, Any], episodes: Mapping[TaskKey, list[EpisodeResult]]) -> TaskResult:
    group = str(entry.get("task_group", ""))
    task_id = int(entry.get("task_id", 0))
    metrics = entry.get("metrics") or {}
    return TaskResult(
        group=group,
        task_id=task_id,
        task=str(entry.get("task") or group),
        description=str(entry.get("task_description") or ""),
        episodes=tuple(episodes.get((group, task_id), ())),
        eval_s=float(metrics.get("eval_s") or 0.0),
        summary=Summary.from_json(metrics),
    )


def _missing_from_json(entries: Any) -> tuple[MissingEpisode, ...] | None:
    if entries is None:
        return None
    return tuple(MissingEpisode(e["task_group"], e["task_id"], e["episode_index"]) for e in entries)
