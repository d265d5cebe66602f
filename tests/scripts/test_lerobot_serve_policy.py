"""`lerobot-serve-policy` and `lerobot-eval --policy.type=websocket` as users run them: separate
processes on 127.0.0.1, one-line errors, and a server killed mid-run."""

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lerobot.scripts.lerobot_eval import main as eval_main
from lerobot.scripts.lerobot_serve_policy import main as serve_main
from tests.remote import ObservationPolicy, free_port, running_server

BIN = Path(sys.executable).parent
EVAL = [
    "--env.type=metaworld",
    "--env.task=reach-v3",
    "--env.observation_height=64",
    "--env.observation_width=64",
    "--eval.max_episodes_rendered=0",
    "--seed=5",
]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--policy.type=metaworld_expert", "--host=0.0.0.0"],
            "--host=0.0.0.0: serving beyond this machine needs --api_key",
        ),
        (["--policy.type=websocket"], "--policy.type=websocket: a server serves a policy it loads itself"),
        (["--policy.type=act"], "--policy.type=act: needs trained weights; pass --policy.path"),
        (["--policy.type=metaworld_expert", "--max_batch=0"], "--max_batch=0: must be a positive integer"),
        (["--port=1"], "--policy.path or --policy.type: required"),
    ],
)
def test_bad_flags_are_one_line_errors(capsys, args, message):
    assert serve_main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_a_taken_port_is_a_one_line_error(capsys):
    with running_server(ObservationPolicy(4)) as server:
        assert serve_main(["--policy.type=metaworld_expert", f"--port={server.port}"]) == 2
    # (the test's own server, in this process, logs to stderr too)
    expected = f"--host=127.0.0.1 --port={server.port}: cannot listen there (address already in use)"
    assert expected in capsys.readouterr().err.splitlines()


def test_eval_without_a_server_fails_in_one_line_before_any_simulator(tmp_path):
    """In a fresh process, so that the simulator modules it loads can be seen: MuJoCo's bindings
    are imported ahead of torch on purpose (`lerobot.utils.import_order`), Meta-World is not."""
    argv = [
        "--policy.type=websocket",
        f"--policy.port={free_port()}",
        *EVAL,
        f"--output_dir={tmp_path / 'run'}",
    ]
    code = (
        "import sys\nfrom lerobot.scripts.lerobot_eval import main\n"
        f"code = main({argv!r})\nprint(code, 'metaworld' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["2", "False"], done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("--policy.host/--policy.port: no policy server answers at ws://127.0.0.1:")
    assert not (tmp_path / "run" / "episodes.jsonl").exists()


def test_eval_with_a_wrong_api_key_fails_in_one_line(tmp_path, capsys):
    with running_server(ObservationPolicy(4), api_key="s3cret") as server:
        argv = ["--policy.type=websocket", f"--policy.port={server.port}", "--policy.api_key=nope", *EVAL]
        assert eval_main([*argv, f"--output_dir={tmp_path}"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("--policy.api_key")]
    assert len(errors) == 1 and "refused the connection (HTTP 401)" in errors[0]


def start_server(port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [BIN / "lerobot-serve-policy", "--policy.type=metaworld_expert", f"--port={port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_until_serving(server: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return
        except OSError:
            assert server.poll() is None, "lerobot-serve-policy exited at startup"
            time.sleep(0.2)
    pytest.fail("lerobot-serve-policy did not start")


def journal(out: Path) -> list[str]:
    path = out / "episodes.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def outcomes(info: dict) -> list[tuple]:
    return [
        (e["episode_index"], e["success"], round(e["sum_reward"], 9), e["n_steps"])
        for e in info["per_episode"]
    ]


@pytest.mark.slow
def test_a_server_killed_mid_run_loses_nothing_once_it_is_back(tmp_path):
    """kill -9 the server while episodes run; start it again: the evaluation reconnects,
    re-runs the interrupted episodes from their seeds and ends with the undisturbed results."""
    # State only: episodes of about 40 fast steps, 20 of them, so the kill lands mid-run.
    common = [
        *EVAL,
        "--env.obs_type=state",
        "--eval.n_episodes=20",
        "--eval.batch_size=2",
        "--eval.use_async_envs=false",
    ]
    port, out = free_port(), tmp_path / "remote"
    server = start_server(port)
    assert eval_main(["--policy.type=metaworld_expert", *common, f"--output_dir={tmp_path / 'local'}"]) == 0
    reference = json.loads((tmp_path / "local" / "eval_info.json").read_text())
    wait_until_serving(server, port)
    run = subprocess.Popen(
        [
            BIN / "lerobot-eval",
            "--policy.type=websocket",
            f"--policy.port={port}",
            *common,
            f"--output_dir={out}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 300
        while len(journal(out)) < 1 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
        server.send_signal(signal.SIGKILL)
        server.wait(30)
        finished_before = journal(out)
        assert 1 <= len(finished_before) < 20, "the run should be mid-way when the server dies"
        server = start_server(port)  # meanwhile the evaluation retries with backoff
        _, stderr = run.communicate(timeout=300)
    finally:
        run.kill()
        server.kill()
    assert run.returncode == 0, stderr.decode()[-3000:]
    info = json.loads((out / "eval_info.json").read_text())
    assert journal(out)[: len(finished_before)] == finished_before  # kept as they were
    assert outcomes(info) == outcomes(reference)
    assert info["n_episodes_retried"] >= 1 and info["n_episodes_failed"] == 0
    assert b"reconnected" in stderr


def test_the_api_key_reaches_no_result_file_and_resume_still_works(tmp_path):
    secret = "s3cret-7f1c9a"
    out = tmp_path / "run"
    with running_server(ObservationPolicy(4), api_key=secret) as server:
        argv = [
            "--policy.type=websocket",
            f"--policy.port={server.port}",
            f"--policy.api_key={secret}",
            *EVAL,
        ]
        argv.append("--env.episode_length=20")
        assert eval_main([*argv, "--eval.n_episodes=2", f"--output_dir={out}"]) == 0
        # The resume check compares the settings without the key, and accepts the same run.
        assert eval_main([*argv, "--eval.n_episodes=2", "--eval.resume=true", f"--output_dir={out}"]) == 0
    written = [path for path in out.rglob("*") if path.is_file()]
    assert {p.name for p in written} >= {"run_config.json", "eval_info.json", "report.html", "episodes.jsonl"}
    assert not [p.name for p in written if secret.encode() in p.read_bytes()]
    assert json.loads((out / "run_config.json").read_text())["policy"]["api_key"] == "<redacted>"
    assert len(json.loads((out / "eval_info.json").read_text())["per_episode"]) == 2
