"""Training data loading alone: samples/s of our training DataLoader against LeRobot 0.6.1's.

    .venv/bin/python benchmarks/train_loader.py --lerobot-python .venv-lerobot-ref/bin/python \
        --dataset /tmp/bench_reach256 --workers 0 2

What a GPU box asks of training data is that it comes faster than the GPU consumes it; on a
CPU-only machine the model's forward and backward hide that (train_throughput.py measures whole
steps). Here each side builds the DataLoader its `lerobot-train` builds for a policy's sample
windows (ACT: the frame and 100 actions; Diffusion: 2 frames and 16 actions), with the same
batch size and worker settings (LeRobot's defaults: prefetch 4, persistent workers, spawn),
and only iterates it: samples/s over `--batches` batches after the first (worker start-up and
our one-time frame decoding left out). LeRobot decodes its frames per sample with PyAV (as on
the GPU machine); ours reads them from its memory-mapped frame cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

# (observation offsets, action offsets) in frames: LeRobot's delta indices for its defaults.
WINDOWS = {"act": ([0], list(range(100))), "diffusion": ([-1, 0], list(range(-1, 15)))}

# Both sides end alike: `loader` iterated, its first batch (worker start-up) left out.
TIMED = """
it = iter(loader)
next(it)
started = time.perf_counter()
for _ in range(n):
    next(it)
print(json.dumps({"samples_per_s": n * batch / (time.perf_counter() - started)}))
"""

OURS = """
import json, sys, time
from lerobot.datasets.reader import load_episodes
from lerobot.training.batches import EpochOrder, LoaderSettings, StepBatches, Windows, make_loader

root, obs, act, batch, workers, n = json.loads(sys.argv[1])
frames = load_episodes(root)
keys = list(frames.images) + [k for k in frames.vectors if k.startswith("observation.")]
windows = Windows(frames, keys, obs, act)
batches = StepBatches(EpochOrder(frames, seed=0), batch, 0, n + 1)
loader = make_loader(windows, batches, LoaderSettings(num_workers=workers))
"""

THEIRS = """
import json, sys, time
import torch
from lerobot.datasets.lerobot_dataset import LeRobotDataset

root, obs, act, batch, workers, n = json.loads(sys.argv[1])
meta = json.load(open(f"{root}/meta/info.json"))
fps = meta["fps"]
deltas = {"action": [o / fps for o in act]}
if obs != [0]:  # LeRobot's ACT reads the current frame alone: no observation deltas
    deltas.update({k: [o / fps for o in obs] for k in meta["features"] if k.startswith("observation.")})
dataset = LeRobotDataset("local/bench", root=root, delta_timestamps=deltas, video_backend="pyav")
extra = dict(prefetch_factor=4, persistent_workers=True, multiprocessing_context="spawn") if workers else {}
loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers, **extra)
"""


def samples_per_s(python: str, code: str, spec: list, env: dict[str, str]) -> float:
    done = subprocess.run([python, "-c", code, json.dumps(spec)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{python} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["samples_per_s"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, required=True, help="a LeRobot v3 dataset with a camera")
    parser.add_argument("--lerobot-python", required=True)
    parser.add_argument("--lerobot-pythonpath", help="PYTHONPATH of LeRobot's runs")
    parser.add_argument("--policies", nargs="+", default=["act", "diffusion"], choices=sorted(WINDOWS))
    parser.add_argument("--workers", nargs="+", type=int, default=[0, 2])
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--batches", type=int, default=50)
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    their_env = {**env, "PYTHONPATH": args.lerobot_pythonpath} if args.lerobot_pythonpath else env
    root = str(args.dataset.resolve())
    print(f"dataset {root}, batch {args.batch_size}, {args.batches} batches after the first")
    print("| policy | workers | ours samples/s | LeRobot 0.6.1 samples/s | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for policy in args.policies:
        for workers in args.workers:
            spec = [root, *WINDOWS[policy], args.batch_size, workers, args.batches]
            mine = samples_per_s(sys.executable, OURS + TIMED, spec, env)
            theirs = samples_per_s(args.lerobot_python, THEIRS + TIMED, spec, their_env)
            print(f"| {policy} | {workers} | {mine:.0f} | {theirs:.0f} | {mine / theirs:.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
