"""Training throughput: samples/s of our `lerobot-train` against LeRobot 0.6.1's on one dataset.

    .venv/bin/python benchmarks/train_throughput.py --lerobot-python .venv-lerobot-ref/bin/python
    .venv/bin/python benchmarks/train_throughput.py --dataset data/reach --policies act --workers 0 4

Both programs train the same policy type on the same dataset with the same flags (batch size,
data loader workers, no evaluation, no checkpoint, no pretrained backbone: nothing is fetched).
Each runs twice, for `--short` and `--long` steps; samples/s is (long - short) x batch over the
difference of their wall times, which leaves out start-up, dataset opening and our one-time
frame decoding (a warm-up run fills our frame cache first). Without --dataset, Meta-World
reach-v3 expert episodes are recorded first with lerobot-record-sim (LeRobot reads them).
Prints one row per policy and worker count: the two rates and their ratio.

On a machine where neither program is installed as a command (the GPU check's, see
gpu_train_check.sh), `--ours` gives our command line and `--lerobot-pythonpath` the folder that
holds LeRobot 0.6.1, so that both `lerobot` packages run from one interpreter.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SMALL_POLICY = {
    "act": ["--policy.pretrained_backbone_weights=null"],
    "diffusion": ["--policy.pretrained_backbone_weights=null"],
}


@dataclass(frozen=True)
class Rate:
    samples_per_s: float
    short_s: float
    long_s: float


def record_dataset(root: Path, episodes: int, size: int, length: int) -> None:
    subprocess.run(
        [
            str(BIN / "lerobot-record-sim"),
            "--env.type=metaworld",
            "--env.task=reach-v3",
            "--policy.type=metaworld_expert",
            f"--n_episodes={episodes}",
            f"--env.observation_height={size}",
            f"--env.observation_width={size}",
            f"--env.episode_length={length}",
            f"--root={root}",
            "--log_level=WARNING",
        ],
        check=True,
    )


def train_command(program: list[str], policy: str, dataset: Path, out: Path, steps: int, args) -> list[str]:
    return [
        *program,
        f"--policy.type={policy}",
        f"--dataset.repo_id=local/{dataset.name}",
        f"--dataset.root={dataset}",
        f"--output_dir={out}",
        f"--steps={steps}",
        f"--batch_size={args.batch_size}",
        f"--num_workers={args.current_workers}",
        f"--log_freq={max(steps, 1)}",
        "--env_eval_freq=0",
        "--save_checkpoint=false",
        "--policy.push_to_hub=false",
        f"--policy.device={args.device}",
        "--wandb.enable=false",
        *SMALL_POLICY[policy],
        *args.flag,
    ]


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command[:3])} ...")
    return elapsed


def rate(program: list[str], policy: str, dataset: Path, scratch: Path, args, env: dict[str, str]) -> Rate:
    times = []
    for steps in (args.short, args.long):
        out = scratch / f"{policy}-{steps}-{time.monotonic_ns()}"
        times.append(timed(train_command(program, policy, dataset, out, steps, args), env))
        shutil.rmtree(out, ignore_errors=True)
    samples = (args.long - args.short) * args.batch_size
    return Rate(samples / max(times[1] - times[0], 1e-9), *times)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lerobot-python", default=os.environ.get("LEROBOT_0_6_1_PYTHON"))
    parser.add_argument(
        "--lerobot-pythonpath", help="PYTHONPATH of LeRobot's runs (where it is not --lerobot-python's own)"
    )
    parser.add_argument("--ours", help="our command line (default: this environment's lerobot-train)")
    parser.add_argument("--flag", action="append", default=[], help="a flag for both programs (repeatable)")
    parser.add_argument("--dataset", type=Path, help="a LeRobot v3 dataset; default: record one")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--size", type=int, default=128, help="camera height and width when recording")
    parser.add_argument("--episode-length", type=int, default=100)
    parser.add_argument("--policies", nargs="+", default=["act", "diffusion"], choices=sorted(SMALL_POLICY))
    parser.add_argument("--workers", nargs="+", type=int, default=[0, 2])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--short", type=int, default=5)
    parser.add_argument("--long", type=int, default=25)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    their_env = {**env, "PYTHONPATH": args.lerobot_pythonpath} if args.lerobot_pythonpath else env
    ours = shlex.split(args.ours) if args.ours else [str(BIN / "lerobot-train")]
    theirs = [args.lerobot_python, "-m", "lerobot.scripts.lerobot_train"] if args.lerobot_python else None
    with tempfile.TemporaryDirectory(prefix="train-throughput-") as tmp:
        scratch = Path(tmp)
        dataset = args.dataset
        if dataset is None:
            dataset = scratch / "reach"
            record_dataset(dataset, args.episodes, args.size, args.episode_length)
        print(f"dataset {dataset}, batch {args.batch_size}, steps {args.short}->{args.long}, {args.device}")
        print("| policy | workers | ours samples/s | LeRobot 0.6.1 samples/s | ratio |")
        print("| --- | --- | --- | --- | --- |")
        for policy in args.policies:
            for workers in args.workers:
                args.current_workers = workers
                args_warm = argparse.Namespace(**{**vars(args), "short": 1, "long": 1})
                timed(train_command(ours, policy, dataset, scratch / "warm", 1, args_warm), env)
                shutil.rmtree(scratch / "warm", ignore_errors=True)
                mine = rate(ours, policy, dataset, scratch, args, env)
                other = rate(theirs, policy, dataset, scratch, args, their_env) if theirs else None
                cells = [f"{mine.samples_per_s:.1f}"]
                cells += (
                    [f"{other.samples_per_s:.1f}", f"{mine.samples_per_s / other.samples_per_s:.2f}x"]
                    if other
                    else ["-", "-"]
                )
                print(f"| {policy} | {workers} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
