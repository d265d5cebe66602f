"""What losing a node costs a Ray run, with Ray's own failure detection.

A three-node Ray cluster on this machine (tests/ray_cluster.py; Ray's default health checks,
unlike the tests, which shorten them) runs the same Meta-World evaluation twice with one
worker per node: undisturbed, then with one worker node's whole process tree SIGKILLed at the
first unit sent to it after some episodes have finished. Reported: how long after the kill the
driver saw its worker die and when it logged the node as lost, how many episodes ran again,
the wall time against the undisturbed run, and whether every episode's outcome is the same.

    python benchmarks/ray_node_loss.py --episodes 60 --episode-length 200
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault(
    "RAY_AUTH_MODE", "disabled"
)  # as tests/conftest.py: one mode for the local Ray and the cluster
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.*

from tests.evaluation.run.ray_runs import journal_lines, outcomes_in  # noqa: E402
from tests.ray_cluster import LocalRayCluster  # noqa: E402

from lerobot.scripts.lerobot_eval import main as lerobot_eval  # noqa: E402

LOGGER = "lerobot.evaluation.run.ray_backend"
VICTIM = "node_c"


class NodeKiller(logging.Handler):
    """Kills VICTIM at the first unit sent to it once `out` holds an episode; timestamps the
    driver's log lines about it."""

    def __init__(self, cluster: LocalRayCluster, out: Path, victim_id: str):
        super().__init__(level=logging.DEBUG)
        self.cluster, self.out, self.victim_id = cluster, out, victim_id
        self.killed_at: float | None = None
        self.died_at: float | None = None
        self.lost_at: float | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if (
            self.killed_at is None
            and f" to Ray node {self.victim_id[:12]}" in message
            and journal_lines(self.out)
        ):
            self.cluster.kill(VICTIM, wait=False)
            self.killed_at = time.monotonic()
        elif message.startswith("a Ray worker died") and self.died_at is None:
            self.died_at = time.monotonic()
        elif " lost; back in the queue" in message and self.lost_at is None:
            self.lost_at = time.monotonic()


def evaluate(
    args: argparse.Namespace, cluster: LocalRayCluster, out: Path, handler: logging.Handler | None
) -> float:
    flags = [
        "--policy.type=random",
        "--env.type=metaworld",
        f"--env.task={args.task}",
        "--env.obs_type=state",
        f"--env.episode_length={args.episode_length}",
        f"--eval.n_episodes={args.episodes}",
        "--eval.max_episodes_rendered=0",
        "--eval.backend=ray",
        f"--eval.ray_address={cluster.address}",
        "--eval.num_workers=3",
        f"--output_dir={out}",
    ]
    logger = logging.getLogger(LOGGER)
    if handler is not None:  # the killer reads the driver's DEBUG lines; the console does not
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
    started = time.monotonic()
    try:
        assert lerobot_eval(flags) == 0
    finally:
        if handler is not None:
            logger.removeHandler(handler)
            logger.setLevel(logging.NOTSET)
            logger.propagate = True
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="push-v3,reach-v3")
    parser.add_argument("--episodes", type=int, default=10, help="per task")
    parser.add_argument("--episode-length", type=int, default=200)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        cluster = LocalRayCluster(Path(tmp), health_check=None)
        try:
            cluster.start(("node_a", "node_b"))
            quiet_ids = set(cluster.node_ids())
            cluster.add_node(VICTIM)
            victim = (set(cluster.node_ids()) - quiet_ids).pop()
            undisturbed = evaluate(args, cluster, Path(tmp) / "undisturbed", None)
            out = Path(tmp) / "node_lost"
            killer = NodeKiller(cluster, out, victim)
            disturbed = evaluate(args, cluster, out, killer)
        finally:
            cluster.stop()
        records = journal_lines(out)
        info = json.loads((out / "eval_info.json").read_text())
        same = outcomes_in(out) == outcomes_in(Path(tmp) / "undisturbed")
    n = len(records)
    print(f"{args.task}, {args.episodes} episodes per task, {args.episode_length} steps, 3 nodes x 1 worker")
    print(
        f"undisturbed: {undisturbed:.1f} s; one node killed: {disturbed:.1f} s ({disturbed / undisturbed:.2f}x)"
    )
    if killer.killed_at is None:
        print("the victim took no unit after the first episodes: nothing was killed")
        return 1
    since = lambda t: "never" if t is None else f"{t - killer.killed_at:.1f} s"  # noqa: E731
    print(
        f"worker death seen {since(killer.died_at)} after the kill; node logged lost {since(killer.lost_at)} after"
    )
    print(
        f"episodes: {n} journaled, {len({(r['task_group'], r['task_id'], r['episode_index']) for r in records})} distinct, "
        f"{sum(1 for r in records if r['retries'])} ran again; lost_nodes {len(info['provenance']['ray']['lost_nodes'])}; "
        f"workers died {sum(node['n_workers_died'] for node in info['provenance']['ray']['nodes'])}; "
        f"outcomes equal to the undisturbed run: {same}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
