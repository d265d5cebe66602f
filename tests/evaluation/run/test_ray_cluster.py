"""The Ray backend on a real three-node Ray cluster on this machine (tests/ray_cluster.py): one
CPU and one raylet per node, started with `ray start` as on separate machines.

Per-episode outcomes are compared with a local run of the same evaluation, whatever ran where,
which node was lost, or when the driver was killed and the run resumed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import lerobot
from lerobot.evaluation.run import ray_backend
from lerobot.evaluation.run.ray_nodes import NODE_ID_SHOWN
from lerobot.scripts.lerobot_eval import main
from tests.evaluation.run.ray_runs import FLAGS, N_EPISODES, journal_lines, outcomes_in, run_locally
from tests.ray_cluster import NODE_NAMES, running_cluster
from tests.remote import free_port, serving_process

# With the other Ray tests on one xdist worker, one after the other: in a group of their own,
# three nodes ran beside a local Ray instance and the other worker's simulators on 2 cores, and
# the suite took 25.8 min (fresh venv) against 19.7 with one group (warm venv): one run each.
pytestmark = [pytest.mark.xdist_group("ray"), pytest.mark.slow]

N_TOTAL = 2 * N_EPISODES
BIN = Path(sys.executable).parent
LOGGER = "lerobot.evaluation.run.ray_backend"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("cluster"), NODE_NAMES) as started:
        yield started


@pytest.fixture(scope="module")
def local_outcomes(tmp_path_factory):
    found = outcomes_in(run_locally(tmp_path_factory.mktemp("local") / "run"))
    assert len(found) == N_TOTAL
    return found


def cluster_flags(address: str, n_workers: int) -> list[str]:
    return [*FLAGS, "--eval.backend=ray", f"--eval.ray_address={address}", f"--eval.num_workers={n_workers}"]


def nodes_of(out: Path) -> list[str]:
    """The node that ran each journaled episode."""
    return [record["node"] for record in journal_lines(out)]


def test_every_node_runs_units_and_results_equal_local(cluster, local_outcomes, tmp_path, monkeypatch):
    """Driven through Ray Client (`ray://`), from outside the cluster as far as Ray knows; the
    other tests join by the head's GCS address."""
    monkeypatch.setattr(ray_backend, "READY_BEFORE_DISPATCH", 3)  # every node's worker takes work
    out = tmp_path / "run"

    assert main([*cluster_flags(cluster.client_address, 3), f"--output_dir={out}"]) == 0

    assert outcomes_in(out) == local_outcomes
    nodes = nodes_of(out)
    assert len(nodes) == N_TOTAL and len(set(nodes)) == 3  # each episode once; every node ran some
    ray_block = json.loads((out / "eval_info.json").read_text())["provenance"]["ray"]
    assert ray_block["address"] == cluster.client_address and ray_block["lost_nodes"] == []
    listed = {node["node_id"]: node for node in ray_block["nodes"]}
    assert set(listed) == set(nodes)
    assert {node_id: listed[node_id]["n_episodes"] for node_id in listed} == {
        n: nodes.count(n) for n in listed
    }
    assert len({node["ip"] for node in listed.values()}) == 1  # one machine
    assert all(node["lerobot"] == lerobot.__version__ for node in listed.values())


def test_a_lost_node_loses_no_episode(cluster, local_outcomes, tmp_path, monkeypatch):
    """Mid-run, a fourth node joins and takes a unit; its raylet and workers are killed while
    that unit runs on it. The run ends on the three others.

    Made deterministic from inside the driver's log calls (the driver waits while they run):
    once some episodes are journaled, node_d joins and the driver waits until its worker is
    ready, so units are still queued for it; the first unit sent to it is the moment it dies."""
    monkeypatch.setattr(ray_backend, "READY_BEFORE_DISPATCH", 3)  # start without node_d's worker
    monkeypatch.setattr(ray_backend, "UNIT_WAVES", 1)  # 12 one-episode units
    out = tmp_path / "run"
    logged: list[str] = []
    killed_with: list[str] = []

    class AddThenKillNodeD(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record.getMessage())
            unit, _, node = logged[-1].partition(" to Ray node ")
            if not node or killed_with:
                return
            if "node_d" not in cluster.nodes and journal_lines(out):
                cluster.add_node("node_d")
                wait_until_every_worker_is_ready()
            elif "node_d" in cluster.nodes and node.startswith(
                node_id_with_resource("node_d")[:NODE_ID_SHOWN]
            ):
                killed_with.append(unit)
                cluster.kill("node_d")  # returns once the head has declared it dead

    handler = AddThenKillNodeD(level=logging.DEBUG)
    logging.getLogger(LOGGER).addHandler(handler)
    try:
        logging.getLogger(LOGGER).setLevel(logging.DEBUG)
        assert main([*cluster_flags(cluster.address, 4), f"--output_dir={out}"]) == 0
    finally:
        logging.getLogger(LOGGER).removeHandler(handler)
        logging.getLogger(LOGGER).setLevel(logging.NOTSET)
        if "node_d" in cluster.nodes:
            cluster.kill("node_d")

    assert killed_with, "node_d took no unit after the first episodes finished"
    records = journal_lines(out)
    keys = [(r["task_group"], r["task_id"], r["episode_index"]) for r in records]
    assert len(keys) == N_TOTAL and len(set(keys)) == N_TOTAL  # every episode exactly once
    assert outcomes_in(out) == local_outcomes
    ray_block = json.loads((out / "eval_info.json").read_text())["provenance"]["ray"]
    lost = ray_block["lost_nodes"]
    assert len(lost) == 1 and lost[0] not in {r["node"] for r in records if r["retries"]}
    assert any(r["retries"] for r in records)  # the lost unit ran again, elsewhere
    ip = next(node["ip"] for node in ray_block["nodes"] if node["node_id"] == lost[0])
    lost_lines = [line for line in logged if " lost; " in line]
    assert len(lost_lines) == 1 and lost_lines[0].startswith(f"Ray node {lost[0][:NODE_ID_SHOWN]} ({ip}, ")
    assert lost_lines[0].endswith(f"lost; back in the queue from it: {killed_with[0]}")


def wait_until_every_worker_is_ready() -> None:
    """Through the driver's Ray connection: each of this run's workers answers `ready`."""
    import ray

    names = [n for n in ray.util.list_named_actors() if n.startswith(ray_backend.WORKER_NAME_PREFIX)]
    ray.get([ray.get_actor(name).ready.remote() for name in names], timeout=300)


def node_id_with_resource(resource: str) -> str:
    """The live node that offers `resource` (asked through the driver's Ray connection)."""
    import ray

    return next(n["NodeID"] for n in ray.nodes() if n["Alive"] and resource in n["Resources"])


def test_a_killed_driver_resumes_from_its_journal(cluster, local_outcomes, tmp_path):
    """kill -9 the lerobot-eval process mid-run with the cluster up; the same command with
    --eval.resume=true runs only what is missing."""
    out = tmp_path / "run"
    flags = [*cluster_flags(cluster.address, 3), f"--output_dir={out}"]
    command = [str(BIN / "lerobot-eval"), *flags]
    driver = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 300
        while len(journal_lines(out)) < 3 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(driver.pid, signal.SIGKILL)
    finally:
        driver.wait(30)
    before = journal_lines(out)
    assert 3 <= len(before) < N_TOTAL, "the driver should be killed mid-run"

    assert main([*flags, "--eval.resume=true"]) == 0

    after = journal_lines(out)
    assert after[: len(before)] == before  # kept, not run again
    keys = [(r["task_group"], r["task_id"], r["episode_index"]) for r in after]
    assert len(keys) == N_TOTAL and len(set(keys)) == N_TOTAL
    assert outcomes_in(out) == local_outcomes


def test_workers_share_one_policy_server(cluster, tmp_path, monkeypatch):
    """Simulation on the cluster's nodes, the policy in one `lerobot-serve-policy` that batches
    the workers' requests: the same results as the policy in the evaluating process."""
    expert = [
        "--env.type=metaworld",
        "--env.task=reach-v3",
        "--env.obs_type=state",
        "--env.episode_length=30",
    ]
    common = [*expert, "--eval.n_episodes=6", "--eval.max_episodes_rendered=0"]
    local = run_locally(tmp_path / "local", ["--policy.type=metaworld_expert", *common])
    monkeypatch.setattr(ray_backend, "READY_BEFORE_DISPATCH", 3)  # one unit on each node
    port, log = free_port(), tmp_path / "server.log"
    server_flags = ["--max_batch=3", "--batch_timeout_ms=100"]
    with serving_process(None, port, "INFO", ["--policy.type=metaworld_expert"], server_flags, log):
        out = tmp_path / "remote"
        flags = ["--policy.type=websocket", f"--policy.port={port}", *common, "--eval.backend=ray"]
        ray_flags = [f"--eval.ray_address={cluster.address}", "--eval.num_workers=3"]
        assert main([*flags, *ray_flags, f"--output_dir={out}"]) == 0
    assert outcomes_in(out) == outcomes_in(local)
    assert len(set(nodes_of(out))) == 3
    stopped = [line for line in log.read_text().splitlines() if "policy server stopped" in line]
    most_clients = int(stopped[-1].split("up to ")[1].split()[0])
    assert most_clients >= 2, stopped  # requests of several workers went through one policy call


@pytest.mark.parametrize("install", ["other_code", "no_lerobot"])
def test_a_node_with_other_code_stops_the_run_before_any_episode(cluster, install, tmp_path, capsys):
    env, python = {}, None
    if install == "other_code":  # a copy of this lerobot, one comment apart
        copy = tmp_path / "other" / "lerobot"
        shutil.copytree(Path(lerobot.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
        with open(copy / "__init__.py", "a") as f:
            f.write("# another build\n")
        env = {"PYTHONPATH": str(copy.parent)}
    else:  # an interpreter that sees this venv's packages but not lerobot's editable install
        python = _python_without_lerobot(tmp_path / "venv")
    cluster.add_node("node_x", env=env, python=python)
    try:
        out = tmp_path / "run"
        assert main([*cluster_flags(cluster.address, 3), f"--output_dir={out}"]) == 2
    finally:
        cluster.kill("node_x")
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--eval.backend=ray: Ray node " in last and f", {socket.gethostname()}) has " in last
    expected = "has lerobot 0.1.0 (code " if install == "other_code" else "has no lerobot (python "
    assert expected in last and "; the driver runs lerobot 0.1.0 (code " in last
    if install == "other_code":
        assert f"from {copy};" in last
    assert not journal_lines(out)


def _python_without_lerobot(venv: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    this_site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p, "ray").is_dir())
    # A path in a .pth file is added, but the .pth files inside it are not read.
    (site / "packages.pth").write_text(f"{this_site}\n")
    return venv / "bin" / "python"
