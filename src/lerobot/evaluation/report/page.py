"""The page every report is one of, and the pieces its sections are built from.

One self-contained page: CSS inline (from report.css), no script, no font or CDN, and markup
that is well-formed XML. Tables take (header, CSS class) column pairs; a success rate shows as
the same cells, or the same "rate [interval] n=" text, in every section.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from typing import Any

from lerobot.evaluation.report.markup import Markup, concat, el, esc, raw
from lerobot.evaluation.report.text import DASH, fmt_ci, fmt_num, fmt_pc
from lerobot.evaluation.results import Summary
from lerobot.evaluation.robustness import SuccessRate

NUM, KEY, NAME, TASK, TEXT = "num", "key", "name", "task", "text"
"""Column classes: right-aligned figures; short identifiers on one line; long names cut short;
task names wrapped at underscores; free text wrapped anywhere."""
RATE_COLUMNS = [
    ("Episodes", NUM),
    ("Success %", NUM),
    ("95% CI", NUM),
    ("At end %", NUM),
    ("Avg. steps", NUM),
]


@cache
def stylesheet() -> str:
    return resources.files(__package__).joinpath("report.css").read_text(encoding="utf-8")


def page(title: str, body: Iterable[Markup | str]) -> str:
    """The whole document: the stylesheet inline, the non-empty sections of `body` in order."""
    head = el(
        "head",
        raw('<meta charset="utf-8"/>'),
        raw('<meta name="viewport" content="width=device-width, initial-scale=1"/>'),
        el("title", title),
        el("style", raw(stylesheet())),
    )
    content = [part for part in body if part]
    return "<!DOCTYPE html>\n" + el("html", head, el("body", el("main", *content)), lang="en") + "\n"


def header(title: str, subtitle: str) -> Markup:
    return el("header", el("h1", title), el("p", subtitle, class_="sub"))


def section(title: str, content: Markup) -> Markup:
    return el("section", el("h2", title), content)


def table(columns: Sequence[tuple[str, str | None]], rows: Iterable[Sequence[Any]], **attrs: Any) -> Markup:
    """`columns` are (header, CSS class) pairs; cells are text or markup."""
    head = el("thead", el("tr", *(el("th", h, class_=c) for h, c in columns)))
    classes = [c for _, c in columns]
    body = el(
        "tbody",
        *(el("tr", *(el("td", x, class_=c) for x, c in zip(row, classes, strict=True))) for row in rows),
    )
    return el("div", el("table", head, body, **attrs), class_="scroll")


def breakable(name: str) -> Markup:
    """`name` that may wrap after underscores: some benchmarks' task names run to 80 characters."""
    return Markup(esc(name).replace("_", "_<wbr/>"))


def rate_cells(rate: Summary | None) -> list[Any]:
    """The cells under RATE_COLUMNS: episodes, success, interval, success at end, length."""
    if rate is None:
        return [DASH] * 5
    return [
        rate.n_episodes,
        el("strong", fmt_pc(rate.pc_success)),
        fmt_ci(rate.pc_success_ci95),
        fmt_pc(rate.pc_success_at_end),
        fmt_num(rate.avg_episode_length),
    ]


def rate_with_ci(rate: SuccessRate | None) -> Markup | str:
    """'80.0 [49.0–94.3] n=10': a suite's, a run's or a pooled rate, in one cell."""
    if rate is None or rate.pc_success is None:
        return DASH
    ci = el("span", f" [{fmt_ci(rate.pc_success_ci95)}] n={rate.n_episodes}", class_="ci")
    return concat(el("strong", fmt_pc(rate.pc_success)), ci)
