"""ManiSkill3 through `lerobot-eval` against ManiSkill's own loop, batch 1 and 2 (PickCube-v1).

For each case and batch size N, each side a fresh process (as `harness_ceiling.py` does for
Meta-World, whose helpers this reuses):
  (a) raw: N forked processes, each `gym.make(task, **ManiskillEnv(...).make_kwargs())`, the
      scene, controller, cameras and step limit ours builds, stepping its share of the episodes
      with actions drawn from the action space: ManiSkill alone, no harness, no policy;
  (b) ours: `lerobot-eval --policy.type=random --env.type=maniskill` on the same episodes and
      seeds, batch N as lerobot-eval builds it (N=1 in-process; N=2 with async workers), no
      videos, over eval_info.json's eval_s.
Both include building the scenes, not importing ManiSkill (~10 s on a 2-core VM): the raw
clock starts once every process has imported it, as eval_s starts after lerobot-eval's imports
(a batch-2 worker's own import, where it overlaps nothing, is in ours). Cases: `state` (--env.obs_type=state,
nothing rendered) and `camera` (the task's base_camera at `--image-size`, rendered every step
by lavapipe where there is no GPU). Goals: ours / raw >= 0.9 at batch 1, >= 0.8 at batch 2.

    python benchmarks/maniskill_speed.py --cases state,camera --batches 1,2
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
from pathlib import Path

import harness_ceiling  # benchmarks/, next to this script
import throughput_act

CASES = ("state", "camera")


def env_settings(args: argparse.Namespace, case: str) -> dict:
    """The ManiSkill config's fields, for both sides."""
    settings = {
        "task": args.task,
        "obs_type": "pixels_agent_pos" if case == "camera" else "state",
        "episode_length": args.episode_length[case],
        "sim_backend": "physx_cpu",
    }
    if case == "camera":
        settings.update(observation_height=args.image_size, observation_width=args.image_size)
    return settings


# --- (a) ManiSkill's own loop (a child process: `--child-raw`) -------------------------------
def raw_worker(settings: dict, seeds: list[int], imported, queue) -> None:
    import gymnasium as gym
    import mani_skill.envs  # noqa: F401  (registers the tasks)

    from lerobot.envs.maniskill import ManiskillEnvConfig
    from lerobot.envs.maniskill.env import ManiskillEnv

    imported.wait()  # the clock starts once every process has imported ManiSkill
    cfg = ManiskillEnvConfig(**settings)
    kwargs = ManiskillEnv(**cfg.env_kwargs(settings["task"])).make_kwargs()
    env = gym.make(settings["task"], **kwargs)
    env.action_space.seed(seeds[0] if seeds else 0)
    steps = 0
    for seed in seeds:
        env.reset(seed=seed)
        for _ in range(settings["episode_length"]):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            steps += 1
            if bool(terminated) or bool(truncated):
                break
    env.close()
    queue.put(steps)


def run_raw_child(args: argparse.Namespace) -> None:
    settings, batch, episodes = json.loads(args.child_raw)
    seeds = [args.seed + e for e in range(episodes)]
    context = mp.get_context("fork")  # children of this process: their CPU time is counted
    queue, imported = context.Queue(), context.Barrier(batch + 1)
    procs = [
        context.Process(target=raw_worker, args=(settings, seeds[i::batch], imported, queue))
        for i in range(batch)
    ]
    for proc in procs:
        proc.start()
    imported.wait()
    harness_ceiling.write_processes_result(args.json, procs, queue, time.perf_counter())


def run_raw(args: argparse.Namespace, case: str, batch: int, out: Path) -> dict:
    spec = json.dumps([env_settings(args, case), batch, args.episodes[case]])
    child = [
        sys.executable,
        __file__,
        f"--child-raw={spec}",
        f"--json={out}",
        f"--seed={args.seed}",
    ]
    subprocess.run(child, check=True)
    return json.loads(out.read_text())


# --- (b) lerobot-eval ------------------------------------------------------------------------
def run_ours(args: argparse.Namespace, case: str, batch: int, out: Path) -> dict:
    flags = [
        "--policy.type=random",
        "--env.type=maniskill",
        *(f"--env.{key}={value}" for key, value in env_settings(args, case).items()),
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


def per_case(text: str) -> dict[str, int]:
    """`200` (every case) or `state=200,camera=20`."""
    if "=" not in text:
        return dict.fromkeys(CASES, int(text))
    return {case: int(value) for case, value in (item.split("=") for item in text.split(","))}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default="state,camera")
    parser.add_argument("--batches", default="1,2")
    parser.add_argument("--task", default="PickCube-v1")
    parser.add_argument("--episodes", type=per_case, default=per_case("state=200,camera=24"))
    parser.add_argument("--episode-length", type=per_case, default=per_case("50"))
    parser.add_argument("--image-size", type=int, default=128, help="camera height and width")
    parser.add_argument(
        "--repeats", type=int, default=1, help="alternate the two sides, keep each one's best"
    )
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--child-raw", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_raw:
        run_raw_child(args)
        return 0
    cases = harness_ceiling.check_cases(parser, args.cases, CASES)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # both sides import from cached bytecode
    print(f"machine: {os.cpu_count()} cores, load {throughput_act.load_average()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        warm_up = argparse.Namespace(
            **{**vars(args), "episodes": per_case("1"), "episode_length": per_case("5")}
        )
        for case in cases:  # bytecode, and lavapipe's shader cache, written before anything is timed
            run_ours(warm_up, case, 1, Path(tmp) / f"{case}-warm-up")
        for case in cases:
            for batch in (int(b) for b in args.batches.split(",")):
                raws, ours = [], []
                for repeat in range(args.repeats):
                    tag = f"{case}-b{batch}-{repeat}"
                    raws.append(run_raw(args, case, batch, Path(tmp) / f"{tag}.raw.json"))
                    ours.append(run_ours(args, case, batch, Path(tmp) / f"{tag}-ours"))
                rate = harness_ceiling.rate
                rows.append(report(case, batch, max(raws, key=rate), max(ours, key=rate)))
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
