"""episodes.jsonl: every finished episode on disk the moment it ends.

A long evaluation must survive a killed job, a pre-empted node or Ctrl-C without losing what
it finished. Each record is one JSON line, flushed and fsynced before the loop moves on; a
resumed run reads the journal back and runs only the episodes it lacks. A line cut short by a
kill mid-write is dropped on load (that episode simply runs again).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from lerobot.evaluation.metrics import to_strict_json
from lerobot.evaluation.rollout import EpisodeResult
from lerobot.utils.signals import signals_deferred

logger = logging.getLogger(__name__)

JOURNAL_FILENAME = "episodes.jsonl"
_RESULT_FIELDS = {f.name for f in fields(EpisodeResult)}

TaskKey = tuple[str, int]


class EpisodeJournal:
    """Append-only record of finished episodes, keyed by (task group, task id, episode index)."""

    def __init__(self, output_dir: Path):
        self.path = Path(output_dir) / JOURNAL_FILENAME
        self.records: list[dict[str, Any]] = self._load()

    def _load(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        text = self.path.read_text()
        lines = text.split("\n")
        complete, tail = lines[:-1], lines[-1]
        if tail:  # the last write was cut short: keep only whole lines on disk
            logger.warning("%s: dropping a partial last line", self.path)
            self.path.write_text("".join(line + "\n" for line in complete))
        records = {}
        for line in complete:
            if line.strip():
                record = json.loads(line)
                records[(record["task_group"], record["task_id"], record["episode_index"])] = record
        return list(records.values())

    def done_episodes(self, group: str, task_id: int) -> dict[int, EpisodeResult]:
        """Finished episodes of one task, by episode index."""
        return {
            r["episode_index"]: result_from_record(r)
            for r in self.records
            if r["task_group"] == group and r["task_id"] == task_id
        }

    def append(self, group: str, task_id: int, task: str, description: str, result: EpisodeResult) -> None:
        record = {"task_group": group, "task_id": task_id, "task": task, "task_description": description}
        record.update(asdict(result))
        line = json.dumps(to_strict_json(record), allow_nan=False)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # File and memory must agree even if Ctrl-C lands mid-append: the partial results
        # written on interrupt come from memory, a resume reads the file.
        with signals_deferred():
            with self.path.open("a") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())
            self.records.append(record)


def result_from_record(record: dict[str, Any]) -> EpisodeResult:
    values = {k: v for k, v in record.items() if k in _RESULT_FIELDS}
    for key in ("sum_reward", "max_reward"):
        if values.get(key) is None:  # a non-finite reward was stored as null
            values[key] = float("nan")
    return EpisodeResult(**values)
