"""report.html, summary.md and `lerobot-eval-report`, from a real Meta-World evaluation."""

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lerobot.evaluation.intervals import pc_wilson_interval
from lerobot.scripts import lerobot_eval, lerobot_eval_report

LEROBOT_EVAL_REPORT = str(Path(sys.executable).parent / "lerobot-eval-report")
TASKS = ("reach-v3", "push-v3")
EXPERT_RUN = [
    "--policy.type=metaworld_expert",
    "--env.type=metaworld",
    f"--env.task={','.join(TASKS)}",
    "--env.observation_height=64",
    "--env.observation_width=64",
    "--eval.n_episodes=2",
    "--eval.max_episodes_rendered=1",
]
# Random actions for 10 steps: fails every episode, in seconds.
RANDOM_RUN = [
    "--policy.type=random",
    "--env.type=metaworld",
    f"--env.task={','.join(TASKS)}",
    "--env.obs_type=state",
    "--env.episode_length=10",
    "--eval.n_episodes=2",
    "--eval.max_episodes_rendered=0",
    "--log_level=WARNING",
]


def evaluate(out: Path, flags: list[str]) -> dict:
    assert lerobot_eval.main([*flags, f"--output_dir={out}"]) == 0
    return json.loads((out / "eval_info.json").read_text())


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("expert") / "run"
    return out, evaluate(out, EXPERT_RUN)


def page_text(root: ET.Element) -> str:
    return " ".join("".join(root.itertext()).split())


@pytest.mark.slow
def test_evaluation_writes_a_well_formed_report_with_every_task_and_its_videos(expert_run):
    out, info = expert_run
    root = ET.fromstring((out / "report.html").read_text(encoding="utf-8"))  # well-formed or raises
    text = page_text(root)
    for task in info["per_task"]:
        metrics = task["metrics"]
        low, high = metrics["pc_success_ci95"]
        assert task["task"] in text
        assert f"{metrics['pc_success']:.1f}" in text and f"{low:.1f}\u2013{high:.1f}" in text, task["task"]
    sources = [video.get("src") for video in root.iter("video")]
    assert sorted(sources) == [f"videos/{task}_0/eval_episode_0.mp4" for task in sorted(TASKS)]
    assert all((out / src).stat().st_size > 0 for src in sources)
    # nothing is fetched from anywhere: no external scripts, styles, images or fonts
    assert not [e for e in root.iter() if e.get("src", "").startswith("http") or e.tag in ("script", "link")]
    summary = (out / "summary.md").read_text()
    for task in TASKS:
        assert f"| {task} | 2 | 100.0 | 34.2\u2013100.0 |" in summary


@pytest.mark.slow
def test_eval_info_carries_intervals_and_provenance(expert_run):
    _, info = expert_run
    assert info["overall"]["pc_success_ci95"] == pytest.approx(pc_wilson_interval(4, 4))
    assert all(g["pc_success_ci95"] for g in info["per_group"].values())
    prov = info["provenance"]
    assert prov["config"]["env"]["task"] == "reach-v3,push-v3" and prov["config"]["eval"]["n_episodes"] == 2
    assert {"lerobot", "torch", "numpy", "gymnasium", "mujoco", "metaworld"} <= set(prov["versions"])
    assert prov["started_at"] < prov["ended_at"] and prov["wall_s"] > 0
    assert prov["command"].startswith("lerobot-eval --env.type=metaworld --env.task=reach-v3,push-v3")
    assert all(
        e["wall_s"] > 0 and e["seed"] in (1000, 1001) and e["n_steps"] > 0 for e in info["per_episode"]
    )


@pytest.mark.slow
def test_report_is_rebuilt_from_eval_info_alone(expert_run, tmp_path):
    out, _ = expert_run
    copy = tmp_path / "copied_run"  # results moved to another disk: the links must still work
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)
    for name in ("report.html", "summary.md"):
        (copy / name).unlink()
    assert lerobot_eval_report.main([str(copy)]) == 0
    assert (copy / "summary.md").read_text() == (out / "summary.md").read_text()
    rebuilt = (copy / "report.html").read_text()
    assert rebuilt.count("<video") == 2 and 'src="videos/reach-v3_0/eval_episode_0.mp4"' in rebuilt


@pytest.mark.slow
def test_comparison_of_two_real_runs(expert_run, tmp_path, capsys):
    expert_out, _ = expert_run
    random_out = tmp_path / "random"
    evaluate(random_out, RANDOM_RUN)
    assert " INFO " not in capsys.readouterr().err  # --log_level=WARNING
    compare = tmp_path / "compare"
    assert lerobot_eval_report.main([str(expert_out), str(random_out), f"--output_dir={compare}"]) == 0
    root = ET.fromstring((compare / "comparison.html").read_text(encoding="utf-8"))
    rows: dict[str, list[str]] = {}  # a task's first row: the per-task table, before "Is it better?"
    for tr in root.iter("tr"):
        if tr[0].tag == "td":
            cells = [" ".join("".join(td.itertext()).split()) for td in tr]
            rows.setdefault(cells[0], cells[1:])
    for task in TASKS:
        assert rows[task] == [
            "100.0 [34.2\u2013100.0] n=2",
            "0.0 [0.0\u201365.8] n=2",
        ]
    header = [" ".join("".join(th.itertext()).split()) for th in root.iter("th")]
    assert "A: metaworld_metaworld_expert" in header and "B: metaworld_random" in header
    assert (
        "| reach-v3 | 100.0 (34.2\u2013100.0), n=2 | 0.0 (0.0\u201365.8), n=2 |"
        in (compare / "comparison.md").read_text()
    )


@pytest.mark.slow
def test_the_log_ends_with_a_per_task_table(tmp_path, capsys):
    evaluate(tmp_path / "run", [*RANDOM_RUN[:-1], "--log_level=INFO"])
    err = capsys.readouterr().err
    table = err.split("results per task:\n", 1)[1].splitlines()
    assert table[0].split()[:3] == ["task", "episodes", "success"]
    assert [line.split()[:4] for line in table[1:4]] == [
        ["reach-v3", "2", "0.0", "0.0-65.8"],
        ["push-v3", "2", "0.0", "0.0-65.8"],
        ["overall", "4", "0.0", "0.0-49.0"],
    ]


def test_console_script_rebuilds_a_report(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    info = {"aggregated": {"pc_success": 50.0, "n_episodes": 2}, "per_episode": []}
    (out / "eval_info.json").write_text(json.dumps(info))
    proc = subprocess.run([LEROBOT_EVAL_REPORT, str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.html").is_file() and (out / "summary.md").is_file()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["{tmp}/nothing_here"], "lerobot-eval-report: {tmp}/nothing_here: no eval_info.json;"),
        (
            ["{tmp}/run", "--output_dir={tmp}/x"],
            "--output_dir={tmp}/x: only used when comparing several runs",
        ),
        ([], "lerobot-eval-report: error: the following arguments are required: OUTPUT_DIR"),
        (["{tmp}/run", "--log_level=LOUD"], "argument --log_level: invalid choice: 'LOUD'"),
    ],
)
def test_bad_input_fails_in_one_line(tmp_path, capsys, argv, expected):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "eval_info.json").write_text("{}")
    code = lerobot_eval_report.main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and expected.format(tmp=tmp_path) in err
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_reports_show_how_fast_episodes_succeed(expert_run, tmp_path):
    """Every episode records the step it first succeeded at; report and summary draw and
    tabulate it."""
    out, info = expert_run
    steps = [e["success_step"] for e in info["per_episode"]]
    assert all(1 <= s <= e["n_steps"] for s, e in zip(steps, info["per_episode"], strict=True))
    root = ET.fromstring((out / "report.html").read_text(encoding="utf-8"))
    assert "Time to success" in page_text(root)
    summary = (out / "summary.md").read_text()
    assert "### Time to success" in summary and "| Median steps to success |" in summary


@pytest.mark.slow
def test_a_training_output_dir_gets_its_training_curve(expert_run, tmp_path):
    """Two real runs on the same seeds, laid out as lerobot-train's in-loop evaluations."""
    expert_out, _ = expert_run
    train = tmp_path / "train"
    evaluate(train / "eval" / "step_10", RANDOM_RUN)
    shutil.copytree(expert_out, train / "eval" / "step_20")
    assert lerobot_eval_report.main([str(train)]) == 0
    root = ET.fromstring((train / "training_curve.html").read_text(encoding="utf-8"))
    assert "Ringed: the best, step 20 (100.0%)" in page_text(root)
    summary = (train / "training_curve.md").read_text()
    assert "| 10 | 4 | 0.0 | 0.0\u201349.0 |" in summary
    assert "| **20** | 4 | **100.0** | 51.0\u2013100.0 | +100.0 | 0 | 4 |" in summary
