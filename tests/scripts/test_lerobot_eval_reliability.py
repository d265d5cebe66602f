"""Nothing finished is lost: killed workers, killed runs, Ctrl-C and resume, on real Meta-World."""

import json
import multiprocessing as mp
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from lerobot.scripts.lerobot_eval import main

LEROBOT_EVAL = str(Path(sys.executable).parent / "lerobot-eval")
# Random actions never solve reach-v3 within 40 steps, so every episode runs to the limit: slow
# enough (64x64 rendering) to interrupt mid-run, short enough for the test suite.
COMMON = [
    "--policy.type=random",
    "--env.type=metaworld",
    "--env.task=reach-v3",
    "--env.observation_height=64",
    "--env.observation_width=64",
    "--env.episode_length=40",
    "--eval.max_episodes_rendered=0",
    "--seed=5",
]


def journal_lines(out: Path) -> list[str]:
    path = out / "episodes.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def outcomes(info: dict) -> list[tuple]:
    return [
        (e["episode_index"], e["seed"], e["success"], round(e["sum_reward"], 9), e["n_steps"])
        for e in info["per_episode"]
    ]


def wait_for(condition, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for the evaluation to make progress")
        time.sleep(0.05)


def processes_with_marker(marker: str) -> list[int]:
    """PIDs of live processes whose environment carries `marker` (workers inherit it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """An undisturbed run of 4 episodes."""
    out = tmp_path_factory.mktemp("reference")
    assert main([*COMMON, "--eval.n_episodes=4", "--eval.batch_size=1", f"--output_dir={out}"]) == 0
    return json.loads((out / "eval_info.json").read_text())


@pytest.mark.slow
def test_killing_a_worker_loses_nothing(tmp_path, reference):
    out = tmp_path / "run"

    def kill_one_worker_mid_run():
        wait_for(lambda: len(journal_lines(out)) >= 1)
        workers = [p for p in mp.active_children() if p.is_alive()]
        os.kill(workers[0].pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_one_worker_mid_run, daemon=True)
    killer.start()
    assert main([*COMMON, "--eval.n_episodes=4", "--eval.batch_size=2", f"--output_dir={out}"]) == 0
    killer.join(timeout=5)
    info = json.loads((out / "eval_info.json").read_text())
    assert outcomes(info) == outcomes(reference)
    assert info["complete"] is True and info["n_episodes_retried"] == 1 and info["n_episodes_failed"] == 0
    assert len(journal_lines(out)) == 4


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_same_results_without_rerunning_finished_episodes(tmp_path, reference):
    out = tmp_path / "run"
    args = [*COMMON, "--eval.n_episodes=4", "--eval.batch_size=1", f"--output_dir={out}"]
    proc = subprocess.Popen([LEROBOT_EVAL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: len(journal_lines(out)) >= 2)
    proc.kill()
    proc.wait(timeout=30)
    before = journal_lines(out)
    assert 2 <= len(before) < 4 and not (out / "eval_info.json").exists()

    assert main([*args, "--eval.resume=true"]) == 0
    after = journal_lines(out)
    assert after[: len(before)] == before  # finished episodes kept as they were, not re-run
    assert sorted(json.loads(line)["episode_index"] for line in after) == [0, 1, 2, 3]
    info = json.loads((out / "eval_info.json").read_text())
    assert outcomes(info) == outcomes(reference) and info["complete"] is True


@pytest.mark.slow
def test_ctrl_c_writes_partial_results_and_leaves_no_workers(tmp_path):
    out, marker = tmp_path / "run", f"LEROBOT_TEST_MARKER={uuid.uuid4()}"
    key, value = marker.split("=")
    args = [*COMMON, "--eval.n_episodes=6", "--eval.batch_size=2", f"--output_dir={out}"]
    proc = subprocess.Popen(
        [LEROBOT_EVAL, *args],
        env={**os.environ, key: value},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for(lambda: len(journal_lines(out)) >= 2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, stderr.decode()[-2000:]
    info = json.loads((out / "eval_info.json").read_text())
    assert info["complete"] is False
    assert "Partial results" in (out / "report.html").read_text()
    assert "Partial results" in (out / "summary.md").read_text()
    assert info["overall"]["n_episodes"] == len(journal_lines(out)) < 6
    time.sleep(0.5)
    assert processes_with_marker(marker) == []


@pytest.mark.slow
def test_ctrl_c_in_a_terminal_stops_a_filmed_run_in_one_line(tmp_path):
    """A terminal's Ctrl-C signals the whole process group: lerobot-eval, the envs it steps
    itself, its env workers and the video encoders. The finished episodes are saved and the
    stop is one line: no traceback, no "Exception ignored" from a renderer cut mid-build."""
    out = tmp_path / "run"
    filmed = [arg for arg in COMMON if not arg.startswith("--eval.max_episodes_rendered")]
    args = [*filmed, "--eval.n_episodes=8", "--eval.batch_size=4", "--log_level=DEBUG", f"--output_dir={out}"]
    proc = subprocess.Popen(
        [LEROBOT_EVAL, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    before = []
    for line in proc.stderr:  # until the first episode's line: one episode is saved
        before.append(line)
        if re.search(r" episode \d+ \(seed \d+\): ", line):
            break
    os.killpg(proc.pid, signal.SIGINT)
    stderr = "".join(before) + proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, stderr[-2000:]
    assert "Exception ignored" not in stderr and "Traceback" not in stderr, stderr[-2000:]
    assert stderr.rstrip().endswith(f"stopped by SIGINT; finished episodes are in {out}")
    info = json.loads((out / "eval_info.json").read_text())
    assert info["complete"] is False and 1 <= info["overall"]["n_episodes"] == len(journal_lines(out)) < 8
    assert all(Path(episode["video_path"]).is_file() for episode in info["per_episode"])


@pytest.mark.slow
def test_resume_refuses_changed_settings_and_fresh_runs_refuse_old_results(tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        *COMMON,
        "--eval.n_episodes=1",
        "--eval.batch_size=1",
        "--env.episode_length=3",
        f"--output_dir={out}",
    ]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 2
    assert "holds results of an earlier run; pass --eval.resume=true" in capsys.readouterr().err
    assert main([*args, "--eval.resume=true", "--seed=6", "--eval.n_episodes=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "--eval.n_episodes: was 1, now 2; --seed: was 5, now 6" in err
    # settings that cannot change results may differ
    assert main([*args, "--eval.resume=true", "--eval.batch_size=2", "--eval.step_timeout_s=60"]) == 0


def _small_files_only(max_bytes: int):
    """A child whose files cannot grow past `max_bytes`: writes fail as on a full disk."""

    def limit() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write (EFBIG) instead of dying
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))

    return limit


@pytest.mark.slow
def test_a_full_disk_stops_the_run_in_one_line_and_a_resume_completes_it(tmp_path):
    out = tmp_path / "run"
    args = [
        *COMMON,
        "--env.obs_type=state",
        "--env.episode_length=5",
        "--eval.n_episodes=12",
        "--eval.batch_size=1",
        f"--output_dir={out}",
    ]
    # run_config.json (~1.2 KB) fits; the journal fills up after a few ~0.3 KB lines.
    full = subprocess.run(
        [LEROBOT_EVAL, *args], capture_output=True, text=True, preexec_fn=_small_files_only(2500), timeout=300
    )
    last_line = full.stderr.strip().splitlines()[-1]
    assert full.returncode == 2, full.stderr[-2000:]
    kept = re.search(
        r"episodes.jsonl: cannot write \(File too large\); it keeps the (\d+) episodes finished", last_line
    )
    assert kept and 1 <= int(kept[1]) < 12 and "Traceback" not in full.stderr, full.stderr[-2000:]

    assert main([*args, "--eval.resume=true"]) == 0
    info = json.loads((out / "eval_info.json").read_text())
    assert sorted(e["episode_index"] for e in info["per_episode"]) == list(range(12))
    assert info["complete"] is True
