"""A benchmark's env through `lerobot-eval` against the simulator's own loop, batch by batch: the
machinery `maniskill_speed.py` and `robomimic_speed.py` share (each names its simulator's loop).

For each case and batch size N, each side a fresh process (as `harness_ceiling.py` does for
Meta-World, whose helpers this reuses):
  (a) raw: N forked processes, each building the simulator's own env with the arguments ours
      builds it with and stepping its share of the episodes with random actions: the simulator
      alone, no harness, no policy; its clock starts once every process has imported it;
  (b) ours: `lerobot-eval --policy.type=random` on the same episodes and seeds, batch N as
      lerobot-eval builds it (N=1 in-process; N=2 with async workers), no videos, over
      eval_info.json's eval_s.
Goals: ours / raw >= 0.9 at batch 1, >= 0.8 at batch 2.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import harness_ceiling  # benchmarks/, next to this script
import throughput_act


@dataclass(frozen=True)
class Benchmark:
    """What differs between the benchmarks: the env type, its cases and its raw loop."""

    env_type: str
    task: str
    cases: tuple[str, ...]
    episodes: str
    """Default `--episodes` (`200`, or per case: `state=200,camera=24`)."""
    episode_length: int
    image_size: int
    fixed_settings: dict
    """Config fields every case sets (beside task, obs_type, episode length and camera size)."""
    import_simulator: Callable[[], None]
    """Imports the simulator (before the raw side's clock starts)."""
    raw_episodes: Callable[[dict, list[int]], int]
    """The simulator's own loop over `seeds` with the config's `settings`: its env steps."""


def env_settings(benchmark: Benchmark, args: argparse.Namespace, case: str) -> dict:
    """The config's fields for a case (`state`: no camera; `camera`: the task's cameras at
    `--image-size`), for both sides."""
    settings = {
        "task": args.task,
        "obs_type": "pixels_agent_pos" if case == "camera" else "state",
        "episode_length": args.episode_length[case],
        **benchmark.fixed_settings,
    }
    if case == "camera":
        settings.update(observation_height=args.image_size, observation_width=args.image_size)
    return settings


def raw_worker(benchmark: Benchmark, settings: dict, seeds: list[int], imported, queue) -> None:
    benchmark.import_simulator()
    imported.wait()  # the clock starts once every process has imported the simulator
    queue.put(benchmark.raw_episodes(settings, seeds))


def run_raw_child(benchmark: Benchmark, args: argparse.Namespace) -> None:
    settings, batch, episodes = json.loads(args.child_raw)
    seeds = [args.seed + e for e in range(episodes)]
    context = mp.get_context("fork")  # children of this process: their CPU time is counted
    queue, imported = context.Queue(), context.Barrier(batch + 1)
    procs = [
        context.Process(target=raw_worker, args=(benchmark, settings, seeds[i::batch], imported, queue))
        for i in range(batch)
    ]
    for proc in procs:
        proc.start()
    imported.wait()
    harness_ceiling.write_processes_result(args.json, procs, queue, time.perf_counter())


def run_raw(benchmark: Benchmark, args: argparse.Namespace, case: str, batch: int, out: Path) -> dict:
    spec = json.dumps([env_settings(benchmark, args, case), batch, args.episodes[case]])
    child = [sys.executable, sys.argv[0], f"--child-raw={spec}", f"--json={out}", f"--seed={args.seed}"]
    subprocess.run(child, check=True)
    return json.loads(out.read_text())


def run_ours(benchmark: Benchmark, args: argparse.Namespace, case: str, batch: int, out: Path) -> dict:
    flags = [
        "--policy.type=random",
        f"--env.type={benchmark.env_type}",
        *(f"--env.{key}={value}" for key, value in env_settings(benchmark, args, case).items()),
        f"--eval.n_episodes={args.episodes[case]}",
        f"--eval.batch_size={batch}",
        "--eval.max_episodes_rendered=0",
        f"--seed={args.seed}",
        f"--output_dir={out}",
    ]
    result = throughput_act.run_cli(sys.executable, "lerobot.scripts.lerobot_eval", flags, out, 0)
    return {**result, "env_steps": throughput_act.episode_steps(out)}


def report(case: str, batch: int, raw: dict, ours: dict) -> dict:
    row = {
        "case": case,
        "batch": batch,
        "raw_steps_per_s": harness_ceiling.rate(raw),
        "ours_steps_per_s": harness_ceiling.rate(ours),
        "ratio": harness_ceiling.rate(ours) / harness_ceiling.rate(raw),
        "raw_cpu_ms_per_step": harness_ceiling.cpu_ms_per_step(raw),
        "ours_cpu_ms_per_step": harness_ceiling.cpu_ms_per_step(ours),
        "env_steps": ours["env_steps"],
    }
    print(
        f"{case:>7} b{batch}  raw {row['raw_steps_per_s']:8.1f}  ours {row['ours_steps_per_s']:8.1f} "
        f"env-steps/s  ratio {row['ratio']:.2f}  CPU ms/step {row['raw_cpu_ms_per_step']:.2f} / "
        f"{row['ours_cpu_ms_per_step']:.2f}  ({row['env_steps']} steps, load {throughput_act.load_average()})",
        flush=True,
    )
    return row


def per_case(cases: tuple[str, ...]) -> Callable[[str], dict[str, int]]:
    """A parser of `200` (every case) or `state=200,camera=20`."""

    def parse(text: str) -> dict[str, int]:
        if "=" not in text:
            return dict.fromkeys(cases, int(text))
        return {case: int(value) for case, value in (item.split("=") for item in text.split(","))}

    return parse


def main(benchmark: Benchmark, description: str) -> int:
    parse_per_case = per_case(benchmark.cases)
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default=",".join(benchmark.cases))
    parser.add_argument("--batches", default="1,2")
    parser.add_argument("--task", default=benchmark.task)
    parser.add_argument("--episodes", type=parse_per_case, default=parse_per_case(benchmark.episodes))
    parser.add_argument(
        "--episode-length", type=parse_per_case, default=parse_per_case(str(benchmark.episode_length))
    )
    parser.add_argument(
        "--image-size", type=int, default=benchmark.image_size, help="camera height and width"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="alternate the two sides, keep each one's best"
    )
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--child-raw", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_raw:
        run_raw_child(benchmark, args)
        return 0
    cases = harness_ceiling.check_cases(parser, args.cases, benchmark.cases)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # both sides import from cached bytecode
    print(f"machine: {os.cpu_count()} cores, load {throughput_act.load_average()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        warm_up = argparse.Namespace(
            **{**vars(args), "episodes": parse_per_case("1"), "episode_length": parse_per_case("5")}
        )
        for case in cases:  # bytecode and shader caches written before anything is timed
            run_ours(benchmark, warm_up, case, 1, Path(tmp) / f"{case}-warm-up")
        for case in cases:
            for batch in (int(b) for b in args.batches.split(",")):
                raws, ours = [], []
                for repeat in range(args.repeats):
                    tag = f"{case}-b{batch}-{repeat}"
                    raws.append(run_raw(benchmark, args, case, batch, Path(tmp) / f"{tag}.raw.json"))
                    ours.append(run_ours(benchmark, args, case, batch, Path(tmp) / f"{tag}-ours"))
                rate = harness_ceiling.rate
                rows.append(report(case, batch, max(raws, key=rate), max(ours, key=rate)))
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2, default=str))
    return 0
