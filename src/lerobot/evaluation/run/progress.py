"""Console progress of a running evaluation: one bar per task.

A suite of long-horizon tasks takes hours; a bar with episodes done, the running success rate and an ETA tells
at a glance whether to wait or to stop a broken run. Bars redraw with carriage returns, which
turn a log file into one enormous line, so they stay quiet when stderr is not a terminal and
under Slurm (whose job logs are files even when `srun --pty` fakes a terminal). The per-task
lines and the final table go through `logging` either way.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from lerobot.evaluation.results import EpisodeResult


def progress_enabled(stream: TextIO | None = None) -> bool:
    """Bars only for a person watching a terminal, never in batch jobs."""
    stream = stream if stream is not None else sys.stderr
    return stream.isatty() and "SLURM_JOB_ID" not in os.environ


class TaskProgress:
    """Progress bar of one task: `push-v3  7/10 ep [00:12<00:05] success 71%`.

    Episodes finished by an earlier run (resume) count as done from the start, and in the
    success rate, but not in the speed behind the ETA.
    """

    def __init__(self, label: str, total: int, done: list[EpisodeResult], enabled: bool):
        self.n_done = len(done)
        self.n_successes = sum(1 for e in done if e.success)
        self._bar = tqdm(
            total=total,
            initial=self.n_done,
            desc=label,
            unit="ep",
            postfix=self._success_text(),
            disable=not enabled,
            dynamic_ncols=True,
            leave=True,
        )

    def update(self, result: EpisodeResult) -> None:
        self.n_done += 1
        self.n_successes += bool(result.success)
        self._bar.set_postfix_str(self._success_text(), refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()

    @property
    def success_rate(self) -> float | None:
        return self.n_successes / self.n_done if self.n_done else None

    def _success_text(self) -> str:
        rate = self.success_rate
        return "success -" if rate is None else f"success {100 * rate:.0f}%"


@contextlib.contextmanager
def task_progress(label: str, total: int, done: list[EpisodeResult]) -> Iterator[TaskProgress]:
    """A TaskProgress for the duration of one task; log lines print above the bar meanwhile."""
    enabled = progress_enabled()
    progress = TaskProgress(label, total, done, enabled)
    redirect = logging_redirect_tqdm() if enabled else contextlib.nullcontext()
    try:
        with redirect:
            yield progress
    finally:
        progress.close()
