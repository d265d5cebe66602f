"""report.html and comparison.html: one self-contained page per run or comparison.

Reports are opened from a cluster's shared disk, attached to an email, or read on a plane, so
the page needs nothing but itself and the run's videos: CSS inline (from report.css), the chart
as inline SVG (report_chart), no script, no font or CDN. The markup is also well-formed XML
(every element closed, only XML's five entities), so tests and tools can parse it with a plain
XML parser. Text is escaped by `el` itself (see `markup`).

This module lays out the sections of each page; `page` holds the page and the tables and rate
cells every section uses, `episode_table` the long per-episode section.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from lerobot.evaluation.report.budget import Budget, plan_budget
from lerobot.evaluation.report.chart import SERIES_COLORS, chart_legend_note, success_chart, swatch
from lerobot.evaluation.report.comparison import (
    comparability_warning,
    compared_tasks,
    run_letters,
    task_summaries,
)
from lerobot.evaluation.report.episode_table import EpisodeVideoLink, episode_table, video_id
from lerobot.evaluation.report.markup import Markup, concat, el
from lerobot.evaluation.report.page import (
    KEY,
    NUM,
    RATE_COLUMNS,
    TASK,
    TEXT,
    breakable,
    header,
    page,
    rate_cells,
    rate_with_ci,
    section,
    table,
)
from lerobot.evaluation.report.paired import RunComparison, TaskComparison, compare_runs, fmt_p
from lerobot.evaluation.report.speed import time_to_success_section
from lerobot.evaluation.report.text import (
    DASH,
    budget_cells,
    difference_with_ci,
    fmt_ci,
    fmt_num,
    fmt_pc,
    fmt_seconds,
    incomplete_reason,
    pairs_cells,
)
from lerobot.evaluation.results import EpisodeResult, RunResult, TaskResult
from lerobot.evaluation.robustness import Robustness, SuiteRate, pooled_groups, robustness


def render_report(run: RunResult) -> str:
    """The report page of one run."""
    videos = video_episodes(run)
    body = [
        header(run.title(), _run_subtitle(run)),
        _partial_banner(run),
        _headline(run),
        section("Success per task", concat(chart_legend_note(), success_chart([run], [run.name]))),
        time_to_success_section([run], [run.name]),
        section("Per task", _task_table(run)),
        section("Per suite", _group_table(run)) if run.has_suites and len(run.groups) > 1 else "",
        _robustness_section(robustness(run.groups)),
        section("Videos", _videos(videos)) if videos else "",
        section("Episodes", episode_table(run, videos)),
        section("Provenance", _provenance(run)),
    ]
    return page(f"{run.title()} {DASH} evaluation report", body)


def render_comparison(runs: Sequence[RunResult], labels: Sequence[str], output_dir: Path) -> str:
    """Several runs side by side: one bar per run for every task, with the intervals."""
    warning = comparability_warning(runs)
    body = [
        header(f"Comparison of {len(runs)} runs", " vs ".join(labels)),
        el("p", warning, class_="banner") if warning else "",
        section("Runs", _runs_table(runs, labels, output_dir)),
        section("Success per task", concat(chart_legend_note(), success_chart(runs, labels))),
        section("Per task", _comparison_table(runs, labels)),
        time_to_success_section(runs, labels),
        _robustness_section(robustness(pooled_groups(run.groups for run in runs))),
        section(
            "Is it better?", concat(*map(_paired_comparison, compare_runs(runs, run_letters(len(runs)))))
        ),
        section("Budget", _budget(plan_budget(runs, run_letters(len(runs))))),
    ]
    return page("Comparison " + DASH + " " + " vs ".join(labels), body)


# -- one run ---------------------------------------------------------------------------------


def _run_subtitle(run: RunResult) -> str:
    env = run.config.get("env") or {}
    parts = [f"task {env['task']}" if env.get("task") else "", str(run.output_dir)]
    ended = run.provenance.get("ended_at")
    if ended:
        parts.append(f"finished {ended}")
    return " \u00b7 ".join(p for p in parts if p)


def _partial_banner(run: RunResult) -> Markup | str:
    if run.complete:
        return ""
    return el("p", incomplete_reason(run), class_="banner")


def _headline(run: RunResult) -> Markup:
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


def _card(label: str, value: str, detail: str, big: bool = False, warn: bool = False) -> Markup:
    classes = " ".join(["card", *(["big"] if big else []), *(["warn"] if warn else [])])
    return el(
        "div",
        el("div", label, class_="label"),
        el("div", value, class_="value"),
        el("div", detail, class_="detail"),
        class_=classes,
    )


def _per_episode_time(run: RunResult) -> str:
    mean = run.provenance.get("episode_wall_s_mean")
    return f"{mean:.1f} s per episode (mean)" if mean is not None else ""


def _task_table(run: RunResult) -> Markup:
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
            task.group,
            el("code", breakable(task.task)),
            task.description,
            *rate_cells(task.summary),
            fmt_num(task.summary.avg_sum_reward, 2),
            fmt_seconds(task.summary.eval_s),
        ]
        for task in run.tasks
    ]
    overall = run.overall
    rows.append(
        [
            "",
            el("strong", "Overall"),
            "",
            *rate_cells(overall),
            fmt_num(overall.avg_sum_reward, 2),
            fmt_seconds(overall.eval_s),
        ]
    )
    if not run.has_suites:  # every suite is its own task: say it once
        columns, rows = columns[1:], [r[1:] for r in rows]
    return table(columns, rows)


def _group_table(run: RunResult) -> Markup:
    rows = [[el("code", group), *rate_cells(rate)] for group, rate in run.groups.items()]
    return table([("Suite", KEY), *RATE_COLUMNS], rows)


def _robustness_section(found: Robustness | None) -> Markup | str:
    """Each perturbation family's success beside the unperturbed suite's, with the change."""
    if found is None:
        return ""
    columns = [("Base suite", KEY), ("Unperturbed", NUM), *((family, NUM) for family in found.families)]
    rows = [
        [
            el("code", row.base_suite),
            rate_with_ci(row.unperturbed.summary if row.unperturbed else None),
            *(_perturbed_cell(row.perturbed.get(f), row.drop(f)) for f in found.families),
        ]
        for row in found.rows
    ]
    rows.append(
        [
            el("strong", "All"),
            rate_with_ci(found.unperturbed_overall()),
            *(rate_with_ci(found.family_overall(f)) for f in found.families),
        ]
    )
    note = el(
        "p",
        "Success % [95% Wilson interval] per perturbation family, beside the same "
        "tasks unperturbed when they were run; the change is in percentage points.",
    )
    return section("Under perturbation", concat(note, table(columns, rows)))


def _perturbed_cell(rate: SuiteRate | None, drop: float | None) -> Markup | str:
    if rate is None:
        return DASH
    change = el("span", f" ({drop:+.1f} pts)", class_="ci") if drop is not None else ""
    return concat(rate_with_ci(rate.summary), change)


def video_episodes(run: RunResult) -> list[EpisodeVideoLink]:
    found = []
    for task in run.tasks:
        for episode in task.episodes:
            href = video_href(episode.video_path, run.output_dir)
            if href is not None:
                found.append((task, episode, href))
    return found


def video_href(video_path: str | None, output_dir: Path | None) -> str | None:
    """The video's path relative to the output directory, URL-quoted; None if it is not there.

    eval_info.json stores paths as the run wrote them (absolute, or relative to the directory
    it was started from); the report must work wherever the output directory is opened or moved
    to, so the link is always relative, from the `videos/` folder on.
    """
    if not video_path or output_dir is None:
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
    target = (root / relative).resolve()
    if not target.is_relative_to(root.resolve()) or not target.is_file():
        return None  # never link outside the run directory
    return quote(relative.as_posix())


def _videos(videos: Sequence[EpisodeVideoLink]) -> Markup:
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
            el("figcaption", breakable(_episode_caption(task, episode))),
            id=video_id(task, episode),
        )
        for task, episode, href in videos
    ]
    return el("div", *figures, class_="videos")


def _episode_caption(task: TaskResult, episode: EpisodeResult) -> str:
    outcome = "success" if episode.success else "failure"
    return f"{task.task} \u00b7 episode {episode.episode_index} \u00b7 seed {episode.seed} \u00b7 {outcome}"


def _provenance(run: RunResult) -> Markup:
    prov = run.provenance
    if not prov:
        return el("p", "Not recorded (this eval_info.json predates provenance).")
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
    rows = [el("tr", el("th", k), el("td", v)) for k, v in facts if v is not None]
    parts = [el("table", el("tbody", *rows), class_="facts")]
    if prov.get("command"):
        parts += [el("h3", "Reproduce"), el("pre", prov["command"])]
    if prov.get("config"):
        config = json.dumps(prov["config"], indent=2)
        parts.append(el("details", el("summary", "Resolved config"), el("pre", config)))
    return concat(*parts)


# -- comparison ------------------------------------------------------------------------------


def _runs_table(runs: Sequence[RunResult], labels: Sequence[str], output_dir: Path) -> Markup:
    rows = []
    for run, label, color in zip(runs, labels, SERIES_COLORS * 10, strict=False):
        report = Path(run.output_dir or ".") / "report.html"
        link = (
            el("a", str(run.output_dir), href=quote(os.path.relpath(report, output_dir)))
            if report.is_file()
            else str(run.output_dir)
        )
        env = (run.config.get("env") or {}).get("task", DASH)
        rows.append([concat(swatch(color), label), run.title(), env, link, *rate_cells(run.overall)])
    return table([("Run", KEY), ("What", None), ("Tasks", None), ("Output", None), *RATE_COLUMNS], rows)


def _comparison_table(runs: Sequence[RunResult], labels: Sequence[str]) -> Markup:
    summaries = [task_summaries(run) for run in runs]
    rows = [
        [
            el("code", breakable(task if group == task else f"{group} / {task}")),
            *(rate_with_ci(s.get((group, task))) for s in summaries),
        ]
        for group, task in compared_tasks(runs)
    ]
    rows.append([el("strong", "Overall"), *(rate_with_ci(run.overall) for run in runs)])
    return table([("Task", None), *((label, NUM) for label in labels)], rows)


def _paired_comparison(comparison: RunComparison) -> Markup:
    """The sentence, then per task: both rates, B minus A with its interval and, when paired, the tests."""
    a, b = comparison.name_a, comparison.name_b
    columns = [("Task", None), (f"{a} %", NUM), (f"{b} %", NUM), (f"{b} \u2212 {a}, points (95% CI)", NUM)]
    if comparison.paired:
        columns += [(f"{a} won", NUM), (f"{b} won", NUM), ("p", NUM), ("Holm p", NUM)]
    rows = [
        _difference_cells(task, comparison.paired, el("code", breakable(task.name)))
        for task in comparison.tasks
    ]
    rows.append(_difference_cells(comparison.overall, comparison.paired, el("strong", "Overall")))
    return concat(
        el("h3", f"{b} against {a}"),
        el("p", comparison.conclusion(), class_="verdict"),
        table(columns, rows),
    )


def _difference_cells(task: TaskComparison, paired: bool, name: Markup) -> list[Markup | str]:
    rates = [fmt_pc(None if r is None else 100 * r) for r in (task.rate_a, task.rate_b)]
    cells = [name, *rates, difference_with_ci(task)]
    if paired and task.counts is not None:
        holm = "stratified" if task.holm_p_value is None else fmt_p(task.holm_p_value)
        cells += [str(task.counts.a_won), str(task.counts.b_won), fmt_p(task.p_value), holm]
    return cells


def _budget(budget: Budget) -> Markup:
    """Episodes per task for a +-5-point interval per run; pairs to detect 5 points per paired comparison."""
    half, difference = 100 * budget.half_width, 100 * budget.difference
    parts = [
        el("h3", f"Episodes per task for a 95% interval of \u00b1{half:g} points"),
        el("p", "Episodes needed (episodes run, success %), from the Wilson interval at the observed rate."),
        table([("Task", None), *((run.name, NUM) for run in budget.runs)], budget_cells(budget)),
    ]
    for pairs in budget.comparisons:
        columns = [("Task", None), ("Pairs run", NUM), ("Discordant %", NUM), ("Pairs needed", NUM)]
        parts += [
            el(
                "h3",
                f"Episode pairs to detect {difference:g} points between {pairs.name_b} and {pairs.name_a}",
            ),
            el(
                "p",
                f"For {100 * budget.power:g}% power at a two-sided 5% level (Connor 1987, McNemar's test), "
                f"from the observed share of discordant pairs; all tasks together: "
                f"{pairs.overall.pairs_needed or DASH} pairs ({pairs.pairs_per_task or DASH} per task).",
            ),
            table(columns, pairs_cells(pairs)),
        ]
    return concat(*parts)
