"""report.html, summary.md and comparisons, from eval_info.json documents built by the real
metrics code (the Meta-World end-to-end run is in tests/scripts/test_lerobot_eval_report.py)."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lerobot.evaluation.report import write_comparison, write_report
from lerobot.evaluation.report.comparison import run_labels
from lerobot.evaluation.report.html import video_href
from lerobot.evaluation.report.text import render_task_table
from lerobot.evaluation.results import EpisodeResult, RunResult, TaskResult, load_run, run_from_eval_info
from lerobot.utils.io import write_json_atomic

SVG = "{http://www.w3.org/2000/svg}"


def make_task(group, task_id, task, successes, n=4, video_dir=None, init_states=False):
    episodes = []
    for i in range(n):
        video = None
        if video_dir is not None and i == 0:
            video = video_dir / f"{group}_{task_id}" / "eval_episode_0.mp4"
            video.parent.mkdir(parents=True, exist_ok=True)
            video.write_bytes(b"not really an mp4")
        episodes.append(
            EpisodeResult(
                episode_index=i,
                seed=1000 + i,
                success=i < successes,
                success_at_end=i < successes,
                sum_reward=float(i),
                max_reward=1.0,
                n_steps=20 + i,
                wall_s=0.5,
                video_path=str(video) if video else None,
                init_state_index=i if init_states else None,
            )
        )
    return TaskResult(group, task_id, task, f"do {task}", tuple(episodes), 2.0)


def write_run(out: Path, tasks: list[TaskResult], job_name: str, complete: bool = True) -> dict:
    info = RunResult.of(tasks, eval_s=4.0, complete=complete).to_eval_info()
    info["provenance"] = {
        "config": {
            "env": {"type": "libero", "task": "libero_spatial,libero_object"},
            "policy": {"type": job_name},
            "eval": {"n_episodes": 4},
            "seed": 1000,
            "job_name": job_name,
        },
        "versions": {"lerobot": "0.1.0", "hf-libero": "0.1.4"},
        "git": {"commit": "0123456789abcdef", "dirty": True},
        "host": {"hostname": "node7", "cpu_model": "Test CPU", "cpu_count": 8, "gpu": "Test GPU"},
        "started_at": "2025-01-01T10:00:00Z",
        "ended_at": "2025-01-01T10:00:04Z",
        "wall_s": 4.0,
        "command": "lerobot-eval --env.type=libero",
    }
    write_json_atomic(info, out / "eval_info.json")
    return info


@pytest.fixture
def suite_run(tmp_path):
    """Two LIBERO-like suites of two tasks each; one video per task on disk."""
    out = tmp_path / "run_a"
    videos = out / "videos"
    tasks = [
        make_task("libero_spatial", 0, "pick_up_the_black_bowl", 4, video_dir=videos, init_states=True),
        make_task("libero_spatial", 1, "open_the_drawer", 2, video_dir=videos, init_states=True),
        make_task("libero_object", 0, "pick_up_the_ketchup", 1, video_dir=videos, init_states=True),
        make_task("libero_object", 1, "pick_up_the_milk", 0, video_dir=videos, init_states=True),
    ]
    write_run(out, tasks, "smolvla")
    return out


def parse_xml(path: Path) -> ET.Element:
    """The report is well-formed XML: every tag closed, nothing but XML's own entities."""
    return ET.fromstring(path.read_text(encoding="utf-8"))


def text(element: ET.Element) -> str:
    """An element's text as a reader sees it (<wbr/> joins, whitespace runs become one space)."""
    return " ".join("".join(element.itertext()).split())


def row_text(tr: ET.Element) -> str:
    return " ".join(text(cell) for cell in tr)


def test_report_shows_every_task_with_its_interval_and_suites(suite_run):
    html_path, md_path = write_report(suite_run)
    assert html_path == suite_run / "report.html" and md_path == suite_run / "summary.md"
    root = parse_xml(html_path)
    page = text(root)
    for task, pc, ci in [
        ("pick_up_the_black_bowl", "100.0", "51.0\u2013100.0"),
        ("open_the_drawer", "50.0", "15.0\u201385.0"),
        ("pick_up_the_ketchup", "25.0", "4.6\u201369.9"),
        ("pick_up_the_milk", "0.0", "0.0\u201349.0"),
    ]:
        assert task in page and pc in page and ci in page, task
    assert "43.8%" in page  # overall 7 of 16
    assert "Per suite" in page and "libero_object" in page
    # the chart: one bar (with a tooltip naming task, rate and interval) per task
    bars = root.findall(f".//{SVG}rect")
    assert len(bars) == 4
    assert (
        "open_the_drawer (smolvla): 50.0% success, 95% CI 15.0\u201385.0%" in bars[1].find(f"{SVG}title").text
    )
    # the provenance a reviewer asks for
    for fact in ("node7", "Test GPU", "0123456789abcdef", "hf-libero", "lerobot-eval --env.type=libero"):
        assert fact in page, fact


def test_report_videos_are_relative_links_to_files_that_exist(suite_run, tmp_path):
    write_report(suite_run)
    moved = tmp_path / "elsewhere"
    suite_run.rename(moved)  # results are copied around; the links must not break
    write_report(moved)
    root = parse_xml(moved / "report.html")
    sources = [v.get("src") for v in root.iter("video")]
    assert len(sources) == 4
    for src in sources:
        assert not Path(src).is_absolute() and (moved / src).is_file(), src
    assert [a.get("href") for a in root.iter("a")][:1] == ["#video-libero_spatial-0-0"]


def test_missing_video_files_are_not_linked(suite_run):
    next((suite_run / "videos").rglob("*.mp4")).unlink()
    write_report(suite_run)
    root = parse_xml(suite_run / "report.html")
    assert len(list(root.iter("video"))) == 3


def test_episode_table_lists_seeds_and_init_states(suite_run):
    write_report(suite_run)
    root = parse_xml(suite_run / "report.html")
    table = root.find(".//table[@class='episodes']")
    header = [th.text for th in table.iter("th")]
    assert header[:5] == ["Suite", "Task", "Episode", "Seed", "Init state"]
    rows = table.findall("./tbody/tr")
    assert len(rows) == 16
    assert [text(td) for td in rows[1].findall("td")][:5] == [
        "libero_spatial",
        "pick_up_the_black_bowl",
        "1",
        "1001",
        "1",
    ]


def test_summary_markdown_is_a_table_with_intervals(suite_run):
    write_report(suite_run)
    summary = (suite_run / "summary.md").read_text()
    suites, tasks = summary.split("<details>")
    assert "| libero_spatial | 8 | 75.0 | 40.9\u201392.9 | 75.0 | 21.5 |" in suites  # papers report suites
    assert "| **Overall** | 16 | **43.8** | 23.1\u201366.8 |" in suites
    assert "| libero_spatial | open_the_drawer | 4 | 50.0 | 15.0\u201385.0 | 50.0 | 21.5 |" in tasks
    assert "seeds 1000\u20131003" in summary and "git 0123456789ab (dirty)" in summary


def test_partial_run_says_so(tmp_path):
    out = tmp_path / "run"
    write_run(out, [make_task("push-v3", 0, "push-v3", 1, n=2)], "random", complete=False)
    write_report(out)
    page = text(parse_xml(out / "report.html"))
    assert "Partial results: the run was interrupted after 2 episodes" in page
    assert "--eval.resume=true" in page
    assert "Partial results" in (out / "summary.md").read_text()


def test_results_without_intervals_or_provenance_still_get_a_report(tmp_path):
    """An eval_info.json written by LeRobot itself: no interval, no provenance, no groups."""
    out = tmp_path / "lerobot_run"
    out.mkdir()
    info = {
        "per_episode": [{"episode_ix": 0, "sum_reward": 1.0, "success": True, "seed": 3}],
        "aggregated": {"pc_success": 50.0, "n_episodes": 10, "avg_sum_reward": 1.0, "eval_s": 9.0},
    }
    (out / "eval_info.json").write_text(json.dumps(info))
    write_report(out)
    page = text(parse_xml(out / "report.html"))
    assert "50.0%" in page and "23.7\u201376.3" in page  # interval computed from 5 of 10
    assert "Not recorded" in page


def test_console_table_has_a_row_per_task_and_overall(suite_run):
    run = load_run(suite_run)
    lines = render_task_table(run).splitlines()
    assert lines[0].split() == [
        "suite",
        "task",
        "episodes",
        "success",
        "%",
        "95%",
        "CI",
        "at",
        "end",
        "%",
        "avg",
        "steps",
    ]
    assert lines[2].split()[:5] == ["libero_spatial", "open_the_drawer", "4", "50.0", "15.0-85.0"]
    assert lines[-1].split()[:3] == ["overall", "16", "43.8"]


def test_comparison_puts_runs_side_by_side_per_task(suite_run, tmp_path):
    other = tmp_path / "run_b"
    write_run(
        other,
        [
            make_task("libero_spatial", 0, "pick_up_the_black_bowl", 1),
            make_task("libero_spatial", 1, "open_the_drawer", 4),
            make_task("libero_goal", 0, "turn_on_the_stove", 3),
        ],
        "pi0",
    )
    runs = [load_run(suite_run), load_run(other)]
    out = tmp_path / "compare"
    html_path, md_path = write_comparison(runs, out)
    root = parse_xml(html_path)
    page = text(root)
    assert "A: smolvla" in page and "B: pi0" in page
    assert "The runs cover different tasks: compare them task by task" in page
    assert len(root.findall(f".//{SVG}rect")) == 4 + 3  # a bar per task and run that has it
    row = next(tr for tr in root.iter("tr") if "open_the_drawer" in row_text(tr))
    assert row_text(row) == (
        "libero_spatial / open_the_drawer 50.0 [15.0\u201385.0] n=4 100.0 [51.0\u2013100.0] n=4"
    )
    missing = next(tr for tr in root.iter("tr") if "turn_on_the_stove" in row_text(tr))
    assert row_text(missing).startswith("libero_goal / turn_on_the_stove \u2013 75.0")
    links = [a.get("href") for a in root.iter("a")]
    assert "../run_a/report.html" not in links  # run A has no report.html yet: no dead link
    markdown = md_path.read_text()
    assert "| Task | A: smolvla | B: pi0 |" in markdown
    assert (
        "| libero_spatial / open_the_drawer | 50.0 (15.0\u201385.0), n=4 | 100.0 (51.0\u2013100.0), n=4 |"
        in markdown
    )


def test_comparison_links_to_run_reports_relatively(suite_run, tmp_path):
    write_report(suite_run)
    runs = [load_run(suite_run), load_run(suite_run)]
    write_comparison(runs, tmp_path / "compare")
    root = parse_xml(tmp_path / "compare" / "comparison.html")
    links = [a.get("href") for a in root.iter("a")]
    assert links.count("../run_a/report.html") == 2
    assert "compare them task by task" not in text(root)  # same tasks, same episode counts


def test_run_labels_fall_back_to_directories_when_job_names_repeat(tmp_path):
    runs = [
        run_from_eval_info({"provenance": {"config": {"job_name": "x"}}}, tmp_path / d) for d in ("a", "b")
    ]
    assert run_labels(runs) == ["A: a", "B: b"]


def test_video_href_accepts_absolute_and_cwd_relative_paths(tmp_path, monkeypatch):
    out = tmp_path / "out"
    video = out / "videos" / "push-v3_0" / "eval_episode_0.mp4"
    video.parent.mkdir(parents=True)
    video.touch()
    assert video_href(str(video), out) == "videos/push-v3_0/eval_episode_0.mp4"
    monkeypatch.chdir(tmp_path)
    assert (
        video_href("out/videos/push-v3_0/eval_episode_0.mp4", Path("out"))
        == "videos/push-v3_0/eval_episode_0.mp4"
    )
    assert (
        video_href("/gone/run/videos/push-v3_0/eval_episode_0.mp4", out)
        == "videos/push-v3_0/eval_episode_0.mp4"
    )
    assert video_href(str(out / "videos" / "missing.mp4"), out) is None


def test_video_links_never_leave_the_run_directory(tmp_path):
    out = tmp_path / "out"
    (out / "videos").mkdir(parents=True)
    secret = tmp_path / "secret.mp4"
    secret.touch()
    assert video_href(str(secret), out) is None
    assert video_href("/elsewhere/videos/../../secret.mp4", out) is None
    assert video_href(str(out / "videos" / ".." / ".." / "secret.mp4"), out) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "eval_info.json: not an eval_info.json (a JSON list, not an object)"),
        ("{}", "eval_info.json: holds no results (none of per_task, per_episode, overall, aggregated)"),
    ],
)
def test_an_eval_info_without_results_is_refused_in_one_line(tmp_path, content, message):
    from lerobot.evaluation.results import UnreadableResultsError

    (tmp_path / "eval_info.json").write_text(content)
    with pytest.raises(UnreadableResultsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_run(tmp_path)
