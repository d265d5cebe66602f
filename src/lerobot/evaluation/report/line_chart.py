"""The line charts of reports, as inline SVG: time to success and success against training step.

Both plot a percentage (0 to 100%) against a count of steps, so they share one frame: a plot
area, its gridlines and tick labels, and an x axis with round tick values. Like the bar chart
(`chart`), they need no script and no image file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lerobot.evaluation.report.chart import series_color
from lerobot.evaluation.report.markup import Markup, concat, el, svg
from lerobot.evaluation.report.text import fmt_ci, fmt_pc
from lerobot.evaluation.results import StepEvaluation, SuccessCurve, TrainingCurve

WIDTH = 960
HEIGHT = 340
LEFT, RIGHT, TOP, BOTTOM = 64, 930, 16, 296  # the plot area inside the SVG
X_TICKS = 6


@dataclass(frozen=True)
class Frame:
    """Maps (step, percent) to SVG coordinates over steps [0, x_max] and 0-100%."""

    x_min: float
    x_max: float

    def x(self, step: float) -> float:
        span = (self.x_max - self.x_min) or 1.0
        return LEFT + (RIGHT - LEFT) * (step - self.x_min) / span

    @staticmethod
    def y(pc: float) -> float:
        return BOTTOM - (BOTTOM - TOP) * max(0.0, min(100.0, pc)) / 100


def time_to_success_chart(curves: Sequence[SuccessCurve | None], labels: Sequence[str]) -> Markup:
    """One step line per run: the % of its episodes that had succeeded by each step.

    A curve that rises earlier is a policy that succeeds sooner; where a curve ends flat is its
    success rate. Runs whose files do not say when episodes succeeded get no line.
    """
    drawn = [(i, c) for i, c in enumerate(curves) if c is not None]
    frame = Frame(0, max([c.last_step for _, c in drawn] + [1]))
    lines = [_success_line(curve, labels[i], series_color(i), frame) for i, curve in drawn]
    return _svg(frame, "episode step", lines, label="time to success")


def training_curve_chart(curve: TrainingCurve) -> Markup:
    """Success % against training step, a whisker per evaluation for its 95% interval, and a
    ring around the best evaluation."""
    rated = [e for e in curve.evaluations if e.pc_success is not None]
    steps = [e.step for e in rated] or [0]
    frame = Frame(min(0, *steps), max(max(steps), 1))
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{_n(frame.x(e.step))},{_n(frame.y(e.pc_success))}"
        for i, e in enumerate(rated)
    )
    shapes = [el("path", d=path, fill="none", stroke=series_color(0), stroke_width="2")] if rated else []
    shapes += [_evaluation_point(e, frame) for e in rated]
    if curve.best is not None:
        shapes.append(_best_marker(curve.best, frame))
    return _svg(frame, "training step", shapes, label="success against training step")


def _success_line(curve: SuccessCurve, label: str, color: str, frame: Frame) -> Markup:
    points = curve.points()
    d = [f"M{_n(frame.x(0))},{_n(frame.y(0))}"]
    for step, fraction in points[1:]:
        d.append(f"H{_n(frame.x(step))}V{_n(frame.y(100 * fraction))}")
    end_step, end_fraction = points[-1]
    tip = (
        f"{label}: {fmt_pc(100 * end_fraction)}% of {curve.n_episodes} episodes succeeded by step {end_step}"
    )
    return el(
        "g",
        el("title", tip),
        el("path", d="".join(d), fill="none", stroke=color, stroke_width="2.5"),
        el("circle", cx=_n(frame.x(end_step)), cy=_n(frame.y(100 * end_fraction)), r="3.5", fill=color),
    )


def _evaluation_point(evaluation: StepEvaluation, frame: Frame) -> Markup:
    x, color = frame.x(evaluation.step), series_color(0)
    parts = []
    tip = f"step {evaluation.step}: {fmt_pc(evaluation.pc_success)}% success"
    if evaluation.pc_success_ci95:
        low, high = (frame.y(v) for v in evaluation.pc_success_ci95)
        parts.append(el("line", x1=_n(x), y1=_n(low), x2=_n(x), y2=_n(high), class_="ci"))
        tip += f", 95% CI {fmt_ci(evaluation.pc_success_ci95)}%"
    tip += f", {evaluation.run.overall.n_episodes} episodes"
    parts.append(el("circle", cx=_n(x), cy=_n(frame.y(evaluation.pc_success)), r="4", fill=color))
    return el("g", el("title", tip), *parts)


def _best_marker(best: StepEvaluation, frame: Frame) -> Markup:
    x, y = frame.x(best.step), frame.y(best.pc_success)
    ring = el(
        "circle", cx=_n(x), cy=_n(y), r="9", fill="none", stroke="#c23b3b", stroke_width="2", class_="best"
    )
    anchor = "end" if x > (LEFT + RIGHT) / 2 else "start"
    label_x = x - 12 if anchor == "end" else x + 12
    label = _text(
        label_x, max(y - 10, TOP + 10), f"best: step {best.step}", text_anchor=anchor, class_="value"
    )
    return concat(ring, label)


def _svg(frame: Frame, x_title: str, shapes: Sequence[Markup], label: str) -> Markup:
    return svg(
        el("title", label),
        _grid(frame, x_title),
        *shapes,
        width=WIDTH,
        height=HEIGHT,
        class_="chart line-chart",
    )


def _grid(frame: Frame, x_title: str) -> Markup:
    parts = []
    for pc in (0, 25, 50, 75, 100):
        y = frame.y(pc)
        parts.append(el("line", x1=_n(LEFT), y1=_n(y), x2=_n(RIGHT), y2=_n(y), class_="grid"))
        parts.append(_text(LEFT - 6, y + 4, f"{pc}%", text_anchor="end", class_="axis"))
    for step in round_ticks(frame.x_min, frame.x_max):
        x = frame.x(step)
        parts.append(el("line", x1=_n(x), y1=_n(TOP), x2=_n(x), y2=_n(BOTTOM), class_="grid"))
        parts.append(_text(x, BOTTOM + 16, f"{step:g}", text_anchor="middle", class_="axis"))
    parts.append(_text((LEFT + RIGHT) / 2, HEIGHT - 8, x_title, text_anchor="middle", class_="axis"))
    return el("g", *parts)


def round_ticks(low: float, high: float, count: int = X_TICKS) -> list[float]:
    """About `count` tick values between low and high, spaced 1, 2 or 5 times a power of ten."""
    if high <= low:
        return [low]
    raw_step = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw_step))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw_step)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def _text(x: float, y: float, text: str, **attrs: Any) -> Markup:
    return el("text", text, x=_n(x), y=_n(y), **attrs)


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")
