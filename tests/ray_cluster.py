"""A real multi-node Ray cluster on this machine, started the way users start one.

Each node is its own `ray start --block` process (the head with `--head`, the others with
`--address=<head>`), in its own session, with one CPU and a custom resource that names it
(`node_a`, `node_b`, ...). Each therefore has its own raylet, object store and workers, as
separate machines would. `kill(name)` SIGKILLs a node's whole process tree: its raylet
and every worker on it vanish at once, as when a machine is lost.

Used by the multi-node tests (tests/evaluation/run/test_ray_cluster.py) and
benchmarks/ray_scaling.py. Nothing here imports ray: the nodes are separate processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.remote import free_port

RAY = Path(sys.executable).parent / "ray"
NODE_START_TIMEOUT_S = 180.0
HEALTH_CHECK = {
    "health_check_initial_delay_ms": 1000,
    "health_check_period_ms": 1000,
    "health_check_failure_threshold": 5,
}
"""The head marks a node dead after about 5 s without an answer (Ray's default is 15-30 s);
what the tests wait for after killing one."""
NODE_NAMES = ("node_a", "node_b", "node_c")
RAY_TEMP_DIR = "/tmp/ray"
"""Ray's default temporary directory, where `ray start --head` notes the cluster's address."""


@dataclass
class RayNode:
    name: str
    process: subprocess.Popen
    log: Path


@dataclass
class LocalRayCluster:
    """Nodes of one Ray cluster on 127.0.0.1; `address` is the head's GCS address."""

    root: Path
    port: int = field(default_factory=free_port)
    client_port: int = field(default_factory=free_port)
    nodes: dict[str, RayNode] = field(default_factory=dict)
    health_check: Mapping[str, int] | None = field(default_factory=lambda: dict(HEALTH_CHECK))
    """The head's failure detection (`HEALTH_CHECK`); None keeps Ray's defaults."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def client_address(self) -> str:
        """Ray Client's address (`ray://`), served by the head."""
        return f"ray://127.0.0.1:{self.client_port}"

    def start(self, names: Sequence[str] = NODE_NAMES) -> None:
        """Start the head (`names[0]`), then the others; return once all are in the cluster and
        its Ray Client server takes connections."""
        for name in names:
            self.add_node(name)
        self.wait_for_ray_client()

    def wait_for_ray_client(self, timeout_s: float = NODE_START_TIMEOUT_S) -> None:
        """Until a Ray Client connection succeeds (from another process): the head's client
        server refuses the first ones while its runtime-env agent is still starting."""
        probe = f"import ray; ray.init({self.client_address!r}); ray.shutdown()"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            done = subprocess.run(
                [sys.executable, "-c", probe],
                env=node_environment({}),
                capture_output=True,
                timeout=120,
                check=False,
            )
            if done.returncode == 0:
                return
            time.sleep(2.0)
        raise TimeoutError(f"the head's Ray Client server did not take a connection in {timeout_s:g} s")

    def add_node(self, name: str, env: Mapping[str, str] = {}, python: Path | None = None) -> None:
        """Start one more node (the head if it is the first) and wait until it is in the cluster.

        `env` adds variables to the node's environment, and so to its workers' (a PYTHONPATH
        gives them another lerobot); `python` runs the node, and its workers, with another
        interpreter (one without lerobot).
        """
        self._start_node(name, head=not self.nodes, extra_env=env, python=python)
        self.wait_for_alive(len(self.nodes))

    def _start_node(self, name: str, head: bool, extra_env: Mapping[str, str], python: Path | None) -> None:
        log = self.root / f"{name}.log"
        role = (
            [
                "--head",
                f"--port={self.port}",
                f"--ray-client-server-port={self.client_port}",
                "--include-dashboard=false",
                f"--dashboard-port={free_port()}",
                *([f"--system-config={json.dumps(self.health_check)}"] if self.health_check else []),
            ]
            if head
            else [f"--address={self.address}"]
        )
        ray_command = [str(RAY)] if python is None else [str(python), "-m", "ray.scripts.scripts"]
        command = [
            *ray_command,
            "start",
            "--block",
            *role,
            "--num-cpus=1",
            f"--resources={json.dumps({name: 1})}",
            # Ports that default to fixed numbers would clash between nodes on one machine.
            f"--dashboard-agent-listen-port={free_port()}",
            f"--metrics-export-port={free_port()}",
            "--object-store-memory=150000000",
            "--disable-usage-stats",
        ]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=node_environment(extra_env),
                start_new_session=True,
            )
        self.nodes[name] = RayNode(name, process, log)

    def wait_for_alive(self, n_nodes: int, timeout_s: float = NODE_START_TIMEOUT_S) -> None:
        """Until the head reports `n_nodes` live nodes (asked through `ray status`)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if node.process.poll() is not None:
                    raise RuntimeError(f"ray start for {node.name} exited:\n{node.log.read_text()[-3000:]}")
            if len(self.node_ids()) == n_nodes:
                return
            time.sleep(1.0)
        raise TimeoutError(f"the Ray cluster did not reach {n_nodes} live nodes in {timeout_s:g} s")

    def node_ids(self) -> list[str]:
        """The IDs of the live nodes, as the head reports them (`ray status`)."""
        status = subprocess.run(
            [str(RAY), "status", f"--address={self.address}"],
            capture_output=True,
            text=True,
            env=node_environment({}),
            timeout=60,
            check=False,
        )
        if status.returncode != 0:
            return []
        active = status.stdout.split("Active:", 1)[-1].split("Pending:", 1)[0]
        return [
            line.split("node_", 1)[1] for line in active.splitlines() if line.strip().startswith("1 node_")
        ]

    def kill(self, name: str, wait: bool = True) -> None:
        """SIGKILL the node's raylet and everything it started, at once; with `wait`, return
        once the head has declared it dead."""
        node = self.nodes.pop(name)
        # Workers may sit in process groups of their own: kill the whole tree, all at once.
        for pid in [node.process.pid, *descendants(node.process.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.process.wait(30)
        if wait and self.nodes:
            self.wait_for_alive(len(self.nodes))

    def stop(self) -> None:
        for name in reversed(list(self.nodes)):
            self.kill(name, wait=False)
        # `ray start --head` leaves the head's address here for `ray.init()` to join; a cluster
        # killed without `ray stop` would leave it pointing at nothing.
        current = Path(RAY_TEMP_DIR, "ray_current_cluster")
        with contextlib.suppress(OSError):
            if current.read_text().strip().endswith(f":{self.port}"):
                current.unlink()


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, frontier = [], [pid]
    while frontier:
        below = children.get(frontier.pop(), [])
        found.extend(below)
        frontier.extend(below)
    return found


def node_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment for a node: no RAY_ADDRESS (a node must not join another
    cluster), no saved auth token, and `extra` on top."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS",)}
    env.setdefault("MUJOCO_GL", "egl")
    env["RAY_AUTH_MODE"] = "disabled"
    return {**env, **extra}


@contextlib.contextmanager
def running_cluster(root: Path, names: Sequence[str] = NODE_NAMES) -> Iterator[LocalRayCluster]:
    """A started cluster, stopped afterwards whatever happens."""
    cluster = LocalRayCluster(root)
    try:
        cluster.start(names)
        yield cluster
    finally:
        cluster.stop()
