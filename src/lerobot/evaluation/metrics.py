"""Aggregate episode results and write eval_info.json (strict JSON, written atomically)."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lerobot.evaluation.rollout import EpisodeResult
from lerobot.evaluation.stats import pc_wilson_interval

EVAL_INFO_FILENAME = "eval_info.json"


@dataclass(frozen=True)
class TaskResult:
    """All episodes of one task of one group."""

    group: str
    task_id: int
    task: str
    description: str
    episodes: tuple[EpisodeResult, ...]
    eval_s: float

    @property
    def video_paths(self) -> list[str]:
        return [e.video_path for e in self.episodes if e.video_path]


def aggregate(episodes: Sequence[EpisodeResult], eval_s: float) -> dict[str, Any]:
    """LeRobot's aggregate keys for a set of episodes (None where there is nothing to average),
    plus the success count and its 95% Wilson interval in percent (`pc_success_ci95`)."""
    n = len(episodes)
    n_successes = sum(1 for e in episodes if e.success)
    return {
        "pc_success": _mean([100.0 * e.success for e in episodes]),
        "pc_success_ci95": pc_wilson_interval(n_successes, n),
        "n_successes": n_successes,
        "pc_success_at_end": _mean([100.0 * e.success_at_end for e in episodes]),
        "n_episodes": n,
        "avg_sum_reward": _mean([e.sum_reward for e in episodes]),
        "avg_max_reward": _mean([e.max_reward for e in episodes]),
        "avg_episode_length": _mean([e.n_steps for e in episodes]),
        "eval_s": eval_s,
        "eval_ep_s": eval_s / n if n else None,
        "video_paths": [e.video_path for e in episodes if e.video_path],
    }


def episode_record(episode: EpisodeResult, task: TaskResult | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {}
    if task is not None:
        record.update(task_group=task.group, task_id=task.task_id, task=task.task)
    record.update(asdict(episode))
    record["episode_ix"] = episode.episode_index  # LeRobot's name for the same field
    return record


def task_metrics(task: TaskResult) -> dict[str, Any]:
    """Per-task block: the aggregates plus LeRobot's per-episode lists."""
    metrics = aggregate(task.episodes, task.eval_s)
    metrics.update(
        sum_rewards=[e.sum_reward for e in task.episodes],
        max_rewards=[e.max_reward for e in task.episodes],
        successes=[e.success for e in task.episodes],
    )
    return metrics


def build_eval_info(tasks: Sequence[TaskResult], eval_s: float, extra: dict[str, Any] | None = None) -> dict:
    """The whole eval_info.json document.

    `overall` is repeated as `aggregated` so that tools written for LeRobot's single-task
    output read our multi-task output too.
    """
    groups: dict[str, list[TaskResult]] = {}
    for task in tasks:
        groups.setdefault(task.group, []).append(task)
    all_episodes = [e for task in tasks for e in task.episodes]
    overall = aggregate(all_episodes, eval_s)
    info = {
        "per_episode": [episode_record(e, task) for task in tasks for e in task.episodes],
        "per_task": [
            {
                "task_group": task.group,
                "task_id": task.task_id,
                "task": task.task,
                "task_description": task.description,
                "metrics": task_metrics(task),
            }
            for task in tasks
        ],
        "per_group": {
            group: aggregate([e for t in members for e in t.episodes], sum(t.eval_s for t in members))
            for group, members in groups.items()
        },
        "overall": overall,
        "aggregated": dict(overall),
    }
    if extra:
        info.update(extra)
    return to_strict_json(info)


def to_strict_json(value: Any) -> Any:
    """Replace NaN and infinities by None, recursively, so the output is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): to_strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_strict_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return to_strict_json(value.item())
    return value


def write_json_atomic(data: Any, path: Path) -> Path:
    """Write strict JSON through a temporary file and a rename: readers never see half a file."""
    return write_text_atomic(json.dumps(to_strict_json(data), indent=2, allow_nan=False), path)


def write_text_atomic(text: str, path: Path) -> Path:
    """Write `text` to a temporary file in the same folder, fsync it, then rename it over `path`.

    The file gets the permissions a plain `open` would give it (mkstemp makes it private), so
    results on a shared disk stay readable by the rest of the team.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_eval_info(info: dict, output_dir: Path) -> Path:
    return write_json_atomic(info, Path(output_dir) / EVAL_INFO_FILENAME)


def _current_umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
