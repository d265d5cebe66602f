"""training_curve.html and training_curve.md: a training run's in-loop evaluations as a curve.

A training run is judged by how its success rate moved, and a single evaluation's rate is
noisy: the page shows every evaluation with its 95% Wilson interval, marks the best step, and
puts each evaluation beside the previous one on the same seeds, with the episodes that changed
outcome (the discordant counts) that any claim of improvement rests on.
"""

from __future__ import annotations

from pathlib import Path

from lerobot.evaluation.report.line_chart import training_curve_chart
from lerobot.evaluation.report.markup import Markup, concat, el
from lerobot.evaluation.report.page import NUM, header, page, section, table
from lerobot.evaluation.report.text import DASH, fmt_ci, fmt_pc, markdown_table
from lerobot.evaluation.results import PairedChange, StepEvaluation, TrainingCurve

CHANGE_HEADER = ["Change (pts)", "Only before", "Only after", "Paired 95% CI", "McNemar p"]
"""How each evaluation compares with the previous one, over the episodes (seeds) both scored."""


def render_training_curve(curve: TrainingCurve, output_dir: Path) -> str:
    """The page of one training run's in-loop evaluations."""
    title = f"Training curve {DASH} {_run_title(curve)}"
    body = [
        header(title, f"{len(curve.evaluations)} in-loop evaluations in {output_dir}"),
        section("Success against training step", concat(_chart_note(curve), training_curve_chart(curve))),
        section("Evaluations", concat(_table_note(), _evaluation_table(curve, output_dir))),
    ]
    return page(title, body)


def render_training_curve_summary(curve: TrainingCurve) -> str:
    """Markdown: one row per evaluation, the best one in bold, each paired with the previous."""
    best = curve.best
    rows = [
        _markdown_row(evaluation, change, evaluation is best)
        for evaluation, change in zip(curve.evaluations, curve.changes, strict=True)
    ]
    header_row = ["Step", "Episodes", "Success %", "95% CI", *CHANGE_HEADER]
    lines = [f"## Training curve {DASH} {_run_title(curve)}", ""]
    lines += markdown_table(header_row, rows, n_text_columns=1)
    best_line = f"Best: step {best.step}, {fmt_pc(best.pc_success)}%." if best else "No evaluation finished."
    return "\n".join([*lines, "", best_line + " " + _change_caption(), ""])


def _run_title(curve: TrainingCurve) -> str:
    return curve.evaluations[-1].run.title() if curve.evaluations else "no evaluation yet"


def _chart_note(curve: TrainingCurve) -> Markup:
    best = curve.best
    text = "Dots: success rate of each in-loop evaluation. Whiskers: 95% Wilson interval."
    if best is not None:
        text += f" Ringed: the best, step {best.step} ({fmt_pc(best.pc_success)}%)."
    return el("p", text, class_="note")


def _table_note() -> Markup:
    return el("p", _change_caption(), class_="note")


def _change_caption() -> str:
    return (
        "Each evaluation is paired with the previous one over the same seeds: 'only before' "
        "episodes succeeded at the previous step and fail now, 'only after' the reverse; "
        "episodes that did the same both times say nothing about the change."
    )


def _evaluation_table(curve: TrainingCurve, output_dir: Path) -> Markup:
    best = curve.best
    rows = []
    for evaluation, change in zip(curve.evaluations, curve.changes, strict=True):
        step = str(evaluation.step) + (" (best)" if evaluation is best else "")
        link = _report_link(evaluation, output_dir)
        overall = evaluation.run.overall
        rows.append(
            [
                el("a", step, href=link) if link else step,
                overall.n_episodes,
                el("strong", fmt_pc(evaluation.pc_success)),
                fmt_ci(evaluation.pc_success_ci95),
                *_change_cells(change),
            ]
        )
    columns = [("Step", None), ("Episodes", NUM), ("Success %", NUM), ("95% CI", NUM)]
    return table([*columns, *((name, NUM) for name in CHANGE_HEADER)], rows)


def _report_link(evaluation: StepEvaluation, output_dir: Path) -> str | None:
    if evaluation.run.output_dir is None:
        return None
    report = Path(evaluation.run.output_dir) / "report.html"
    try:
        return (
            report.resolve().relative_to(Path(output_dir).resolve()).as_posix() if report.is_file() else None
        )
    except ValueError:
        return None


def _change_cells(change: PairedChange | None) -> list[str]:
    if change is None or not change.n_pairs:
        return [DASH] * len(CHANGE_HEADER)
    p_value = DASH if change.p_value is None else f"{change.p_value:.3g}"
    return [
        f"{change.pc_difference:+.1f}",
        str(change.only_before),
        str(change.only_after),
        fmt_ci(change.pc_interval),
        p_value,
    ]


def _markdown_row(evaluation: StepEvaluation, change: PairedChange | None, best: bool) -> list[str]:
    success = fmt_pc(evaluation.pc_success)
    return [
        f"**{evaluation.step}**" if best else str(evaluation.step),
        str(evaluation.run.overall.n_episodes),
        f"**{success}**" if best else success,
        fmt_ci(evaluation.pc_success_ci95),
        *_change_cells(change),
    ]
