"""report.html and comparison.html: one self-contained page per run or comparison.

Reports are opened from a cluster's shared disk, attached to an email, or read on a plane, so
the page needs nothing but itself and the run's videos: CSS inline, the chart as inline SVG,
no script, no font or CDN. The markup is also well-formed XML (every element closed, only
XML's five entities), so tests and tools can parse it with a plain XML parser.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lerobot.evaluation.report_text import DASH, fmt_ci, fmt_num, fmt_pc, fmt_seconds
from lerobot.evaluation.run_results import (
    Rate,
    RunResults,
    comparability_warning,
    compared_tasks,
    task_rates,
)

SERIES_COLORS = ("#3569b4", "#e07b27", "#3f9a55", "#a8458c", "#6d6d6d", "#c23b3b")
EPISODE_TABLE_OPEN_MAX_ROWS = 200
"""Longer per-episode tables (LIBERO: 2000 rows) start folded so the page stays readable."""


def render_report(run: RunResults) -> str:
    """The report page of one run."""
    body = [
        _header(run.title(), _run_subtitle(run)),
        _partial_banner(run),
        _headline(run),
        _section("Success per task", _chart_legend_note() + success_chart([run], [run.name])),
        _section("Per task", _task_table(run)),
        _section("Per suite", _group_table(run)) if run.has_suites and len(run.groups) > 1 else "",
        _section("Videos", _videos(run)) if _video_episodes(run) else "",
        _section("Episodes", _episode_table(run)),
        _section("Provenance", _provenance(run)),
    ]
    return _page(f"{run.title()} {DASH} evaluation report", body)


def render_comparison(runs: Sequence[RunResults], labels: Sequence[str], output_dir: Path) -> str:
    """Several runs side by side: one bar per run for every task, with the intervals."""
    warning = comparability_warning(runs)
    body = [
        _header(f"Comparison of {len(runs)} runs", " vs ".join(labels)),
        el("p", esc(warning), class_="banner") if warning else "",
        _section("Runs", _runs_table(runs, labels, output_dir)),
        _section("Success per task", _chart_legend_note() + success_chart(runs, labels)),
        _section("Per task", _comparison_table(runs, labels)),
    ]
    return _page("Comparison " + DASH + " " + " vs ".join(labels), body)


# -- markup helpers --------------------------------------------------------------------------


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def el(tag: str, *children: str, **attrs: Any) -> str:
    """`<tag attrs>children</tag>`; children are markup already, attribute values are escaped.

    A trailing underscore is dropped from attribute names (`class_`), and underscores inside
    them become dashes (`text_anchor` -> `text-anchor`), so SVG attributes read naturally.
    """
    rendered = "".join(
        f' {name.rstrip("_").replace("_", "-")}="{esc(value)}"'
        for name, value in attrs.items()
        if value is not None
    )
    return f"<{tag}{rendered}>{''.join(children)}</{tag}>"


def _page(title: str, body: Iterable[str]) -> str:
    head = el(
        "head",
        '<meta charset="utf-8"/>',
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
        el("title", esc(title)),
        el("style", CSS),
    )
    return "<!DOCTYPE html>\n" + el("html", head, el("body", el("main", *body)), lang="en") + "\n"


def _header(title: str, subtitle: str) -> str:
    return el("header", el("h1", esc(title)), el("p", esc(subtitle), class_="sub"))


def _section(title: str, content: str) -> str:
    return el("section", el("h2", esc(title)), content)


def _table(columns: Sequence[tuple[str, str | None]], rows: Iterable[Sequence[str]], **attrs: Any) -> str:
    """`columns` are (header, CSS class) pairs; cells are markup."""
    head = el("thead", el("tr", *(el("th", esc(h), class_=c) for h, c in columns)))
    classes = [c for _, c in columns]
    body = el(
        "tbody",
        *(el("tr", *(el("td", x, class_=c) for x, c in zip(row, classes, strict=True))) for row in rows),
    )
    return el("div", el("table", head, body, **attrs), class_="scroll")


def breakable(name: str) -> str:
    """Escaped `name` that may wrap after underscores: LIBERO task names run to 80 characters."""
    return esc(name).replace("_", "_<wbr/>")


# -- one run ---------------------------------------------------------------------------------


def _run_subtitle(run: RunResults) -> str:
    env = run.config.get("env") or {}
    parts = [f"task {env['task']}" if env.get("task") else "", str(run.output_dir)]
    ended = run.provenance.get("ended_at")
    if ended:
        parts.append(f"finished {ended}")
    return " \u00b7 ".join(p for p in parts if p)


def _partial_banner(run: RunResults) -> str:
    if run.complete:
        return ""
    text = (
        f"Partial results: the run was interrupted after {run.overall.n_episodes} episodes. "
        "Continue it with the same command plus --eval.resume=true."
    )
    return el("p", esc(text), class_="banner")


def _headline(run: RunResults) -> str:
    rate = run.overall
    cards = [
        _card("Success", f"{fmt_pc(rate.pc_success)}%", f"95% CI {fmt_ci(rate.pc_success_ci95)}%", big=True),
        _card("Success at end", f"{fmt_pc(rate.pc_success_at_end)}%", "succeeding at the last step"),
        _card("Episodes", str(rate.n_episodes), f"{len(run.tasks)} task{'s' if len(run.tasks) != 1 else ''}"),
        _card("Avg. length", fmt_num(rate.avg_episode_length), "steps per episode"),
        _card("Wall time", fmt_seconds(run.provenance.get("wall_s", rate.eval_s)), _per_episode_time(run)),
    ]
    if run.n_episodes_failed or run.n_episodes_retried:
        detail = f"{run.n_episodes_retried} re-run after a crash"
        cards.append(_card("Failed episodes", str(run.n_episodes_failed), detail, warn=True))
    return el("div", *cards, class_="cards")


def _card(label: str, value: str, detail: str, big: bool = False, warn: bool = False) -> str:
    classes = " ".join(["card", *(["big"] if big else []), *(["warn"] if warn else [])])
    return el(
        "div",
        el("div", esc(label), class_="label"),
        el("div", esc(value), class_="value"),
        el("div", esc(detail), class_="detail"),
        class_=classes,
    )


def _per_episode_time(run: RunResults) -> str:
    mean = run.provenance.get("episode_wall_s_mean")
    return f"{mean:.1f} s per episode (mean)" if mean is not None else ""


def _rate_cells(rate: Rate | None) -> list[str]:
    if rate is None:
        return [DASH] * 5
    return [
        esc(rate.n_episodes),
        el("strong", esc(fmt_pc(rate.pc_success))),
        esc(fmt_ci(rate.pc_success_ci95)),
        esc(fmt_pc(rate.pc_success_at_end)),
        esc(fmt_num(rate.avg_episode_length)),
    ]


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


def _task_table(run: RunResults) -> str:
    columns = [
        ("Suite", KEY),
        ("Task", TASK),
        ("Description", TEXT),
        *RATE_COLUMNS,
        ("Avg. reward", NUM),
        ("Time", NUM),
    ]
    rows = [
        [
            esc(row.group),
            el("code", breakable(row.task)),
            esc(row.description),
            *_rate_cells(row.rate),
            esc(fmt_num(row.rate.avg_sum_reward, 2)),
            esc(fmt_seconds(row.rate.eval_s)),
        ]
        for row in run.tasks
    ]
    overall = run.overall
    rows.append(
        [
            "",
            el("strong", "Overall"),
            "",
            *_rate_cells(overall),
            esc(fmt_num(overall.avg_sum_reward, 2)),
            esc(fmt_seconds(overall.eval_s)),
        ]
    )
    if not run.has_suites:  # Meta-World task lists: every suite is its task, say it once
        columns, rows = columns[1:], [r[1:] for r in rows]
    return _table(columns, rows)


def _group_table(run: RunResults) -> str:
    rows = [[el("code", esc(group)), *_rate_cells(rate)] for group, rate in run.groups.items()]
    return _table([("Suite", KEY), *RATE_COLUMNS], rows)


def _video_episodes(run: RunResults) -> list[tuple[dict[str, Any], str]]:
    """(episode record, href relative to the report) for every video that exists on disk."""
    found = []
    for episode in run.episodes:
        href = video_href(episode.get("video_path"), run.output_dir)
        if href is not None:
            found.append((episode, href))
    return found


def video_href(video_path: str | None, output_dir: Path) -> str | None:
    """The video's path relative to the output directory, URL-quoted; None if it is not there.

    eval_info.json stores paths as the run wrote them (absolute, or relative to the directory
    it was started from); the report must work wherever the output directory is opened or moved
    to, so the link is always relative, from the `videos/` folder on.
    """
    if not video_path:
        return None
    path, root = Path(video_path), Path(output_dir)
    try:
        relative = path.resolve().relative_to(root.resolve())
    except ValueError:
        parts = path.parts
        if "videos" not in parts:
            return None
        last = len(parts) - 1 - parts[::-1].index("videos")
        relative = Path(*parts[last:])
    return quote(relative.as_posix()) if (root / relative).is_file() else None


def _videos(run: RunResults) -> str:
    figures = [
        el(
            "figure",
            el(
                "video",
                controls="controls",
                preload="metadata",
                muted="muted",
                src=href,
                width="240",
                height="240",
            ),
            el("figcaption", breakable(_episode_caption(episode))),
            id=_video_id(episode),
        )
        for episode, href in _video_episodes(run)
    ]
    return el("div", *figures, class_="videos")


def _episode_caption(episode: dict[str, Any]) -> str:
    outcome = "success" if episode.get("success") else "failure"
    return f"{episode.get('task', '')} \u00b7 episode {episode.get('episode_index')} \u00b7 seed {episode.get('seed')} \u00b7 {outcome}"


def _video_id(episode: dict[str, Any]) -> str:
    return f"video-{episode.get('task_group', '')}-{episode.get('task_id', 0)}-{episode.get('episode_index')}"


def _episode_table(run: RunResults) -> str:
    show_init = any(e.get("init_state_index") is not None for e in run.episodes)
    columns = [
        ("Suite", KEY),
        ("Task", NAME),
        ("Episode", NUM),
        ("Seed", NUM),
        *([("Init state", NUM)] if show_init else []),
        ("Success", None),
        ("At end", None),
        ("Steps", NUM),
        ("Reward", NUM),
        ("Wall s", NUM),
        ("Note", None),
        ("Video", None),
    ]
    videos = {id(episode) for episode, _ in _video_episodes(run)}
    rows = [_episode_row(e, show_init, id(e) in videos) for e in run.episodes]
    if not run.has_suites:
        columns, rows = columns[1:], [r[1:] for r in rows]
    table = _table(columns, rows, class_="episodes")
    summary = el("summary", esc(f"{len(rows)} episodes"))
    is_open = "open" if len(rows) <= EPISODE_TABLE_OPEN_MAX_ROWS else None
    return el("details", summary, table, open=is_open)


def _episode_row(episode: dict[str, Any], show_init: bool, has_video: bool) -> list[str]:
    note = episode.get("failure_reason") or (
        f"re-run {episode['retries']}x" if episode.get("retries") else ""
    )
    video = el("a", "play", href=f"#{_video_id(episode)}") if has_video else ""
    return [
        esc(episode.get("task_group", "")),
        el("code", esc(episode.get("task", "")), title=episode.get("task", "")),
        esc(episode.get("episode_index")),
        esc(episode.get("seed")),
        *([esc(_or_dash(episode.get("init_state_index")))] if show_init else []),
        _yes_no(episode.get("success")),
        _yes_no(episode.get("success_at_end")),
        esc(episode.get("n_steps")),
        esc(fmt_num(episode.get("sum_reward"), 2)),
        esc(fmt_num(episode.get("wall_s"), 1)),
        esc(note),
        video,
    ]


def _yes_no(value: Any) -> str:
    return el("span", "yes", class_="yes") if value else el("span", "no", class_="no")


def _or_dash(value: Any) -> Any:
    return DASH if value is None else value


def _provenance(run: RunResults) -> str:
    prov = run.provenance
    if not prov:
        return el("p", esc("Not recorded (this eval_info.json predates provenance)."))
    host, git = prov.get("host") or {}, prov.get("git")
    facts = [
        ("Started", prov.get("started_at")),
        ("Ended", prov.get("ended_at")),
        ("Wall time", fmt_seconds(prov.get("wall_s"))),
        ("Episodes resumed from an earlier run", prov.get("n_episodes_resumed") or None),
        ("Host", host.get("hostname")),
        ("CPU", f"{host.get('cpu_model') or DASH} ({host.get('cpu_count')} cores)"),
        ("GPU", host.get("gpu") or "none"),
        ("Platform", host.get("platform")),
        ("Python", prov.get("python")),
        *(((name, version) for name, version in (prov.get("versions") or {}).items())),
        (
            "Git commit",
            f"{git['commit']}{' (uncommitted changes)' if git.get('dirty') else ''}"
            if git
            else "not a git checkout",
        ),
    ]
    rows = "".join(el("tr", el("th", esc(k)), el("td", esc(v))) for k, v in facts if v is not None)
    parts = [el("table", el("tbody", rows), class_="facts")]
    if prov.get("command"):
        parts += [el("h3", "Reproduce"), el("pre", esc(prov["command"]))]
    if prov.get("config"):
        config = json.dumps(prov["config"], indent=2)
        parts.append(el("details", el("summary", "Resolved config"), el("pre", esc(config))))
    return "".join(parts)


# -- comparison ------------------------------------------------------------------------------


def _runs_table(runs: Sequence[RunResults], labels: Sequence[str], output_dir: Path) -> str:
    rows = []
    for run, label, color in zip(runs, labels, SERIES_COLORS * 10, strict=False):
        report = run.output_dir / "report.html"
        link = (
            el("a", esc(run.output_dir), href=quote(os.path.relpath(report, output_dir)))
            if report.is_file()
            else esc(run.output_dir)
        )
        swatch = el("span", "", class_="swatch", style=f"background:{color}")
        env = (run.config.get("env") or {}).get("task", DASH)
        rows.append([swatch + esc(label), esc(run.title()), esc(env), link, *_rate_cells(run.overall)])
    return _table([("Run", KEY), ("What", None), ("Tasks", None), ("Output", None), *RATE_COLUMNS], rows)


def _comparison_table(runs: Sequence[RunResults], labels: Sequence[str]) -> str:
    rates = [task_rates(run) for run in runs]
    rows = [
        [
            el("code", breakable(task if group == task else f"{group} / {task}")),
            *(_rate_with_ci(r.get((group, task))) for r in rates),
        ]
        for group, task in compared_tasks(runs)
    ]
    rows.append([el("strong", "Overall"), *(_rate_with_ci(run.overall) for run in runs)])
    return _table([("Task", None), *((label, NUM) for label in labels)], rows)


def _rate_with_ci(rate: Rate | None) -> str:
    if rate is None or rate.pc_success is None:
        return DASH
    ci = el("span", esc(f" [{fmt_ci(rate.pc_success_ci95)}] n={rate.n_episodes}"), class_="ci")
    return el("strong", esc(fmt_pc(rate.pc_success))) + ci


# -- chart -----------------------------------------------------------------------------------

CHART_WIDTH = 960
LABEL_WIDTH = 300
PLOT_RIGHT = 890
BAR_HEIGHT = 14
ROW_GAP = 8
GROUP_HEADER_HEIGHT = 24
AXIS_HEIGHT = 22
LABEL_MAX_CHARS = 38  # 12px monospace labels: 38 characters fill the label column


def _chart_legend_note() -> str:
    return el("p", esc("Bars: success rate. Whiskers: 95% Wilson confidence interval."), class_="note")


def success_chart(runs: Sequence[RunResults], labels: Sequence[str]) -> str:
    """Horizontal bars, one row per task (one bar per run), suites as headed blocks."""
    keys = compared_tasks(runs)
    if not keys:
        return el("p", esc("No episode finished."))
    show_groups = any(run.has_suites for run in runs)
    rates = [task_rates(run) for run in runs]
    row_height = BAR_HEIGHT * len(runs) + ROW_GAP
    shapes, y, group = [], AXIS_HEIGHT, None
    for key in keys:
        if show_groups and key[0] != group:
            group = key[0]
            shapes.append(_svg_text(8, y + 17, group, class_="group"))
            y += GROUP_HEADER_HEIGHT
        shapes.append(_task_row(key[1], [r.get(key) for r in rates], labels, y, row_height))
        y += row_height
    height = y + AXIS_HEIGHT
    legend = _legend(labels) if len(runs) > 1 else ""
    svg = el(
        "svg",
        _axis(height),
        *shapes,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {CHART_WIDTH} {height}",
        width=str(CHART_WIDTH),
        height=str(height),
        role="img",
        class_="chart",
    )
    return legend + svg


def _task_row(task: str, rates: Sequence[Rate | None], labels: Sequence[str], y: float, height: float) -> str:
    label = task if len(task) <= LABEL_MAX_CHARS else task[: LABEL_MAX_CHARS - 1] + "\u2026"
    parts = [_svg_text(LABEL_WIDTH - 8, y + height / 2 + 4, label, text_anchor="end", class_="task")]
    for i, (rate, name) in enumerate(zip(rates, labels, strict=True)):
        top = y + ROW_GAP / 2 + i * BAR_HEIGHT
        parts.append(_bar(rate, task, name, top, SERIES_COLORS[i % len(SERIES_COLORS)]))
    return el("g", el("title", esc(task)), *parts)


def _bar(rate: Rate | None, task: str, run_label: str, top: float, color: str) -> str:
    mid = top + BAR_HEIGHT / 2
    if rate is None or rate.pc_success is None:
        return _svg_text(_x(0) + 4, mid + 4, "not run", class_="missing")
    tip = f"{task} ({run_label}): {fmt_pc(rate.pc_success)}% success, 95% CI {fmt_ci(rate.pc_success_ci95)}%, {rate.n_episodes} episodes"
    bar_width = max(_x(rate.pc_success) - _x(0), 0.5)
    parts = [
        el(
            "rect",
            el("title", esc(tip)),
            x=_n(_x(0)),
            y=_n(top + 1),
            width=_n(bar_width),
            height=_n(BAR_HEIGHT - 2),
            fill=color,
            fill_opacity="0.85",
        )
    ]
    end = _x(rate.pc_success)
    if rate.pc_success_ci95:
        low, high = (_x(v) for v in rate.pc_success_ci95)
        parts.append(_whisker(low, high, mid))
        end = max(end, high)
    parts.append(_svg_text(end + 5, mid + 4, f"{fmt_pc(rate.pc_success)}%", class_="value"))
    return "".join(parts)


def _whisker(low: float, high: float, mid: float) -> str:
    cap = BAR_HEIGHT / 2 - 2
    lines = [(low, mid, high, mid), (low, mid - cap, low, mid + cap), (high, mid - cap, high, mid + cap)]
    return "".join(el("line", x1=_n(a), y1=_n(b), x2=_n(c), y2=_n(d), class_="ci") for a, b, c, d in lines)


def _axis(height: float) -> str:
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


def _legend(labels: Sequence[str]) -> str:
    items = [
        el(
            "span",
            el("span", "", class_="swatch", style=f"background:{SERIES_COLORS[i % len(SERIES_COLORS)]}"),
            esc(label),
            class_="legend-item",
        )
        for i, label in enumerate(labels)
    ]
    return el("p", *items, class_="legend")


def _svg_text(x: float, y: float, text: str, **attrs: Any) -> str:
    return el("text", esc(text), x=_n(x), y=_n(y), **attrs)


def _x(pc: float) -> float:
    return LABEL_WIDTH + (PLOT_RIGHT - LABEL_WIDTH) * max(0.0, min(100.0, pc)) / 100


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


CSS = """
:root { color-scheme: light; --ink: #1f2328; --muted: #656d76; --line: #d8dee4; --soft: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 18px 0 6px; }
.sub, .note { color: var(--muted); margin: 0 0 8px; }
.banner { background: #fff4e5; border: 1px solid #f0b357; padding: 10px 14px; border-radius: 6px; font-weight: 600; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 18px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px; min-width: 150px; background: var(--soft); }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 22px; font-weight: 650; font-variant-numeric: tabular-nums; }
.card .detail { color: var(--muted); font-size: 12px; }
.card.big { background: #eef4fc; border-color: #b6cdee; }
.card.big .value { font-size: 34px; color: #1d4f91; }
.card.warn { background: #fdf0f0; border-color: #e7b3b3; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { padding: 4px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.key { white-space: nowrap; }
td.name { max-width: 260px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
td.task { min-width: 160px; }
td.text { overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
table.facts th { width: 260px; }
table.episodes { font-size: 13px; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.yes { color: #1a7f37; font-weight: 600; }
.no { color: #b3261e; }
.ci { color: var(--muted); }
summary { cursor: pointer; color: var(--muted); margin: 4px 0; }
.videos { display: flex; flex-wrap: wrap; gap: 14px; }
figure { margin: 0; width: 240px; }
figure video { width: 240px; height: 240px; background: #000; border-radius: 6px; display: block; }
figcaption { font-size: 12px; color: var(--muted); margin-top: 4px; }
svg.chart { width: 100%; height: auto; max-width: 960px; }
svg .grid { stroke: #e3e7eb; stroke-width: 1; }
svg .axis { fill: var(--muted); font-size: 11px; }
svg .task { fill: var(--ink); font-size: 12px; font-family: ui-monospace, Menlo, Consolas, monospace; }
svg .group { fill: var(--ink); font-size: 13px; font-weight: 650; }
svg .value { fill: var(--ink); font-size: 11px; }
svg .missing { fill: var(--muted); font-size: 11px; font-style: italic; }
svg line.ci { stroke: #1f2328; stroke-width: 1.4; }
.legend { display: flex; gap: 18px; flex-wrap: wrap; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
"""
