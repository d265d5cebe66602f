"""episodes.jsonl: every finished episode on disk the moment it ends.

A long evaluation must survive a killed job, a pre-empted node or Ctrl-C without losing what
it finished. Each record is one JSON line, flushed and fsynced before the loop moves on; a
resumed run reads the journal back and runs only the episodes it lacks. A line cut short by a
kill mid-write is dropped on load (that episode simply runs again). When an episode appears
twice (it failed for good because of the harness, then a resume ran it again), the later line
wins.
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
from lerobot.utils.errors import ResultsWriteError
from lerobot.utils.io import to_strict_json, write_text_atomic
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
        """The journal's entries; unreadable lines are moved aside with a warning.

        A last line without its newline was cut short by a kill mid-write; a line that does not
        decode (a disk error, an edit) is named by its number. Both are moved to
        `episodes.jsonl.corrupt` and their episodes simply run again on resume.
        """
        if not self.path.exists():
            return []
        lines = self.path.read_text(errors="replace").split("\n")
        complete, tail = lines[:-1], lines[-1]
        entries: dict[tuple[str, int, int], JournalEntry] = {}
        kept, bad = [], []
        for number, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            entry = _decode(line)
            if entry is None:
                logger.warning("%s: line %d is not a readable episode record; moved aside", self.path, number)
                bad.append(line)
                continue
            kept.append(line)
            entries[entry.key] = entry
        if tail:
            logger.warning("%s: dropping a partial last line (a write was cut short)", self.path)
            bad.append(tail)
        if bad:
            self._set_aside(kept, bad)
        return list(entries.values())

    def _set_aside(self, kept: list[str], bad: list[str]) -> None:
        with self.path.with_name(self.path.name + ".corrupt").open("a") as f:
            f.write("".join(line + "\n" for line in bad))
        write_text_atomic("".join(line + "\n" for line in kept), self.path)

    def done_episodes(self, task_key: TaskKey) -> dict[int, EpisodeResult]:
        """Finished episodes of one task, by episode index."""
        return self.done_by_task().get(task_key, {})

    def done_by_task(self) -> dict[TaskKey, dict[int, EpisodeResult]]:
        """Every episode that ran to its end, by task and episode index.

        An episode the harness failed for good is not done: a resumed run runs it again, and
        its new line replaces the failed one when the journal is read back.
        """
        done: dict[TaskKey, dict[int, EpisodeResult]] = {}
        for entry in self.entries:
            if not entry.episode.failure_reason:
                done.setdefault(entry.task_key, {})[entry.episode.episode_index] = entry.episode
        return done

    def append(self, task: TaskSpec, episode: EpisodeResult) -> None:
        self.write(JournalEntry.of(task, episode))

    def write(self, entry: JournalEntry) -> None:
        line = json.dumps(entry.to_record(), allow_nan=False)
        # File and memory must agree even if Ctrl-C lands mid-append: the partial results
        # written on interrupt come from memory, a resume reads the file. A write that fails
        # (disk full) may leave part of a line, which the next load drops.
        with signals_deferred():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as f:
                    f.write(line + "\n")
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as exc:
                raise ResultsWriteError(
                    f"{self.path}: cannot write ({exc.strerror or exc}); it keeps the {len(self.entries)} "
                    "episodes finished before: free space, then continue with --eval.resume=true"
                ) from None
            self.entries.append(entry)


def _decode(line: str) -> JournalEntry | None:
    try:
        record = json.loads(line)
        return JournalEntry.from_record(record) if isinstance(record, dict) else None
    except (ValueError, KeyError, TypeError):
        return None


def write_journal(output_dir: Path, entries: list[JournalEntry]) -> Path:
    """A whole journal at once (merged shards), one line per entry in the given order."""
    path = Path(output_dir) / JOURNAL_FILENAME
    lines = [json.dumps(entry.to_record(), allow_nan=False) for entry in entries]
    path.write_text("".join(line + "\n" for line in lines))
    return path
