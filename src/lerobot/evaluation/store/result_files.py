"""Write a run's results: eval_info.json first (the record), then its views.

eval_info.json is written atomically, as strict JSON, with the run's provenance. report.html,
summary.md and the console table are views of it; after an interrupt a failing view is only
logged, so that the interrupt itself still decides the exit code.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lerobot.evaluation.report import write_report
from lerobot.evaluation.report.text import render_task_table
from lerobot.evaluation.results import EVAL_INFO_FILENAME, RunResult
from lerobot.evaluation.store.output_dir import RunOutput
from lerobot.evaluation.store.provenance import collect_provenance, utc_now
from lerobot.utils.errors import ResultsWriteError
from lerobot.utils.io import write_json_atomic

logger = logging.getLogger(__name__)


def write_eval_info(run: RunResult, output_dir: Path) -> Path:
    return write_json_atomic(run.to_eval_info(), Path(output_dir) / EVAL_INFO_FILENAME)


def write_results(
    output: RunOutput,
    run: RunResult,
    started_at: dt.datetime,
    n_resumed: int,
    backend_provenance: Mapping[str, Any] | None = None,
    interrupted: bool = False,
) -> RunResult:
    """Add provenance to `run` (with what the backend says of where episodes ran), write
    eval_info.json, then report.html, summary.md and the log table."""
    run = run.with_provenance(
        {
            **collect_provenance(
                dict(output.config),
                started_at,
                utc_now(),
                [e.wall_s for e in run.episodes if e.wall_s is not None],
                n_resumed,
                program=output.program,
            ),
            **(backend_provenance or {}),
        }
    )
    write_eval_info(run, output.directory)
    try:
        write_report(output.directory, run)
    except Exception:
        if not interrupted:
            raise
        logger.exception(
            "could not write report.html; rebuild it with lerobot-eval-report %s", output.directory
        )
    logger.info("results per task:\n%s", render_task_table(run))
    return run


def write_partial_results(
    output: RunOutput,
    run: RunResult,
    started_at: dt.datetime,
    n_resumed: int,
    backend_provenance: Mapping[str, Any] | None = None,
) -> None:
    """What finished, after an interrupt or a failure; a failure to write them (a full disk) is
    logged, so the original error decides the exit."""
    try:
        write_results(output, run, started_at, n_resumed, backend_provenance, interrupted=True)
    except ResultsWriteError as exc:
        logger.error("could not write the partial results: %s", exc)
        return
    logger.warning("stopped: eval_info.json holds the %d finished episodes", len(run.episodes))
