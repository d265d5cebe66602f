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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lerobot.configs.env import TaskSpec
from lerobot.evaluation.results import EpisodeResult, TaskKey
from lerobot.utils.io import to_strict_json
from lerobot.utils.signals import signals_deferred

logger = logging.getLogger(__name__)

JOURNAL_FILENAME = "episodes.jsonl"


@dataclass(frozen=True)
class JournalEntry:
    """One line of episodes.jsonl: a finished episode and the task it belongs to."""

    task_group: str
    task_id: int
    task: str
    task_description: str
    episode: EpisodeResult

    @property
    def task_key(self) -> TaskKey:
        return self.task_group, self.task_id

    @property
    def key(self) -> tuple[str, int, int]:
        """(group, task id, episode index): what a run holds at most once."""
        return self.task_group, self.task_id, self.episode.episode_index

    def to_record(self) -> dict[str, Any]:
        record = {
            "task_group": self.task_group,
            "task_id": self.task_id,
            "task": self.task,
            "task_description": self.task_description,
        }
        record.update(self.episode.to_record())
        return to_strict_json(record)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> JournalEntry:
        return cls(
            task_group=record["task_group"],
            task_id=record["task_id"],
            task=record.get("task", ""),
            task_description=record.get("task_description", ""),
            episode=EpisodeResult.from_record(record),
        )

    @classmethod
    def of(cls, task: TaskSpec, episode: EpisodeResult) -> JournalEntry:
        return cls(task.group, task.task_id, task.name, task.description, episode)


class EpisodeJournal:
    """Append-only record of finished episodes, keyed by (task group, task id, episode index)."""

    def __init__(self, output_dir: Path):
        self.path = Path(output_dir) / JOURNAL_FILENAME
        self.entries: list[JournalEntry] = self._load()

    def __len__(self) -> int:
        return len(self.entries)

    def _load(self) -> list[JournalEntry]:
        if not self.path.exists():
            return []
        text = self.path.read_text()
        lines = text.split("\n")
        complete, tail = lines[:-1], lines[-1]
        if tail:  # the last write was cut short: keep only whole lines on disk
            logger.warning("%s: dropping a partial last line", self.path)
            self.path.write_text("".join(line + "\n" for line in complete))
        entries: dict[tuple[str, int, int], JournalEntry] = {}
        for line in complete:
            if line.strip():
                entry = JournalEntry.from_record(json.loads(line))
                entries[entry.key] = entry
        return list(entries.values())

    def done_episodes(self, task_key: TaskKey) -> dict[int, EpisodeResult]:
        """Finished episodes of one task, by episode index."""
        return self.done_by_task().get(task_key, {})

    def done_by_task(self) -> dict[TaskKey, dict[int, EpisodeResult]]:
        """Every finished episode, by task and episode index."""
        done: dict[TaskKey, dict[int, EpisodeResult]] = {}
        for entry in self.entries:
            done.setdefault(entry.task_key, {})[entry.episode.episode_index] = entry.episode
        return done

    def append(self, task: TaskSpec, episode: EpisodeResult) -> None:
        self.write(JournalEntry.of(task, episode))

    def write(self, entry: JournalEntry) -> None:
        line = json.dumps(entry.to_record(), allow_nan=False)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # File and memory must agree even if Ctrl-C lands mid-append: the partial results
        # written on interrupt come from memory, a resume reads the file.
        with signals_deferred():
            with self.path.open("a") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())
            self.entries.append(entry)


def write_journal(output_dir: Path, entries: list[JournalEntry]) -> Path:
    """A whole journal at once (merged shards), one line per entry in the given order."""
    path = Path(output_dir) / JOURNAL_FILENAME
    lines = [json.dumps(entry.to_record(), allow_nan=False) for entry in entries]
    path.write_text("".join(line + "\n" for line in lines))
    return path
