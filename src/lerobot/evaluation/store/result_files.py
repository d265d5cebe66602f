"""Write a run's results: eval_info.json first (the record), then its views.

eval_info.json is written atomically, as strict JSON, with the run's provenance. report.html,
summary.md and the console table are views of it; after an interrupt a failing view is only
logged, so that the interrupt itself still decides the exit code.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.evaluation.report import write_report
from lerobot.evaluation.report.text import render_task_table
from lerobot.evaluation.results import EVAL_INFO_FILENAME, RunResult
from lerobot.evaluation.store.output_dir import encode_config
from lerobot.evaluation.store.provenance import collect_provenance, utc_now
from lerobot.utils.io import write_json_atomic

logger = logging.getLogger(__name__)


def write_eval_info(run: RunResult, output_dir: Path) -> Path:
    return write_json_atomic(run.to_eval_info(), Path(output_dir) / EVAL_INFO_FILENAME)


def write_results(
    cfg: EvalPipelineConfig,
    run: RunResult,
    started_at: dt.datetime,
    n_resumed: int,
    interrupted: bool = False,
) -> RunResult:
    """Add provenance to `run`, write eval_info.json, then report.html, summary.md and the log table."""
    run = run.with_provenance(
        collect_provenance(
            encode_config(cfg),
            started_at,
            utc_now(),
            [e.wall_s for e in run.episodes if e.wall_s is not None],
            n_resumed,
        )
    )
    write_eval_info(run, cfg.output_dir)
    try:
        write_report(cfg.output_dir, run)
    except Exception:
        if not interrupted:
            raise
        logger.exception(
            "could not write report.html; rebuild it with lerobot-eval-report %s", cfg.output_dir
        )
    logger.info("results per task:\n%s", render_task_table(run))
    return run
