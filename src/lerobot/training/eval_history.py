"""Where a training run keeps its in-loop evaluations, and reading them back as a curve.

Each in-loop evaluation is a whole lerobot-eval output directory under
`<output_dir>/eval/step_<N>/`. This module knows that layout (and nothing of torch), so
`lerobot-eval-report` can draw a training run's curve on any machine, from its files alone.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lerobot.evaluation.results import EVAL_INFO_FILENAME, StepEvaluation, UnreadableResultsError, load_run

logger = logging.getLogger(__name__)

EVAL_SUBDIR = "eval"
STEP_PREFIX = "step_"


def in_loop_eval_dir(output_dir: Path, step: int) -> Path:
    """Where the in-loop evaluation at `step` writes what a lerobot-eval output dir holds."""
    return Path(output_dir) / EVAL_SUBDIR / f"{STEP_PREFIX}{step}"


def in_loop_evaluations(output_dir: Path) -> list[StepEvaluation]:
    """The finished in-loop evaluations of a training output dir, by step.

    One that is still running, or was stopped before it wrote eval_info.json, is left out
    (resume redoes it): the curve shows what is known, not what is half written.
    """
    found = []
    for step, path in _step_dirs(Path(output_dir)):
        try:
            found.append(StepEvaluation(step, load_run(path)))
        except (OSError, UnreadableResultsError) as exc:
            logger.info("step %d: no finished evaluation in %s (%s)", step, path, exc)
    return sorted(found, key=lambda e: e.step)


def has_in_loop_evaluations(output_dir: Path) -> bool:
    """Whether `output_dir` looks like a lerobot-train output dir with in-loop evaluations."""
    return any((path / EVAL_INFO_FILENAME).is_file() for _, path in _step_dirs(Path(output_dir)))


def _step_dirs(output_dir: Path) -> list[tuple[int, Path]]:
    root = output_dir / EVAL_SUBDIR
    if not root.is_dir():
        return []
    dirs = []
    for path in root.iterdir():
        number = path.name.removeprefix(STEP_PREFIX)
        if path.is_dir() and path.name.startswith(STEP_PREFIX) and number.isdigit():
            dirs.append((int(number), path))
    return dirs
