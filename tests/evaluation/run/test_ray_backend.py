"""The Ray backend (`--eval.backend=ray`) on a real local Ray instance (2 CPUs) and real Meta-World.

Every Ray run is compared with one local run of the same evaluation: per-episode outcomes must
be identical, also when a worker is killed mid-run and when the run resumes a local one.
Multi-node clusters: test_ray_cluster.py.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalConfig, EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.evaluation.evaluate import run_evaluation
from lerobot.evaluation.results import TaskResult
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.store.journal import JOURNAL_FILENAME, EpisodeJournal
from lerobot.scripts.lerobot_eval import main
from lerobot.utils.errors import ConfigError
from tests.evaluation.run.ray_runs import (
    FLAGS,
    N_EPISODES,
    RAY_FLAGS,
    EpisodeKey,
    journal_lines,
    outcomes,
    outcomes_in,
    run_locally,
)
from tests.remote import free_port

# One Ray instance at a time: with `pytest -n 2` these tests share one xdist worker.
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray for the whole module: starting one takes about 15 s on a small machine."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Path:
    """The same evaluation on the local backend: its output dir."""
    return run_locally(tmp_path_factory.mktemp("local") / "run")


@pytest.fixture(scope="module")
def local_outcomes(local_run) -> dict[EpisodeKey, tuple]:
    found = outcomes_in(local_run)
    assert len(found) == 2 * N_EPISODES
    return found


def run_on_ray(out: Path, *extra: str) -> list[TaskResult]:
    from lerobot.evaluation.evaluate import rollout_settings
    from lerobot.evaluation.run.ray_backend import RayBackend

    cfg = parse_config(EvalPipelineConfig, [*FLAGS, *RAY_FLAGS, *extra, f"--output_dir={out}"])
    plan = RunPlan.from_config(cfg.env.tasks(), cfg.eval)
    return list(
        run_evaluation(plan, RayBackend(cfg, rollout_settings(cfg)), journal=EpisodeJournal(out)).tasks
    )


@pytest.mark.slow
def test_ray_results_equal_local_results(ray_instance, local_outcomes, tmp_path):
    tasks = run_on_ray(tmp_path)

    assert [(t.group, t.task_id) for t in tasks] == [("push-v3", 0), ("reach-v3", 0)]  # config order
    assert outcomes(tasks) == local_outcomes
    assert all([e.episode_index for e in t.episodes] == list(range(N_EPISODES)) for t in tasks)
    assert len(journal_lines(tmp_path)) == 2 * N_EPISODES
    # The first episode of each task is filmed by the worker, under the driver's videos dir.
    for task in tasks:
        video = tmp_path / "videos" / f"{task.group}_{task.task_id}" / "eval_episode_0.mp4"
        assert task.video_paths == [str(video)]
        assert video.stat().st_size > 0


@pytest.mark.slow
def test_a_killed_worker_loses_no_episode(ray_instance, local_outcomes, tmp_path, caplog):
    from lerobot.evaluation.run.ray_backend import WORKER_NAME_PREFIX

    earlier_actors = set(ray_instance.util.list_named_actors())
    killed: list[str] = []

    def kill_one_worker_after_the_first_unit() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            journal = tmp_path / JOURNAL_FILENAME
            workers = [
                name
                for name in ray_instance.util.list_named_actors()
                if name.startswith(WORKER_NAME_PREFIX) and name not in earlier_actors
            ]
            if journal.exists() and journal.read_text() and workers:
                ray_instance.kill(ray_instance.get_actor(workers[0]))
                killed.append(workers[0])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_worker_after_the_first_unit, daemon=True)
    killer.start()
    with caplog.at_level(logging.WARNING, logger="lerobot.evaluation.run.ray_backend"):
        tasks = run_on_ray(tmp_path)
    killer.join()

    assert killed, "the run ended before a worker could be killed"
    assert "a Ray worker died" in caplog.text
    assert outcomes(tasks) == local_outcomes
    assert any(e.retries for t in tasks for e in t.episodes)  # the killed unit ran again
    assert len(journal_lines(tmp_path)) == 2 * N_EPISODES  # each episode journaled once


@pytest.mark.slow
def test_resume_runs_only_what_the_local_backend_did_not_finish(
    ray_instance, local_run, local_outcomes, tmp_path
):
    local_records = journal_lines(local_run)
    finished = [r for r in local_records if r["episode_index"] < 2]
    (tmp_path / JOURNAL_FILENAME).write_text("".join(json.dumps(r) + "\n" for r in finished))

    tasks = run_on_ray(tmp_path)

    assert outcomes(tasks) == local_outcomes
    records = journal_lines(tmp_path)
    assert records[: len(finished)] == finished  # kept as they were, not run again
    new = {(r["task_group"], r["task_id"], r["episode_index"]) for r in records[len(finished) :]}
    assert new == {(g, t, e) for g, t, e in local_outcomes if e >= 2}


# --- planning, without Ray -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "resources", "n_units", "expected"),
    [
        ({}, {"CPU": 2}, 10, 1),  # CPUs minus one for the driver
        ({}, {"CPU": 1}, 10, 1),  # at least one
        ({"envs_per_worker": 4}, {"CPU": 17}, 100, 16),  # one CPU per worker, whatever its envs
        ({"gpus_per_worker": 0.5}, {"CPU": 64, "GPU": 3}, 100, 6),  # as many as the GPUs hold
        ({"num_workers": 8}, {"CPU": 2}, 3, 3),  # never more workers than units
    ],
)
def test_number_of_workers(kwargs, resources, n_units, expected):
    from lerobot.evaluation.run.ray_connection import resolve_num_workers

    eval_cfg = EvalConfig(backend="ray", **kwargs)
    assert resolve_num_workers(eval_cfg, resources, n_units) == expected


# --- config errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--eval.backend=slurm", "--eval.backend='slurm': choose one of local, ray"),
        (
            "--eval.num_workers=4",
            "--eval.num_workers=4: only used by the Ray backend; add --eval.backend=ray",
        ),
    ],
)
def test_bad_backend_settings_fail_in_one_line(flag, message, tmp_path, capsys):
    assert main([*FLAGS, flag, f"--output_dir={tmp_path}/never"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)
    assert not (tmp_path / "never").exists()


def test_a_malformed_ray_address_fails_while_parsing(tmp_path, capsys):
    assert main([*FLAGS, *RAY_FLAGS, "--eval.ray_address=head-node", f"--output_dir={tmp_path}/never"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.endswith(
        "--eval.ray_address=head-node: must be auto, local, host:port (the head's GCS, "
        "e.g. 10.0.0.1:6379) or ray://host:port (Ray Client, e.g. ray://10.0.0.1:10001)"
    )
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_a_ray_address_nothing_answers_at_fails_in_one_line(scheme, tmp_path, capsys):
    """Instead of ray.init's retries (twenty, up to a minute each), before any output."""
    address = f"{scheme}127.0.0.1:{free_port()}"
    assert main([*FLAGS, *RAY_FLAGS, f"--eval.ray_address={address}", f"--output_dir={tmp_path}/never"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    port = address.rsplit(":", 1)[1]
    assert last.endswith(
        f"--eval.ray_address={address}: nothing answers at 127.0.0.1:{port} (Connection refused); "
        "start the cluster's head there (ray start --head) or fix the address"
    )
    assert not (tmp_path / "never").exists()


def test_missing_ray_names_the_extra(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a)
    )
    with pytest.raises(
        ConfigError, match=r"^--eval.backend=ray: needs ray \(not installed\); pip install 'lerobot\[ray\]'$"
    ):
        EvalConfig(backend="ray")


def test_batch_size_with_ray_points_to_envs_per_worker():
    with pytest.raises(ConfigError, match=r"^--eval.batch_size=4: .* set --eval.envs_per_worker$"):
        EvalConfig(backend="ray", batch_size=4)


def test_the_ray_driver_checks_the_policy_on_the_cpu(tmp_path):
    # A head node without a GPU drives GPU actors: only the actors build on --policy.device.
    from lerobot.evaluation.evaluate import driver_policy_config
    from lerobot.policies.factory import make_policy

    flags = [*FLAGS, f"--output_dir={tmp_path}", "--policy.device=cuda"]
    on_ray = parse_config(EvalPipelineConfig, [*flags, "--eval.backend=ray"])
    checked = driver_policy_config(on_ray)
    assert checked.device == "cpu" and type(checked) is type(on_ray.policy)
    assert on_ray.policy.device == "cuda"  # what the actors use is unchanged
    assert make_policy(checked, env_cfg=on_ray.env).action_low.shape == (4,)
    local = parse_config(EvalPipelineConfig, flags)
    assert driver_policy_config(local) is local.policy


def test_a_run_may_resume_on_the_other_backend(tmp_path):
    from lerobot.evaluation.store.output_dir import config_differences, encode_config

    local = parse_config(EvalPipelineConfig, [*FLAGS, f"--output_dir={tmp_path}"])
    on_ray = parse_config(
        EvalPipelineConfig, [*FLAGS, *RAY_FLAGS, "--eval.gpus_per_worker=0.5", f"--output_dir={tmp_path}"]
    )
    assert config_differences(encode_config(local), encode_config(on_ray)) == []


@pytest.mark.slow
def test_lerobot_eval_cli_with_the_ray_backend_matches_local(tmp_path):
    from lerobot.scripts.lerobot_eval import main

    common = [
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.obs_type=state",
        "--env.episode_length=10",
        "--eval.n_episodes=3",
        "--eval.max_episodes_rendered=0",
    ]
    assert main([*common, "--eval.batch_size=1", f"--output_dir={tmp_path / 'local'}"]) == 0
    assert (
        main([*common, "--eval.backend=ray", "--eval.num_workers=1", f"--output_dir={tmp_path / 'ray'}"]) == 0
    )
    local, on_ray = (json.loads((tmp_path / d / "eval_info.json").read_text()) for d in ("local", "ray"))
    strip = lambda info: [(e["episode_index"], e["seed"], e["sum_reward"]) for e in info["per_episode"]]  # noqa: E731
    assert strip(on_ray) == strip(local) and on_ray["complete"] is True


@pytest.mark.slow
def test_ray_backend_under_uv_run(tmp_path):
    """`uv run lerobot-eval --eval.backend=ray` (how uv users start commands): Ray's uv
    integration would start every worker in a fresh, empty environment and wait forever."""
    import shutil
    import subprocess

    uv = shutil.which("uv")
    assert uv, "uv must be on PATH (README's set-up command installs it with pip)"
    repo = Path(__file__).resolve().parents[3]
    out = tmp_path / "run"
    command = [
        uv,
        "run",
        "--no-sync",
        "lerobot-eval",
        "--policy.type=random",
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.obs_type=state",
        "--env.episode_length=5",
        "--eval.n_episodes=2",
        "--eval.max_episodes_rendered=0",
        *RAY_FLAGS[:1],
        "--eval.num_workers=1",
        f"--output_dir={out}",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "RAY_ENABLE_UV_RUN_RUNTIME_ENV")}
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=420)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads((out / "eval_info.json").read_text())
    assert info["complete"] is True and info["overall"]["n_episodes"] == 2


def test_a_pool_without_any_live_worker_stops_with_one_line(ray_instance, tmp_path, monkeypatch):
    from lerobot.evaluation.run import ray_backend

    monkeypatch.setattr(ray_backend, "WORKER_START_TIMEOUT_S", 0.0)
    with pytest.raises(
        ray_backend.NoRayWorkersError, match=r"^--eval.backend=ray: no Ray worker has been alive for 0 s"
    ) as err:
        run_on_ray(tmp_path)
    assert "\n" not in str(err.value)
