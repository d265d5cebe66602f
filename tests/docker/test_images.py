"""The Meta-World benchmark image, built and run for real.

`docker/build_local.sh metaworld` builds docker/Dockerfile.benchmark.metaworld (on a local
Debian base, so no image registry is needed) and runs in it the steps of
.github/workflows/benchmark_tests.yml: the image's default command (a 1-episode eval), the task
descriptions, metrics.json, recording 2 episodes, a 1-step train with its in-loop eval, and the
SmolVLA eval and fine-tuning steps (against tiny hub stand-ins, docker/hub_standins.py). This
test checks what a user of the image would look at afterwards, then runs an eval with two async
workers in the image, which the CI steps never do (their batch is 1, in-process), to prove that
worker processes and their shared-memory frames work under Docker's default 64 MB /dev/shm.

Not part of `pytest -q` (.ci/run): about 5 minutes on 2 cores when only src/ changed since the
last build, 8 when the dependency layer is rebuilt, more when downloads are not cached yet.
Run it with

    .venv/bin/pytest -m docker -s

It needs a Docker daemon that answers `docker info` (docker/build_local.sh starts one when run
by itself) and, for the first build of the base image, root or sudo; it is skipped, with the
reason, when no daemon answers.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
BUILD_LOCAL = REPO / "docker" / "build_local.sh"
IMAGE = "lerobot-benchmark-metaworld:local"


def docker_unavailable() -> str | None:
    """Why no Docker daemon can be used here, or None when one answers."""
    if shutil.which("docker") is None:
        return "no `docker` client on PATH (install docker.io; docker/build_local.sh does)"
    try:
        probe = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 30 s"
    if probe.returncode != 0:
        error = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"no Docker daemon answers `docker info` ({error}); start one, e.g. by running docker/build_local.sh"
    return None


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    """The workflow's artifact folders after docker/build_local.sh ran every step."""
    reason = docker_unavailable()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("ci-artifacts")
    env = {**os.environ, "ARTIFACTS_ROOT": str(root)}
    result = subprocess.run(
        ["bash", str(BUILD_LOCAL), "metaworld"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=3300,
    )
    output = result.stdout + result.stderr
    summary = output[output.rfind("==> summary") :] if "==> summary" in output else output[-4000:]
    print(summary)  # the steps' times and the image sizes (pytest -s shows them)
    assert result.returncode == 0, f"docker/build_local.sh metaworld failed:\n{output[-6000:]}"
    return root / "metaworld"


def read_json(path: Path):
    assert path.is_file(), f"{path} was not written"
    return json.loads(path.read_text(encoding="utf-8"))


def assert_mp4(path: Path) -> None:
    assert path.is_file(), f"no video at {path}"
    head = path.read_bytes()[:12]
    assert head[4:8] == b"ftyp", f"{path} is not an mp4 file (starts with {head!r})"
    assert path.stat().st_size > 1000, f"{path} is nearly empty ({path.stat().st_size} bytes)"


def artifact_path(artifacts: Path, container_path: str) -> Path:
    """Where a path the container wrote under /artifacts lies on this machine."""
    return artifacts / Path(container_path).relative_to("/artifacts")


@pytest.mark.timeout(3600)
def test_metaworld_image_smoke_eval(artifacts):
    """The default command evaluated one finished episode of the scripted expert and filmed it."""
    info = read_json(artifacts / "eval_info.json")
    assert info["complete"] is True
    assert info["overall"]["n_episodes"] == 1
    (episode,) = info["per_episode"]
    assert episode["task"] == "push-v3"
    assert episode["n_steps"] > 0
    assert episode["failure_reason"] is None
    # Meta-World's scripted expert solves push-v3 from the default seed (as on the host).
    assert episode["success"] is True, episode
    assert_mp4(artifact_path(artifacts, episode["video_path"]))

    metrics = read_json(artifacts / "metrics.json")
    assert metrics["env"] == "metaworld"
    assert metrics["task"] == "push-v3"
    assert metrics["policy"] == "metaworld_expert"
    assert metrics["pc_success"] == 100.0
    assert metrics["n_episodes"] == 1
    assert isinstance(metrics["avg_sum_reward"], float)
    assert metrics["eval_s"] > 0
    assert metrics["task_descriptions"] == {"push-v3_0": "Push the puck to a goal"}


@pytest.mark.timeout(3600)
def test_metaworld_image_record_and_train(artifacts):
    """Recording wrote a 2-episode dataset; training saved a checkpoint and ran its eval."""
    dataset_info = read_json(artifacts / "train" / "dataset" / "meta" / "info.json")
    assert dataset_info["total_episodes"] == 2

    checkpoint = artifacts / "train" / "run" / "checkpoints" / "last" / "pretrained_model"
    weights = checkpoint / "model.safetensors"
    assert weights.is_file(), f"no checkpoint weights at {weights}"
    assert weights.stat().st_size > 1_000_000  # ACT's ~50M parameters

    step_eval = artifacts / "train" / "run" / "eval" / "step_1"
    info = read_json(step_eval / "eval_info.json")
    assert info["overall"]["n_episodes"] == 1
    (episode,) = info["per_episode"]
    assert episode["n_steps"] == 40  # the train smoke's --env.episode_length (untrained: no success)
    assert_mp4(artifact_path(artifacts / "train", episode["video_path"]))  # train's /artifacts
    metrics = read_json(step_eval / "metrics.json")
    assert metrics["policy"] == "act"
    assert metrics["n_episodes"] == 1


@pytest.mark.timeout(3600)
def test_metaworld_image_smolvla(artifacts):
    """The workflow's SmolVLA commands, run against the local hub stand-ins: the evaluated
    checkpoint played one full episode (its cameras renamed, blank ones added) and filmed it;
    fine-tuning smolvla_base saved a SmolVLA checkpoint and ran its in-loop eval."""
    eval_dir = artifacts / "smolvla" / "eval"
    info = read_json(eval_dir / "eval_info.json")
    assert info["complete"] is True
    (episode,) = info["per_episode"]
    assert episode["task"] == "push-v3"
    assert (episode["n_steps"], episode["failure_reason"]) == (50, None)  # the eval's --env.episode_length
    assert_mp4(artifact_path(artifacts / "smolvla", episode["video_path"]))
    assert read_json(eval_dir / "metrics.json")["policy"] == "pepijn223/smolvla_metaworld"

    run = artifacts / "train" / "smolvla_run"
    config = read_json(run / "checkpoints" / "last" / "pretrained_model" / "config.json")
    assert config["type"] == "smolvla"
    assert config["vlm_model_name"] == "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"
    assert config["empty_cameras"] == 2
    step_eval = run / "eval" / "step_1"
    (episode,) = read_json(step_eval / "eval_info.json")["per_episode"]
    assert (episode["n_steps"], episode["failure_reason"]) == (40, None)  # the train smoke's episode length
    assert read_json(step_eval / "metrics.json")["policy"] == "smolvla"


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("shm_size", "frames_shared"),
    [(None, True), ("1m", False)],
    ids=["default-shm", "1m-shm"],
)
def test_metaworld_image_async_workers(artifacts, tmp_path, shm_size, frames_shared):
    """Two worker processes (forkserver, frames through /dev/shm) under `docker run`: with the
    default 64 MB both blocks fit; with 1 MB the second does not, and that worker must use its
    pipe instead of dying of SIGBUS (which it did before blocks were reserved)."""
    out = tmp_path / "async"
    out.mkdir()
    out.chmod(0o777)  # the image's user (not this test's) writes here
    shm_args = [f"--shm-size={shm_size}"] if shm_size else []
    result = subprocess.run(
        [
            "docker", "run", "--rm", *shm_args, "--volume", f"{out}:/artifacts", IMAGE,
            "lerobot-eval", "--policy.type=metaworld_expert", "--env.type=metaworld",
            "--env.task=push-v3", "--env.episode_length=30", "--eval.n_episodes=2",
            "--eval.batch_size=2", "--eval.use_async_envs=true", "--eval.envs_in_main_process=0",
            "--output_dir=/artifacts",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "envs per task: 2 (2 async workers)" in output, output[-3000:]
    assert "worker process exited" not in output, output[-3000:]
    assert ("shared memory unavailable" not in output) == frames_shared, output[-3000:]
    info = read_json(out / "eval_info.json")
    assert info["complete"] is True
    assert info["n_episodes_retried"] == 0
    assert info["overall"]["n_episodes"] == 2
    assert [episode["n_steps"] for episode in info["per_episode"]] == [30, 30]
