"""The "Episodes" section of report.html: one row per episode, linked to its video.

The row's link and the video's figure share one anchor (`video_id`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lerobot.evaluation.report.markup import Markup, el
from lerobot.evaluation.report.page import KEY, NAME, NUM, table
from lerobot.evaluation.report.text import DASH, fmt_num
from lerobot.evaluation.results import EpisodeResult, RunResult, TaskResult

EPISODE_TABLE_OPEN_MAX_ROWS = 200
"""Longer per-episode tables (four suites of ten tasks at 50 episodes: 2000 rows) start folded
so the page stays readable."""


EpisodeVideoLink = tuple[TaskResult, EpisodeResult, str]
"""(task, episode, href relative to the report) of a video that exists on disk."""


def video_id(task: TaskResult, episode: EpisodeResult) -> str:
    return f"video-{task.group}-{task.task_id}-{episode.episode_index}"


def episode_table(run: RunResult, videos: Sequence[EpisodeVideoLink]) -> Markup:
    """Every episode of the run, folded when long; the init-state column only where recorded."""
    show_init = any(e.init_state_index is not None for e in run.episodes)
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
    with_video = {(task.key, episode.episode_index) for task, episode, _ in videos}
    rows = [
        _episode_row(task, episode, show_init, (task.key, episode.episode_index) in with_video)
        for task in run.tasks
        for episode in task.episodes
    ]
    if not run.has_suites:
        columns, rows = columns[1:], [r[1:] for r in rows]
    summary = el("summary", f"{len(rows)} episodes")
    is_open = "open" if len(rows) <= EPISODE_TABLE_OPEN_MAX_ROWS else None
    return el("details", summary, table(columns, rows, class_="episodes"), open=is_open)


def _episode_row(task: TaskResult, episode: EpisodeResult, show_init: bool, has_video: bool) -> list[Any]:
    note = (
        episode.failure_reason
        or episode.policy_error
        or (f"re-run {episode.retries}x" if episode.retries else "")
    )
    video = el("a", "play", href=f"#{video_id(task, episode)}") if has_video else ""
    return [
        task.group,
        el("code", task.task, title=task.task),
        episode.episode_index,
        _or_dash(episode.seed),
        *([_or_dash(episode.init_state_index)] if show_init else []),
        _yes_no(episode.success),
        _yes_no(episode.success_at_end),
        _or_dash(episode.n_steps),
        fmt_num(_finite_or_none(episode.sum_reward), 2),
        fmt_num(episode.wall_s, 1),
        note,
        video,
    ]


def _yes_no(value: Any) -> Markup:
    return el("span", "yes", class_="yes") if value else el("span", "no", class_="no")


def _or_dash(value: Any) -> Any:
    return DASH if value is None else value


def _finite_or_none(value: float) -> float | None:
    return value if value == value and value not in (float("inf"), float("-inf")) else None
