"""Text views of results: summary.md for papers and pull requests, and the console table."""

from __future__ import annotations

from collections.abc import Sequence

from lerobot.evaluation.report.budget import Budget, ComparisonPairs, TaskEpisodes, TaskPairs, plan_budget
from lerobot.evaluation.report.comparison import (
    comparability_warning,
    compared_tasks,
    run_letters,
    task_summaries,
)
from lerobot.evaluation.report.paired import RunComparison, TaskComparison, compare_runs, fmt_p
from lerobot.evaluation.results import RunResult, SuccessCurve, Summary, success_curve
from lerobot.evaluation.robustness import Robustness, RobustnessRow, SuccessRate, pooled_groups, robustness

DASH = "\u2013"  # en dash, for ranges and missing values in HTML and markdown


# -- summary.md ------------------------------------------------------------------------------


RATE_HEADER = ["Episodes", "Success %", "95% CI", "Success at end %", "Avg. steps"]


def render_summary(run: RunResult) -> str:
    """A short markdown table to paste into a paper draft or a pull request.

    Benchmarks with suites are reported per suite in papers: then the suite table comes first
    and the per-task table follows, folded.
    """
    lines = [f"## {run.title()}", ""]
    if not run.complete:
        lines += [f"**{incomplete_reason(run, short=True)}**", ""]
    if run.has_suites:
        lines += [*_suite_table(run), "", "<details><summary>Per task</summary>", ""]
        lines += [*_summary_task_table(run), "", "</details>", ""]
    else:
        lines += [*_summary_task_table(run), ""]
    lines += robustness_table(robustness(run.groups))
    lines += time_to_success_table([run], [run.name])
    return "\n".join([*lines, settings_sentence(run), ""])


def robustness_table(found: Robustness | None) -> list[str]:
    """Markdown: per base suite, unperturbed and each perturbation family, with the change."""
    if found is None:
        return []

    def perturbed(row: RobustnessRow, family: str) -> str:
        if family not in row.perturbed:
            return DASH
        drop = row.drop(family)
        return _pc_with_ci(row.perturbed[family].summary) + (f", {drop:+.1f} pts" if drop is not None else "")

    rows = [
        [row.base_suite, _pc_with_ci(row.unperturbed.summary if row.unperturbed else None)]
        + [perturbed(row, family) for family in found.families]
        for row in found.rows
    ]
    rows.append(
        ["**All**", _pc_with_ci(found.unperturbed_overall())]
        + [_pc_with_ci(found.family_overall(family)) for family in found.families]
    )
    header = ["Base suite", "Unperturbed", *found.families]
    caption = "Success % (95% Wilson interval) under each perturbation family; change in points."
    return ["### Under perturbation", "", *markdown_table(header, rows, n_text_columns=1), "", caption, ""]


def _suite_table(run: RunResult) -> list[str]:
    rows = [[group, *_rate_cells(rate)] for group, rate in run.groups.items()]
    rows.append(["**Overall**", *_rate_cells(run.overall, bold=True)])
    return markdown_table(["Suite", *RATE_HEADER], rows, n_text_columns=1)


def _summary_task_table(run: RunResult) -> list[str]:
    suite = run.has_suites
    header = (["Suite"] if suite else []) + ["Task", *RATE_HEADER]
    rows = [([task.group] if suite else []) + [task.task, *_rate_cells(task.summary)] for task in run.tasks]
    rows.append(([""] if suite else []) + ["**Overall**", *_rate_cells(run.overall, bold=True)])
    return markdown_table(header, rows, n_text_columns=2 if suite else 1)


def render_comparison_summary(runs: Sequence[RunResult], labels: Sequence[str]) -> str:
    """Markdown: one row per task, one 'success % (95% CI)' column per run."""
    rates = [task_summaries(run) for run in runs]
    rows = [
        [f"{group} / {task}" if group != task else task] + [_pc_with_ci(r.get((group, task))) for r in rates]
        for group, task in compared_tasks(runs)
    ]
    rows.append(["**Overall**", *(f"**{_pc_with_ci(run.overall)}**" for run in runs)])
    table = markdown_table(["Task", *labels], rows, n_text_columns=1)
    notes = [f"- {label}: {settings_sentence(run)}" for label, run in zip(labels, runs, strict=True)]
    warning = comparability_warning(runs)
    caption = "Success % (95% Wilson interval)." + (f" **{warning}**" if warning else "")
    perturbation = robustness_table(robustness(pooled_groups(run.groups for run in runs)))
    speed = time_to_success_table(runs, labels)
    letters = run_letters(len(runs))
    paired = ["## Is it better?", "", *paired_comparison_lines(compare_runs(runs, letters))]
    budget = ["## Budget", "", *budget_lines(plan_budget(runs, letters))]
    return "\n".join(
        ["## Comparison", "", *table, "", caption, "", *perturbation, *speed, *notes, "", *paired, *budget]
    )


def incomplete_reason(run: RunResult, short: bool = False) -> str:
    """Why a run's numbers are partial, and what to type to complete them."""
    if run.n_episodes_failed:
        text = (
            f"Partial results: {run.n_episodes_failed} episode(s) failed because of the evaluation "
            "harness, not the policy, and are left out of every rate."
        )
    else:
        text = "Partial results: the run was interrupted."
        if not short:
            text = text[:-1] + f" after {run.overall.n_episodes} episodes."
    if short:
        return text
    return text + " Continue it with the same command plus --eval.resume=true."


def settings_sentence(run: RunResult) -> str:
    """One line of the settings a reader needs to judge or reproduce the numbers."""
    cfg = run.config
    env, policy, ev = cfg.get("env") or {}, cfg.get("policy") or {}, cfg.get("eval") or {}
    parts = []
    if env:
        parts.append(f"env `{env.get('type')}` task `{env.get('task')}`")
    if policy:
        parts.append(f"policy `{policy.get('type')}`")
    if ev.get("n_episodes") is not None and cfg.get("seed") is not None:
        first, n = int(cfg["seed"]), int(ev["n_episodes"])
        parts.append(f"{n} episodes per task, seeds {first}{DASH}{first + n - 1}")
    versions = run.provenance.get("versions") or {}
    if versions:
        parts.append(", ".join(f"{k} {v}" for k, v in versions.items()))
    git = run.provenance.get("git")
    if git:
        parts.append(f"git {git['commit'][:12]}{' (dirty)' if git.get('dirty') else ''}")
    parts.append("95% CI: Wilson score interval; full settings in eval_info.json")
    return "; ".join(parts) + "."


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], n_text_columns: int) -> list[str]:
    """Text columns left-aligned, numbers right-aligned."""
    align = [":--" if i < n_text_columns else "--:" for i in range(len(header))]
    return [_md_row(header), _md_row(align), *(_md_row(row) for row in rows)]


def time_to_success_table(runs: Sequence[RunResult], labels: Sequence[str]) -> list[str]:
    """Markdown: how fast each run's episodes succeeded, the text twin of the report's curves;
    nothing when no run's files say when its episodes succeeded."""
    curves = [success_curve(run.episodes) for run in runs]
    if all(curve is None for curve in curves):
        return []
    header = ["Run", "Episodes", "Success %", "Median steps to success", "Half succeeded by step"]
    rows = [[label, *_speed_cells(curve)] for label, curve in zip(labels, curves, strict=True)]
    caption = (
        "Median steps to success: over the episodes that succeeded. Half succeeded by step: the "
        "step by which half of all scored episodes had succeeded."
    )
    return ["### Time to success", "", *markdown_table(header, rows, n_text_columns=1), "", caption, ""]


def _speed_cells(curve: SuccessCurve | None) -> list[str]:
    if curve is None:
        return ["not recorded"] + [DASH] * 3
    success = fmt_pc(100 * curve.fraction_by(curve.last_step))
    median = fmt_num(curve.median_success_step, 1) if curve.median_success_step is not None else DASH
    half = DASH if curve.step_to_half is None else str(curve.step_to_half)
    return [str(curve.n_episodes), success, median, half]


# -- console table ---------------------------------------------------------------------------


def render_task_table(run: RunResult) -> str:
    """Plain-text per-task table for the log, ending with the overall row."""
    header = ["suite", "task", "episodes", "success %", "95% CI", "at end %", "avg steps"]
    rows = [[task.group, task.task, *_rate_cells(task.summary, plain=True)] for task in run.tasks]
    rows.append(["overall", "", *_rate_cells(run.overall, plain=True)])
    if not run.has_suites:  # every suite is its own task: one name column is enough
        header, rows = header[1:], [[r[1] or r[0], *r[2:]] for r in rows]
    return text_table(header, rows, n_text_columns=1 if not run.has_suites else 2)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], n_text_columns: int) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [
            str(c).ljust(w) if i < n_text_columns else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    return "\n".join([line(header), *(line(r) for r in rows)])


# -- number formatting shared by every view --------------------------------------------------


def fmt_pc(value: float | None, dash: str = DASH) -> str:
    return dash if value is None else f"{value:.1f}"


def fmt_ci(interval: Sequence[float] | None, dash: str = DASH, sep: str = DASH) -> str:
    return dash if not interval else f"{interval[0]:.1f}{sep}{interval[1]:.1f}"


def fmt_num(value: float | None, digits: int = 1, dash: str = DASH) -> str:
    return dash if value is None else f"{value:.{digits}f}"


def fmt_seconds(seconds: float | None) -> str:
    """'42.1 s', '12 min 3 s', '2 h 05 min': wall times at the scale people think of them."""
    if seconds is None:
        return DASH
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _rate_cells(rate: Summary, bold: bool = False, plain: bool = False) -> list[str]:
    """Episodes, success, interval, success at end, length; `plain` ASCII for logs."""
    dash = "-" if plain else DASH
    success = fmt_pc(rate.pc_success, dash)
    return [
        str(rate.n_episodes),
        f"**{success}**" if bold and rate.pc_success is not None else success,
        fmt_ci(rate.pc_success_ci95, dash, sep=dash),
        fmt_pc(rate.pc_success_at_end, dash),
        fmt_num(rate.avg_episode_length, 1, dash),
    ]


def _pc_with_ci(rate: SuccessRate | None) -> str:
    if rate is None or rate.pc_success is None:
        return DASH
    return f"{fmt_pc(rate.pc_success)} ({fmt_ci(rate.pc_success_ci95)}), n={rate.n_episodes}"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


# -- is B better than A? ---------------------------------------------------------------------


def paired_comparison_lines(comparisons: Sequence[RunComparison]) -> list[str]:
    """Markdown: per later run, the sentence, then per task the difference from the first run."""
    lines: list[str] = []
    for comparison in comparisons:
        a, b = comparison.name_a, comparison.name_b
        lines += [f"### {b} against {a}", "", f"**{comparison.conclusion()}**", ""]
        header = ["Task", f"{a} %", f"{b} %", f"{b} \u2212 {a}, points (95% CI)"]
        if comparison.paired:
            header += [f"{a} won", f"{b} won", "p", "Holm p"]
        rows = [_difference_row(task, comparison.paired) for task in comparison.tasks]
        rows.append(["**Overall**", *_difference_row(comparison.overall, comparison.paired)[1:]])
        if comparison.paired:
            rows[-1][-1] = "(stratified)"
        lines += [*markdown_table(header, rows, n_text_columns=1), "", _difference_caption(comparison), ""]
    return lines


def _difference_row(task: TaskComparison, paired: bool) -> list[str]:
    cells = [task.name, _rate_pc(task.rate_a), _rate_pc(task.rate_b), difference_with_ci(task)]
    if paired and task.counts is not None:
        cells += [
            str(task.counts.a_won),
            str(task.counts.b_won),
            fmt_p(task.p_value),
            fmt_p(task.holm_p_value),
        ]
    return cells


def difference_with_ci(task: TaskComparison) -> str:
    """'+6.5 (2.1 to 10.9)': B minus A in points, with its 95% interval."""
    if task.difference is None:
        return DASH
    interval = task.interval
    ci = f" ({100 * interval[0]:.1f} to {100 * interval[1]:.1f})" if interval else ""
    return f"{100 * task.difference:+.1f}{ci}"


def _rate_pc(rate: float | None) -> str:
    return fmt_pc(None if rate is None else 100 * rate)


def _difference_caption(comparison: RunComparison) -> str:
    if comparison.paired:
        return (
            "Paired by episode seed. Interval: Newcombe's score interval for paired proportions; "
            "p: exact McNemar test on the discordant pairs (A won, B won); Holm p: adjusted over the "
            "tasks; overall p: the exact test stratified by episode pair."
        )
    return "Not paired. Interval: Newcombe's hybrid score interval for independent proportions."


def render_budget(
    runs: Sequence[RunResult], labels: Sequence[str], half_width: float, difference: float
) -> str:
    """budget.md: which run is which, then the budget tables (runs named by letter as in comparisons)."""
    letters = run_letters(len(runs))
    budget = plan_budget(runs, letters, half_width, difference)
    names = [f"- {label}: {run.output_dir}" for label, run in zip(labels, runs, strict=True)]
    return "\n".join(["## Budget", "", *names, "", *budget_lines(budget)])


def budget_lines(budget: Budget) -> list[str]:
    """Markdown: episodes per task for the target interval, and pairs to detect the target difference."""
    half, diff = 100 * budget.half_width, 100 * budget.difference
    lines = [f"### Episodes per task for a 95% interval of \u00b1{half:g} points", ""]
    rows = budget_cells(budget)
    lines += markdown_table(["Task", *(run.name for run in budget.runs)], rows, n_text_columns=1)
    lines += [
        "",
        "Episodes needed (episodes run, success %), from the Wilson interval at the observed rate.",
        "",
    ]
    for pairs in budget.comparisons:
        a, b = pairs.name_a, pairs.name_b
        lines += [f"### Episode pairs to detect {diff:g} points between {b} and {a}", ""]
        rows = pairs_cells(pairs)
        rows[-1][0] = "**All tasks together**"
        lines += markdown_table(["Task", "Pairs run", "Discordant %", "Pairs needed"], rows, n_text_columns=1)
        spread = f" ({pairs.pairs_per_task} per task)" if pairs.pairs_per_task is not None else ""
        lines += [
            "",
            f"For {100 * budget.power:g}% power at a two-sided 5% level (Connor 1987, McNemar's test), from "
            f"the observed share of discordant pairs; all tasks together need "
            f"{_count(pairs.overall.pairs_needed)} pairs{spread}.",
            "",
        ]
    return lines


def budget_cells(budget: Budget) -> list[list[str]]:
    """Per task of the first run: each run's 'needed (run, success %)'."""
    names = [task.name for task in budget.runs[0].tasks] if budget.runs else []
    by_run = [{task.name: task for task in run.tasks} for run in budget.runs]
    return [[name, *(_episodes_cell(tasks.get(name)) for tasks in by_run)] for name in names]


def pairs_cells(pairs: ComparisonPairs) -> list[list[str]]:
    """Per task, then all tasks: pairs run, discordant %, pairs needed."""
    return [_pairs_row(task) for task in (*pairs.tasks, pairs.overall)]


def _episodes_cell(task: TaskEpisodes | None) -> str:
    if task is None or task.episodes_needed is None:
        return DASH
    return f"{task.episodes_needed} ({task.n_episodes}, {_rate_pc(task.rate)}%)"


def _pairs_row(task: TaskPairs) -> list[str]:
    discordant = DASH if task.discordance is None else fmt_pc(100 * task.discordance)
    return [task.name, str(task.n_pairs), discordant, _count(task.pairs_needed)]


def _count(value: int | None) -> str:
    return DASH if value is None else f"{value:,}"
