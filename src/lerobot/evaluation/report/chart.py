"""The success chart of reports: horizontal bars per task with 95% interval whiskers, as SVG.

Inline SVG keeps report.html self-contained (no script, no image files). Geometry lives here;
the page around it is `report_html`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lerobot.evaluation.report.comparison import compared_tasks, task_summaries
from lerobot.evaluation.report.markup import Markup, el, svg
from lerobot.evaluation.report.text import fmt_ci, fmt_pc
from lerobot.evaluation.results import RunResult, Summary

SERIES_COLORS = ("#3569b4", "#e07b27", "#3f9a55", "#a8458c", "#6d6d6d", "#c23b3b")
CHART_WIDTH = 960
LABEL_WIDTH = 300
PLOT_RIGHT = 890
BAR_HEIGHT = 14
ROW_GAP = 8
GROUP_HEADER_HEIGHT = 24
AXIS_HEIGHT = 22
LABEL_MAX_CHARS = 38  # 12px monospace labels: 38 characters fill the label column


def series_color(index: int) -> str:
    return SERIES_COLORS[index % len(SERIES_COLORS)]


def chart_legend_note() -> Markup:
    return el("p", "Bars: success rate. Whiskers: 95% Wilson confidence interval.", class_="note")


def success_chart(runs: Sequence[RunResult], labels: Sequence[str]) -> Markup:
    """Horizontal bars, one row per task (one bar per run), suites as headed blocks."""
    keys = compared_tasks(runs)
    if not keys:
        return el("p", "No episode finished.")
    show_groups = any(run.has_suites for run in runs)
    summaries = [task_summaries(run) for run in runs]
    row_height = BAR_HEIGHT * len(runs) + ROW_GAP
    shapes, y, group = [], AXIS_HEIGHT, None
    for key in keys:
        if show_groups and key[0] != group:
            group = key[0]
            shapes.append(_svg_text(8, y + 17, group, class_="group"))
            y += GROUP_HEADER_HEIGHT
        shapes.append(_task_row(key[1], [s.get(key) for s in summaries], labels, y, row_height))
        y += row_height
    height = y + AXIS_HEIGHT
    legend = _legend(labels) if len(runs) > 1 else Markup("")
    return Markup(legend + svg(_axis(height), *shapes, width=CHART_WIDTH, height=height))


def _task_row(
    task: str, summaries: Sequence[Summary | None], labels: Sequence[str], y: float, height: float
) -> Markup:
    label = task if len(task) <= LABEL_MAX_CHARS else task[: LABEL_MAX_CHARS - 1] + "\u2026"
    parts = [_svg_text(LABEL_WIDTH - 8, y + height / 2 + 4, label, text_anchor="end", class_="task")]
    for i, (summary, name) in enumerate(zip(summaries, labels, strict=True)):
        top = y + ROW_GAP / 2 + i * BAR_HEIGHT
        parts.append(_bar(summary, task, name, top, series_color(i)))
    return el("g", el("title", task), *parts)


def _bar(summary: Summary | None, task: str, run_label: str, top: float, color: str) -> Markup:
    mid = top + BAR_HEIGHT / 2
    if summary is None or summary.pc_success is None:
        return _svg_text(_x(0) + 4, mid + 4, "not run", class_="missing")
    tip = (
        f"{task} ({run_label}): {fmt_pc(summary.pc_success)}% success, "
        f"95% CI {fmt_ci(summary.pc_success_ci95)}%, {summary.n_episodes} episodes"
    )
    bar_width = max(_x(summary.pc_success) - _x(0), 0.5)
    parts = [
        el(
            "rect",
            el("title", tip),
            x=_n(_x(0)),
            y=_n(top + 1),
            width=_n(bar_width),
            height=_n(BAR_HEIGHT - 2),
            fill=color,
            fill_opacity="0.85",
        )
    ]
    end = _x(summary.pc_success)
    if summary.pc_success_ci95:
        low, high = (_x(v) for v in summary.pc_success_ci95)
        parts.append(_whisker(low, high, mid))
        end = max(end, high)
    parts.append(_svg_text(end + 5, mid + 4, f"{fmt_pc(summary.pc_success)}%", class_="value"))
    return Markup("").join(parts)


def _whisker(low: float, high: float, mid: float) -> Markup:
    cap = BAR_HEIGHT / 2 - 2
    lines = [(low, mid, high, mid), (low, mid - cap, low, mid + cap), (high, mid - cap, high, mid + cap)]
    return Markup("").join(
        el("line", x1=_n(a), y1=_n(b), x2=_n(c), y2=_n(d), class_="ci") for a, b, c, d in lines
    )


def _axis(height: float) -> Markup:
    parts = []
    for pc in (0, 25, 50, 75, 100):
        x = _x(pc)
        parts.append(
            el(
                "line",
                x1=_n(x),
                y1=_n(AXIS_HEIGHT - 4),
                x2=_n(x),
                y2=_n(height - AXIS_HEIGHT + 4),
                class_="grid",
            )
        )
        parts.append(_svg_text(x, AXIS_HEIGHT - 8, f"{pc}%", text_anchor="middle", class_="axis"))
        parts.append(_svg_text(x, height - 6, f"{pc}%", text_anchor="middle", class_="axis"))
    return el("g", *parts)


def _legend(labels: Sequence[str]) -> Markup:
    items = [
        el("span", swatch(series_color(i)), label, class_="legend-item") for i, label in enumerate(labels)
    ]
    return el("p", *items, class_="legend")


def swatch(color: str) -> Markup:
    """The little colour square that ties a run to its bars."""
    return el("span", "", class_="swatch", style=f"background:{color}")


def _svg_text(x: float, y: float, text: str, **attrs: Any) -> Markup:
    return el("text", text, x=_n(x), y=_n(y), **attrs)


def _x(pc: float) -> float:
    return LABEL_WIDTH + (PLOT_RIGHT - LABEL_WIDTH) * max(0.0, min(100.0, pc)) / 100


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")
