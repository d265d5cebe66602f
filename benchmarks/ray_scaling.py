"""Episodes/s of the Ray backend (`--eval.backend=ray`) against its number of workers.

One local Ray instance is started first (not timed); then, for each worker count, a fresh run of
the same evaluation on it: `wall` is from the call to the last result, actor start-up (importing
torch and the simulator, building the policy) included; `steady` counts only the episodes that
returned after the first unit, over the time since then (start-up excluded). The local backend
(`--eval.batch_size=1`, one process) is the baseline row. The number of workers that helps is
bounded by the cores: on a 2-core machine the run saturates at 2 workers.

With `--cluster-nodes N`, the same worker counts run again on a real N-node Ray cluster on this
machine (tests/ray_cluster.py: one `ray start` per node, each with its own raylet and one CPU),
joined by address as a multi-node run would be: the `cluster` rows against the `ray` rows (one
Ray instance on the same cores) are what going through a cluster costs per episode.

    python benchmarks/ray_scaling.py --workers 1 2 --episodes 20 --episode-length 200
    python benchmarks/ray_scaling.py --workers 1 --envs-per-worker 2 --no-local
    python benchmarks/ray_scaling.py --workers 2 3 --cluster-nodes 3 --repeats 2
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault(
    "RAY_AUTH_MODE", "disabled"
)  # as tests/conftest.py: one mode for the local Ray and the cluster
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.ray_cluster

import ray  # noqa: E402
from tests.ray_cluster import running_cluster  # noqa: E402

import lerobot.envs  # noqa: E402,F401
import lerobot.policies  # noqa: E402,F401
from lerobot.configs.eval import EvalPipelineConfig  # noqa: E402
from lerobot.configs.parser import parse_config  # noqa: E402
from lerobot.evaluation.evaluate import (  # noqa: E402
    evaluate,
    rollout_settings,
    run_evaluation,  # noqa: E402
)
from lerobot.evaluation.run.plan import RunPlan  # noqa: E402
from lerobot.evaluation.run.ray_backend import RayBackend  # noqa: E402
from lerobot.evaluation.store.journal import EpisodeJournal  # noqa: E402
from lerobot.evaluation.store.provenance import cpu_model  # noqa: E402


class TimedJournal(EpisodeJournal):
    """An episodes.jsonl that also remembers when each episode reached the driver."""

    def __init__(self, output_dir: Path):
        super().__init__(output_dir)
        self.arrivals: list[float] = []

    def append(self, *args, **kwargs) -> None:
        super().append(*args, **kwargs)
        self.arrivals.append(time.perf_counter())


def eval_flags(args: argparse.Namespace, out: Path) -> list[str]:
    return [
        "--policy.type=random",
        "--env.type=metaworld",
        f"--env.task={args.task}",
        f"--env.obs_type={args.obs_type}",
        f"--env.episode_length={args.episode_length}",
        f"--eval.n_episodes={args.episodes}",
        "--eval.max_episodes_rendered=0",
        f"--output_dir={out}",
        *args.extra,
    ]


def run_ray(args: argparse.Namespace, out: Path, workers: int, envs_per_worker: int) -> dict:
    flags = [
        *eval_flags(args, out),
        "--eval.backend=ray",
        f"--eval.num_workers={workers}",
        f"--eval.envs_per_worker={envs_per_worker}",
    ]
    journal = TimedJournal(out)
    started = time.perf_counter()
    cfg = parse_config(EvalPipelineConfig, flags)
    plan = RunPlan.from_config(cfg.env.tasks(), cfg.eval)
    run = run_evaluation(plan, RayBackend(cfg, rollout_settings(cfg)), journal=journal)
    wall = time.perf_counter() - started
    n_episodes = run.overall.n_episodes
    first = journal.arrivals[0]
    # Episodes of the first unit reach the driver together, within milliseconds.
    later = [t for t in journal.arrivals if t - first > 0.05]
    steady = len(later) / (later[-1] - first) if later else float("nan")
    return {"episodes": n_episodes, "wall_s": wall, "episodes_per_s": n_episodes / wall, "steady": steady}


def run_local(args: argparse.Namespace, out: Path) -> dict:
    cfg = parse_config(EvalPipelineConfig, [*eval_flags(args, out), "--eval.batch_size=1"])
    started = time.perf_counter()
    run = evaluate(cfg)
    wall = time.perf_counter() - started
    n_episodes = run.overall.n_episodes
    return {"episodes": n_episodes, "wall_s": wall, "episodes_per_s": n_episodes / wall, "steady": None}


def describe_machine() -> str:
    cpu = cpu_model() or platform.processor() or "?"
    load = f", load average {os.getloadavg()[0]:.1f} at start"
    return f"{os.cpu_count()} cores ({cpu}){load}, Ray {ray.__version__}, Python {platform.python_version()}"


def run_settings(args: argparse.Namespace, settings: list[tuple], tmp: Path, best: dict[tuple, dict]) -> None:
    """Each setting `args.repeats` times, taking turns (so that load from other processes hits
    all of them alike); the fastest run of each into `best`."""
    for repeat, setting in itertools.product(range(args.repeats), settings):
        backend, workers, envs = setting
        out = tmp / f"{backend}{workers}x{envs}_{repeat}"
        result = run_local(args, out) if backend == "local" else run_ray(args, out, workers, envs)
        if setting not in best or result["episodes_per_s"] > best[setting]["episodes_per_s"]:
            best[setting] = result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", default="push-v3,reach-v3")
    parser.add_argument("--obs-type", default="state")
    parser.add_argument("--episodes", type=int, default=10, help="per task")
    parser.add_argument("--episode-length", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--envs-per-worker", type=int, default=1)
    parser.add_argument("--no-local", action="store_true", help="skip the local-backend baseline")
    parser.add_argument(
        "--cluster-nodes", type=int, default=0, help="also run on a cluster of this many local Ray nodes"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="run every setting this often, in turn; keep the best"
    )
    parser.add_argument(
        "extra", nargs="*", help="more lerobot-eval flags after --, e.g. -- --env.fast_render=true"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    print(f"machine: {describe_machine()}")
    print(
        f"tasks {args.task}, {args.episodes} episodes each, {args.episode_length} steps, obs {args.obs_type}"
    )
    settings = [] if args.no_local else [("local", 1, 1)]
    settings += [("ray", workers, args.envs_per_worker) for workers in args.workers]
    clustered = [("cluster", workers, args.envs_per_worker) for workers in args.workers]
    best: dict[tuple, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ray.init(
            address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level=logging.WARNING
        )
        try:
            run_settings(args, settings, Path(tmp), best)
        finally:
            ray.shutdown()
        if args.cluster_nodes:
            names = [f"node_{i}" for i in range(args.cluster_nodes)]
            with running_cluster(Path(tmp), names) as cluster:
                ray.init(address=cluster.address, logging_level=logging.WARNING)
                try:
                    run_settings(args, clustered, Path(tmp), best)
                finally:
                    ray.shutdown()
    print(
        f"{'backend':<8}{'workers':>8}{'envs/w':>8}{'episodes':>10}{'wall s':>9}{'ep/s':>8}{'steady ep/s':>13}"
    )
    for (backend, workers, envs), r in best.items():
        steady = "-" if r["steady"] is None else f"{r['steady']:.2f}"
        print(
            f"{backend:<8}{workers:>8}{envs:>8}{r['episodes']:>10}{r['wall_s']:>9.1f}"
            f"{r['episodes_per_s']:>8.2f}{steady:>13}"
        )
    print_cluster_cost(best)
    return 0


def print_cluster_cost(best: dict[tuple, dict]) -> None:
    """Seconds per episode that going through the cluster adds, per worker count: wall (start-up
    included) and steady."""
    for (backend, workers, envs), on_cluster in best.items():
        single = best.get(("ray", workers, envs))
        if backend != "cluster" or single is None:
            continue
        wall = 1 / on_cluster["episodes_per_s"] - 1 / single["episodes_per_s"]
        steady = 1 / on_cluster["steady"] - 1 / single["steady"]
        print(
            f"cluster against one instance, {workers} workers x {envs} envs: "
            f"{1000 * wall:+.0f} ms per episode (wall), {1000 * steady:+.0f} ms (steady)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
