"""The time-to-success section of report.html and comparison.html.

Its own module so the pages' layout (`html`) only places it: how fast a run's episodes
succeed is read off `success_curve` and drawn by `line_chart`.
"""

from __future__ import annotations

from collections.abc import Sequence

from lerobot.evaluation.report.chart import series_color, swatch
from lerobot.evaluation.report.line_chart import time_to_success_chart
from lerobot.evaluation.report.markup import Markup, concat, el
from lerobot.evaluation.report.page import section
from lerobot.evaluation.results import RunResult, success_curve


def time_to_success_section(runs: Sequence[RunResult], labels: Sequence[str]) -> Markup | str:
    """Each run's % of episodes succeeded by each step, all on one chart: how fast, beside how
    often. Left out when no run's files say when its episodes succeeded."""
    curves = [success_curve(run.episodes) for run in runs]
    if all(curve is None for curve in curves):
        return ""
    note = el(
        "p",
        "Share of all scored episodes that had succeeded by each step (all tasks pooled). "
        "A curve that rises earlier succeeds sooner; where it ends is the success rate.",
        class_="note",
    )
    legend = ""
    if len(runs) > 1:
        items = [
            el("span", swatch(series_color(i)), label, class_="legend-item") for i, label in enumerate(labels)
        ]
        legend = el("p", *items, class_="legend")
    return section("Time to success", concat(note, legend, time_to_success_chart(curves, labels)))
