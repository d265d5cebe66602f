"""`lerobot-eval-report`: rebuild reports from finished runs, or compare runs side by side.

    lerobot-eval-report outputs/eval/run_a
        rewrites run_a/report.html and run_a/summary.md from run_a/eval_info.json.

    lerobot-eval-report outputs/train/run
        a lerobot-train output dir with in-loop evaluations (eval/step_<N>/): writes
        training_curve.html and training_curve.md there (success against training step, 95%
        intervals, the best step, each evaluation paired with the previous one).

    lerobot-eval-report outputs/eval/run_a outputs/eval/run_b [--output_dir=DIR]
        writes comparison.html and comparison.md (every task, one bar and column per run, with
        95% intervals) into DIR, by default the first run's directory. The runs' own reports
        are left as they are; the comparison links to them.

    lerobot-eval-report --plan outputs/eval/run_a [outputs/eval/run_b ...] [--half_width_pts=5] [--difference_pts=5]
        prints the episode budget and writes it to budget.md (in DIR, by default the first run's
        directory): per task, episodes for a 95% interval of +-5 points at the observed rate, and
        for runs paired with the first, episode pairs to detect a 5-point difference.

Nothing is re-evaluated: only eval_info.json is read, so this works on copied result folders,
on results of older versions and on LeRobot's own eval_info.json.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from lerobot.configs.parser import USAGE_EXIT_CODE, CliError, OneLineArgumentParser
from lerobot.evaluation.report import BUDGET_FILENAME, write_comparison, write_report, write_training_curve
from lerobot.evaluation.report.budget import DIFFERENCE, HALF_WIDTH
from lerobot.evaluation.report.comparison import run_labels
from lerobot.evaluation.report.text import render_budget
from lerobot.evaluation.results import EVAL_INFO_FILENAME, UnreadableResultsError, load_run
from lerobot.training.eval_history import has_in_loop_evaluations, in_loop_evaluations
from lerobot.utils.io import write_text_atomic
from lerobot.utils.logging_utils import init_logging

PROG = "lerobot-eval-report"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog=PROG,
        description="Rebuild report.html/summary.md of a lerobot-eval run, or compare several runs.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "runs",
        nargs="+",
        type=Path,
        metavar="OUTPUT_DIR",
        help="lerobot-eval output directories, or one lerobot-train output directory",
    )
    parser.add_argument(
        "--output_dir",
        type=Path,
        default=None,
        help="where comparison.html and comparison.md go (several runs only); default: the first run's directory",
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="print and write budget.md: episodes per task for the interval width, pairs to detect the difference",
    )
    parser.add_argument(
        "--half_width_pts",
        type=float,
        default=100 * HALF_WIDTH,
        help="--plan: half-width of the 95%% interval to plan for, in points (default: 5)",
    )
    parser.add_argument(
        "--difference_pts",
        type=float,
        default=100 * DIFFERENCE,
        help="--plan: difference between runs to detect with 80%% power, in points (default: 5)",
    )
    parser.add_argument(
        "--log_level", choices=LOG_LEVELS, default="INFO", help="console logging detail (default: INFO)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    init_logging()
    try:
        args = build_parser().parse_args(argv)
        if args.output_dir is not None and len(args.runs) == 1 and not args.plan:
            raise CliError(
                f"--output_dir={args.output_dir}: only used when comparing several runs; "
                "a run's report is always written into its own directory"
            )
        init_logging(args.log_level)
        if args.plan:
            sys.stdout.write(plan(args.runs, args.output_dir, args.half_width_pts, args.difference_pts))
        else:
            make_reports(args.runs, args.output_dir)
    except CliError as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_EXIT_CODE
    return 0


def make_reports(run_dirs: Sequence[Path], output_dir: Path | None) -> list[Path]:
    """One run: its report. Several: their comparison. Raises CliError for unreadable results."""
    try:
        if len(run_dirs) == 1 and is_training_output(run_dirs[0]):
            return write_training_curve(in_loop_evaluations(run_dirs[0]), run_dirs[0])
        if len(run_dirs) == 1:
            return write_report(run_dirs[0])
        runs = [load_run(d) for d in run_dirs]
    except UnreadableResultsError as exc:
        raise CliError(f"{PROG}: {exc}") from None
    return write_comparison(runs, output_dir if output_dir is not None else run_dirs[0])


def plan(
    run_dirs: Sequence[Path], output_dir: Path | None, half_width_pts: float, difference_pts: float
) -> str:
    """The budget as markdown, also written to budget.md; raises CliError for unreadable results or targets."""
    if not 0 < half_width_pts < 50 or not 0 < difference_pts <= 100:
        raise CliError(
            f"--half_width_pts={half_width_pts:g} --difference_pts={difference_pts:g}: "
            "the half-width must be in (0, 50) points and the difference in (0, 100]"
        )
    try:
        runs = [load_run(d) for d in run_dirs]
    except UnreadableResultsError as exc:
        raise CliError(f"{PROG}: {exc}") from None
    text = render_budget(runs, run_labels(runs), half_width_pts / 100, difference_pts / 100)
    write_text_atomic(text, Path(output_dir if output_dir is not None else run_dirs[0]) / BUDGET_FILENAME)
    return text


def is_training_output(path: Path) -> bool:
    """A lerobot-train output dir: in-loop evaluations under it, no eval_info.json of its own."""
    return not (Path(path) / EVAL_INFO_FILENAME).is_file() and has_in_loop_evaluations(path)


if __name__ == "__main__":
    sys.exit(main())
