"""Human-readable views of eval_info.json: report.html and summary.md (and comparisons).

eval_info.json is the record; these files are how people read it. `lerobot-eval` writes them
when a run ends (also an interrupted one), and `lerobot-eval-report` rebuilds them from
eval_info.json alone, so a report can always be redone with a newer version of this code.

`write_report`, `write_comparison` and `write_training_curve` are the entry points; behind
them `html` lays out the page's sections (on `page`'s skeleton and tables, with
`episode_table`, `chart`'s SVG and `markup`'s escaping), `text` the markdown and console
tables, and `comparison` lines up the tasks of several runs; `training_page` draws a training run's in-loop evaluations with
`line_chart`, which also draws the time-to-success curves.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from lerobot.evaluation.report.comparison import run_labels
from lerobot.evaluation.report.html import render_comparison, render_report
from lerobot.evaluation.report.text import render_comparison_summary, render_summary
from lerobot.evaluation.report.training_page import render_training_curve, render_training_curve_summary
from lerobot.evaluation.results import RunResult, StepEvaluation, load_run, run_from_eval_info, training_curve
from lerobot.utils.io import write_text_atomic

logger = logging.getLogger(__name__)

REPORT_FILENAME = "report.html"
SUMMARY_FILENAME = "summary.md"
COMPARISON_FILENAME = "comparison.html"
COMPARISON_SUMMARY_FILENAME = "comparison.md"
BUDGET_FILENAME = "budget.md"
TRAINING_CURVE_FILENAME = "training_curve.html"
TRAINING_CURVE_SUMMARY_FILENAME = "training_curve.md"


def write_report(output_dir: Path, run: RunResult | None = None) -> list[Path]:
    """Write report.html and summary.md into `output_dir` from `run` (default: its eval_info.json).

    A run in memory is shown exactly as its eval_info.json reads back, so a report written at
    the end of a run and one rebuilt later by `lerobot-eval-report` are the same page.
    """
    output_dir = Path(output_dir)
    run = load_run(output_dir) if run is None else run_from_eval_info(run.to_eval_info(), output_dir)
    paths = [
        write_text_atomic(render_report(run), output_dir / REPORT_FILENAME),
        write_text_atomic(render_summary(run), output_dir / SUMMARY_FILENAME),
    ]
    logger.info("report: %s", paths[0])
    return paths


def write_comparison(runs: Sequence[RunResult], output_dir: Path) -> list[Path]:
    """Write comparison.html and comparison.md: the runs side by side, task by task."""
    output_dir = Path(output_dir)
    labels = run_labels(runs)
    paths = [
        write_text_atomic(render_comparison(runs, labels, output_dir), output_dir / COMPARISON_FILENAME),
        write_text_atomic(render_comparison_summary(runs, labels), output_dir / COMPARISON_SUMMARY_FILENAME),
    ]
    logger.info("comparison: %s", paths[0])
    return paths


def write_training_curve(evaluations: Sequence[StepEvaluation], output_dir: Path) -> list[Path]:
    """Write training_curve.html and training_curve.md into a training run's `output_dir`:
    success against training step, the best step, each evaluation against the previous one."""
    output_dir = Path(output_dir)
    curve = training_curve(evaluations)
    paths = [
        write_text_atomic(render_training_curve(curve, output_dir), output_dir / TRAINING_CURVE_FILENAME),
        write_text_atomic(render_training_curve_summary(curve), output_dir / TRAINING_CURVE_SUMMARY_FILENAME),
    ]
    logger.info("training curve: %s", paths[0])
    return paths
