"""The nodes of a Ray cluster as an evaluation sees them: what code each runs, which one ran a
worker, and which ones the cluster lost.

Checked before the first episode: every live node runs the driver's lerobot (same version, same
code digest), since a node with another install computes other results. Watched during the run:
a node the cluster declares dead is logged once, with the units that went back to the queue
from it, and listed in eval_info.json's provenance (`ray.lost_nodes`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from lerobot.evaluation.run import node_software
from lerobot.evaluation.run.plan import WorkUnit
from lerobot.utils.errors import ConfigError

logger = logging.getLogger("lerobot.evaluation.run.ray_backend")

NODE_PROBE_TIMEOUT_S = 120.0
"""How long the driver waits for every node to say which lerobot it runs. A node that has not
answered by then (busy, or joining) is checked when a worker starts on it."""
NODE_CHECK_S = 2.0
"""How often, while a node whose worker died is still listed alive, the driver asks the cluster
again whether it lost that node."""
NODE_ID_SHOWN = 12
"""Characters of a node ID in log lines (`ray list nodes` accepts a prefix)."""


class NodeSoftwareError(ConfigError):
    """A node runs another lerobot than the driver (or none): one line, before any episode."""


@dataclass(frozen=True)
class NodeSoftware:
    """A node and the lerobot its workers import."""

    node_id: str
    ip: str
    hostname: str
    python: str
    version: str | None
    code: str | None
    """`node_software.code_digest` of its lerobot package; None where it has none."""
    package_dir: str | None

    @classmethod
    def of(cls, node_id: str, ip: str, description: Mapping[str, Any]) -> NodeSoftware:
        return cls(
            node_id=node_id,
            ip=ip,
            hostname=description["hostname"],
            python=description["python"],
            version=description["version"],
            code=description["code"],
            package_dir=description["package_dir"],
        )

    @classmethod
    def of_driver(cls) -> NodeSoftware:
        return cls.of("driver", "", node_software.describe_this_machine())

    @property
    def where(self) -> str:
        """`Ray node 3f2a9c01b7de (10.0.0.7, gpu-node-3)`."""
        return f"Ray node {self.node_id[:NODE_ID_SHOWN]} ({self.ip}, {self.hostname})"

    @property
    def software(self) -> str:
        if self.code is None:
            return f"no lerobot (python {self.python})"
        return f"lerobot {self.version} (code {self.code}) from {self.package_dir}"

    def runs_same_code_as(self, other: NodeSoftware) -> bool:
        return (self.version, self.code) == (other.version, other.code)

    def to_record(self, n_episodes: int, n_workers_died: int) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "ip": self.ip,
            "hostname": self.hostname,
            "lerobot": self.version,
            "code": self.code,
            "n_episodes": n_episodes,
            "n_workers_died": n_workers_died,
        }


def require_same_code(node: NodeSoftware, driver: NodeSoftware) -> None:
    if not node.runs_same_code_as(driver):
        raise NodeSoftwareError(
            f"--eval.backend=ray: {node.where} has {node.software}; the driver runs {driver.software}. "
            "Every node must run the driver's lerobot (same version and code)"
        )


def check_nodes_run_this_code(driver: NodeSoftware) -> None:
    """Ask every live node which lerobot it runs (a zero-CPU task pinned to it); fail in one
    line on the first that differs from the driver's."""
    ray.cloudpickle.register_pickle_by_value(node_software)  # runs where lerobot cannot import
    describe = ray.remote(num_cpus=0, max_retries=0)(node_software.describe_this_machine)
    nodes = {node["NodeID"]: node["NodeManagerAddress"] for node in ray.nodes() if node["Alive"]}
    calls = {
        describe.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
        ).remote(): node_id
        for node_id in nodes
    }
    answered, late = ray.wait(list(calls), num_returns=len(calls), timeout=NODE_PROBE_TIMEOUT_S)
    for ref in answered:
        node_id = calls[ref]
        try:
            description = ray.get(ref)
        except RayError as exc:  # the node went away meanwhile: its workers will never start
            logger.warning("Ray node %s did not answer (%s)", node_id[:NODE_ID_SHOWN], type(exc).__name__)
            continue
        require_same_code(NodeSoftware.of(node_id, nodes[node_id], description), driver)
    for ref in late:
        ray.cancel(ref, force=True)
        logger.warning(
            "Ray node %s did not say which lerobot it runs within %g s; its workers are checked as they start",
            calls[ref][:NODE_ID_SHOWN],
            NODE_PROBE_TIMEOUT_S,
        )


def describe_units(units: Iterable[WorkUnit]) -> str:
    """`push-v3/0 episodes 4, 5; reach-v3/0 episode 2`."""
    parts = []
    for unit in units:
        noun = "episode" if len(unit.episodes) == 1 else "episodes"
        parts.append(f"{unit.task.group}/{unit.task.task_id} {noun} {', '.join(map(str, unit.episodes))}")
    return "; ".join(parts) or "none"


class NodeRegistry:
    """The nodes this run's workers ran on, the episodes each ran, and the nodes it lost."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeSoftware] = {}
        self.episodes: Counter[str] = Counter()
        self.deaths: Counter[str] = Counter()
        """Workers that died on each node: a node lost near the end of a run may not have been
        declared dead by the cluster yet, but its deaths are on record."""
        self.requeued: defaultdict[str, list[WorkUnit]] = defaultdict(list)
        """Units put back in the queue after a worker on the node died, per node."""
        self.suspects: set[str] = set()
        """Nodes on which a worker died, not yet declared dead by the cluster."""
        self.lost: list[str] = []
        self.next_check = 0.0

    def add(self, node: NodeSoftware) -> None:
        self.nodes.setdefault(node.node_id, node)

    def count_episodes(self, node_id: str, n: int) -> None:
        self.episodes[node_id] += n

    def worker_died(self, node_id: str | None, requeued: WorkUnit | None) -> None:
        if node_id is None:
            return
        self.deaths[node_id] += 1
        if requeued is not None:
            self.requeued[node_id].append(requeued)
        self.suspects.add(node_id)
        self.next_check = 0.0  # ask the cluster now

    def log_lost_nodes(self, force: bool = False) -> None:
        """Log each node the cluster has declared dead since the last call, once."""
        if not self.suspects or (not force and time.monotonic() < self.next_check):
            return
        self.next_check = time.monotonic() + NODE_CHECK_S
        alive = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
        for node_id in sorted(self.suspects - alive):
            self.suspects.discard(node_id)
            self.lost.append(node_id)
            logger.warning(
                "%s lost; back in the queue from it: %s",
                self.nodes[node_id].where if node_id in self.nodes else f"Ray node {node_id[:NODE_ID_SHOWN]}",
                describe_units(self.requeued[node_id]),
            )

    def to_record(self, address: str | None) -> dict[str, Any]:
        """eval_info.json's `provenance.ray`: where this invocation's episodes ran."""
        return {
            "address": address,
            "nodes": [
                node.to_record(self.episodes[node_id], self.deaths[node_id])
                for node_id, node in self.nodes.items()
            ],
            "lost_nodes": list(self.lost),
        }
