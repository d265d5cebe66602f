"""How much of what the machine can simulate does `lerobot-eval` use, batch by batch? (issue 29)

For each case and batch size N this runs, each in a fresh process:
  (a) the ceiling: N processes, each building the same Meta-World env and stepping its share
      of the episodes with a zero action, rendering only the observations the policy reads
      (every step for `random-*`, one in `--n-action-steps` for `act-*` and `smolvla-*`), no harness, no
      policy: what the machine simulates;
  (b) `lerobot-eval` on the same episodes and seeds, batch N in async workers (N=1: in-process),
      no videos, with its process tree's CPU time.
and prints env-steps/s of both (over the ceiling's wall time and over eval_info.json's eval_s,
which both include starting the workers and building the simulators), their ratio and CPU ms
per env step of the whole process tree.

Cases: `random-state` (random policy, `--env.obs_type=state`: the per-step path, no render),
`random-pixels` (random policy, every observation rendered), `act-pixels` (a random ACT saved in
LeRobot's format, chunk 10 / n_action_steps 10, one image + 4-d state: chunks travel to the
workers whole), `act-state` (the same ACT on the 39-d state, no camera: the harness's own
cost per step shows), `*-per-step` (the same with `--eval.chunks_in_workers=false`) and
`smolvla-pixels` (a random SmolVLA saved in LeRobot's format, full size unless `--tiny-vla`,
reading the image and 4-d state, n_action_steps `--n-action-steps`, bf16 autocast on a GPU; its
ratio is against min(the ceiling, the policy's own bound: rows x n_action_steps per
`predict_action_chunk` time at that batch)). `--row-groups 1,2` runs our side once per value
of `--eval.row_groups`, against the same ceiling; the value `ready` runs it with
`--eval.independent_rows=true` (each worker's rows advance on their own).

    python benchmarks/harness_ceiling.py --batches 1,2,4,8 --cases random-state,act-pixels
    python benchmarks/harness_ceiling.py --device cuda --image-size 480 --batches 1,8,32,64  # GPU box
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

import throughput_act  # benchmarks/, next to this script

CASES = (
    "random-state",
    "random-pixels",
    "act-state",
    "act-state-per-step",
    "act-pixels",
    "act-pixels-per-step",
    "smolvla-pixels",
)
FULL_STATE_DIM = 39


def env_settings(args: argparse.Namespace, case: str) -> dict:
    """The Meta-World config's fields, for both sides."""
    return {
        "task": args.task,
        "obs_type": "pixels_agent_pos" if "pixels" in case else "state",
        "episode_length": args.episode_length,
        "observation_height": args.image_size,
        "observation_width": args.image_size,
    }


def env_flags(args: argparse.Namespace, case: str) -> list[str]:
    return ["--env.type=metaworld"] + [f"--env.{k}={v}" for k, v in env_settings(args, case).items()]


def reads_every(args: argparse.Namespace, case: str) -> int:
    """One observation in how many steps the policy reads (renders)."""
    return args.n_action_steps if case.startswith(("act", "smolvla")) else 1


# --- (a) the ceiling (a child process: `--child-ceiling`) ----------------------------------
def ceiling_worker(settings: dict, seeds: list[int], every: int, queue) -> None:
    # MuJoCo's bindings first, as lerobot-eval's workers load them (EnvConfig.fork_server_preload):
    # its steps run faster so, and that is part of what the machine can simulate.
    import mujoco  # noqa: F401
    import numpy as np

    from lerobot.envs.factory import make_env_config

    cfg = make_env_config("metaworld", **settings)
    env = cfg.env_factory(cfg.tasks()[0].name)()
    blind_step = getattr(env, "step_without_images", env.step)
    zero = np.zeros(env.action_space.shape, dtype=env.action_space.dtype)
    steps = 0
    for seed in seeds:
        env.reset(seed=seed)
        done, t = False, 0
        while not done:
            t += 1
            step = env.step if t % every == 0 else blind_step
            _, _, terminated, truncated, _ = step(zero)
            done = terminated or truncated
        steps += t
    env.close()
    queue.put(steps)


def gather_steps(queue, procs: list) -> int:
    """The simulator processes' step counts, summed. One that dies (a package missing on a fresh
    machine, say) ends the run at once: waiting for its count would hold the step, and the device
    time it runs on, until the step's time limit."""
    steps, pending = 0, len(procs)
    while pending:
        try:
            steps += queue.get(timeout=1.0)
            pending -= 1
        except Empty:
            failed = [proc.exitcode for proc in procs if proc.exitcode not in (None, 0)]
            if failed:
                message = (
                    f"ceiling: {len(failed)} of {len(procs)} simulator processes failed (exit {failed[0]})"
                )
                raise SystemExit(message) from None
    return steps


def run_ceiling_child(args: argparse.Namespace) -> None:
    settings, every, batch = json.loads(args.child_ceiling)
    seeds = [args.seed + e for e in range(args.episodes)]
    context = mp.get_context("fork")  # children of this process: their CPU time is counted
    queue = context.Queue()
    started = time.perf_counter()
    procs = [
        context.Process(target=ceiling_worker, args=(settings, seeds[i::batch], every, queue))
        for i in range(batch)
    ]
    for proc in procs:
        proc.start()
    write_processes_result(args.json, procs, queue, started)


def write_processes_result(path: Path, procs: list, queue, started: float) -> None:
    """Gather the simulator processes' steps, wait for them, and write the run's result: steps,
    seconds since `started`, and the CPU time of this process and its children."""
    steps = gather_steps(queue, procs)
    for proc in procs:
        proc.join()
    seconds = time.perf_counter() - started
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
    path.write_text(json.dumps({"env_steps": steps, "seconds": seconds, "cpu_s": cpu}))


def check_cases(parser: argparse.ArgumentParser, text: str, known: tuple[str, ...]) -> list[str]:
    """`--cases` as a list, or the parser's error naming the unknown ones and the known."""
    cases = text.split(",")
    unknown = [c for c in cases if c not in known]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)}; choose from {', '.join(known)}")
    return cases


def run_ceiling(args: argparse.Namespace, case: str, batch: int, out: Path) -> dict:
    spec = json.dumps([env_settings(args, case), reads_every(args, case), batch])
    child = [
        sys.executable,
        __file__,
        f"--child-ceiling={spec}",
        f"--json={out}",
        f"--episodes={args.episodes}",
        f"--seed={args.seed}",
    ]
    subprocess.run(child, check=True, env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")})
    return json.loads(out.read_text())


# --- (b) lerobot-eval ------------------------------------------------------------------------
def run_ours(
    args: argparse.Namespace, case: str, batch: int, checkpoint: Path, out: Path, row_groups: int | str = 1
) -> dict:
    """lerobot-eval on `case`; `row_groups`: a value of --eval.row_groups, or READY for
    --eval.independent_rows=true."""
    if case.startswith("smolvla"):
        checkpoint = checkpoint / "smolvla" / "checkpoint"
    else:
        checkpoint = checkpoint / ("state" if "state" in case else "pixels")
    policy = ["--policy.type=random"] if case.startswith("random") else [f"--policy.path={checkpoint}"]
    if case.startswith("smolvla") and args.device != "cpu":
        policy.append("--policy.use_amp=true")  # bf16 autocast, as a VLA is evaluated on a GPU
    flags = [
        *env_flags(args, case),
        *policy,
        f"--policy.device={args.device}",
        f"--eval.n_episodes={args.episodes}",
        f"--eval.batch_size={batch}",
        "--eval.max_episodes_rendered=0",
        f"--eval.chunks_in_workers={str(not case.endswith('per-step')).lower()}",
        f"--seed={args.seed}",
        f"--output_dir={out}",
        *grouping_flags(row_groups),
        *args.eval_flag,
    ]
    result = throughput_act.run_cli(sys.executable, "lerobot.scripts.lerobot_eval", flags, out, 0)
    return {**result, "env_steps": throughput_act.episode_steps(out)}


READY = "ready"
"""`--row-groups` value for rows that advance independently (`--eval.independent_rows=true`)."""


def parse_groupings(text: str) -> list[int | str]:
    return [value if value == READY else int(value) for value in text.split(",")]


def grouping_flags(row_groups: int | str) -> list[str]:
    """lerobot-eval's flags for a `--row-groups` value."""
    if row_groups == READY:
        return ["--eval.row_groups=1", "--eval.independent_rows=true"]
    return [f"--eval.row_groups={row_groups}"]


def grouping_tag(row_groups: int | str) -> str:
    """ " g2" for 2 row groups, " ind" for independent rows, nothing for lockstep."""
    if row_groups == READY:
        return " ind"
    return f" g{row_groups}" if row_groups > 1 else ""


def rate(result: dict) -> float:
    return result["env_steps"] / result["seconds"]


def cpu_ms_per_step(result: dict) -> float:
    return 1000 * result["cpu_s"] / result["env_steps"]


POLICY_BOUND_CHILD = """
import json, sys, time
import torch
from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.factory import make_policy, make_pre_post_processors

path, device, batch, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
cfg = PreTrainedConfig.from_pretrained(path)
cfg.pretrained_path, cfg.device = path, device
policy = make_policy(cfg).eval()
pre, _ = make_pre_post_processors(cfg, pretrained_path=path)
side = cfg.input_features["observation.image"].shape[-1]
raw = {
    "observation.image": torch.rand(batch, 3, side, side),
    "observation.state": torch.randn(batch, 4),
    "task": ["Push the puck to a goal"] * batch,
}
inputs = pre(raw)
amp = torch.autocast(device, dtype=torch.bfloat16) if device != "cpu" else torch.autocast("cpu", enabled=False)
times = []
with torch.inference_mode(), amp:
    for _ in range(repeats + 1):  # the first call warms up kernels and allocators
        if device != "cpu":
            torch.cuda.synchronize()
        started = time.perf_counter()
        policy.predict_action_chunk(inputs)
        if device != "cpu":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
print(json.dumps({"chunk_s": sorted(times[1:])[len(times[1:]) // 2]}))
"""


def policy_bound(args: argparse.Namespace, checkpoint: Path, batch: int) -> float:
    """Env-steps/s the policy alone allows at this batch: `batch` rows x n_action_steps per
    chunk time (median of `predict_action_chunk` on the checkpoint's own preprocessed inputs,
    bf16 autocast on a GPU), in a child process of its own."""
    done = subprocess.run(
        [sys.executable, "-c", POLICY_BOUND_CHILD, str(checkpoint), args.device, str(batch), "5"],
        capture_output=True,
        text=True,
        check=True,
    )
    chunk_s = json.loads(done.stdout.strip().splitlines()[-1])["chunk_s"]
    return batch * args.n_action_steps / chunk_s


def report(
    case: str, batch: int, row_groups: int | str, ceiling: dict, mine: dict, bound: float | None = None
) -> dict:
    """One row of the table, printed as it comes; with the policy's own bound (a VLA), the
    ratio is against min(that bound, the ceiling)."""
    row = {
        "case": case,
        "batch": batch,
        "row_groups": row_groups,
        "ceiling_steps_per_s": rate(ceiling),
        "ours_steps_per_s": rate(mine),
        "ratio": rate(mine) / min(rate(ceiling), bound if bound is not None else math.inf),
        "policy_bound_steps_per_s": bound,
        "ceiling_cpu_ms_per_step": cpu_ms_per_step(ceiling),
        "ours_cpu_ms_per_step": cpu_ms_per_step(mine),
        "ours_wall_s": mine["wall_s"],
        "main_mb": mine["main_mb"],
    }
    groups = grouping_tag(row_groups)
    bound_text = f"  policy bound {bound:8.1f}" if bound is not None else ""
    print(
        f"{case:>20} b{batch:<3}{groups:<4} ceiling {row['ceiling_steps_per_s']:8.1f}  ours "
        f"{row['ours_steps_per_s']:8.1f} env-steps/s  ratio {row['ratio']:.2f}  CPU ms/step "
        f"{row['ceiling_cpu_ms_per_step']:.2f} / {row['ours_cpu_ms_per_step']:.2f}{bound_text}",
        flush=True,
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default="random-state,act-state,act-state-per-step")
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--task", default="push-v3")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--episode-length", type=int, default=500)
    parser.add_argument("--image-size", type=int, default=64, help="camera height and width")
    parser.add_argument("--n-action-steps", type=int, default=10, help="ACT's chunk and n_action_steps")
    parser.add_argument("--device", default="cpu", help="where the policy runs (cuda on a GPU box)")
    parser.add_argument(
        "--repeats", type=int, default=1, help="alternate the two sides, keep each one's best"
    )
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument(
        "--eval-flag",
        action="append",
        default=[],
        help="an extra lerobot-eval flag for our side, e.g. --eval-flag=--eval.envs_per_worker=1 (repeatable)",
    )
    parser.add_argument(
        "--row-groups",
        default="1",
        help="our side once per value of --eval.row_groups (comma-separated; 'ready': "
        "--eval.independent_rows=true), against the same ceiling",
    )
    parser.add_argument(
        "--tiny-vla",
        action="store_true",
        help="smolvla-pixels on the tests' tiny VLM (a CPU smoke run); default: full size (~450 M parameters)",
    )
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="skip the untimed first run of each case (its imports' bytecode then is written by the first timed run)",
    )
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("--child-ceiling", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_ceiling:
        run_ceiling_child(args)
        return 0
    cases = check_cases(parser, args.cases, CASES)
    batches = [int(b) for b in args.batches.split(",")]
    row_groups = parse_groupings(args.row_groups)
    # Both sides import from cached bytecode, as an installed environment does from its second
    # run on. With PYTHONDONTWRITEBYTECODE set, every process compiles what it imports anew
    # (1.7 s for lerobot-eval): the raw processes pay it in parallel, our main process once, in
    # its first reset; counted in both rates, it hid a quarter of the harness's cost at batch 2.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    print(
        f"machine: {os.cpu_count()} cores, MUJOCO_GL={os.environ.get('MUJOCO_GL', 'egl')}, device {args.device}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "act"
        for kind in ("pixels", "state"):
            if any(c.startswith(f"act-{kind}") for c in cases):
                throughput_act.build_checkpoint(
                    checkpoint / kind,
                    args.n_action_steps,
                    args.n_action_steps,
                    small=True,
                    image_size=args.image_size,
                    state_dim=FULL_STATE_DIM if kind == "state" else 0,
                )
        if any(c.startswith("smolvla") for c in cases):
            import smolvla_common  # torch: never imported by the ceiling's children, before MuJoCo

            started = time.perf_counter()
            smolvla_common.write_metaworld_checkpoint(
                checkpoint / "smolvla",
                full_size=not args.tiny_vla,
                image_size=args.image_size,
                n_action_steps=args.n_action_steps,
            )
            print(f"SmolVLA checkpoint written in {time.perf_counter() - started:.0f} s", flush=True)
        warm_up = argparse.Namespace(**{**vars(args), "episodes": 1, "episode_length": 5})
        for case in cases if args.warm_up else ():  # writes the bytecode of all a case imports
            run_ours(warm_up, case, 1, checkpoint, Path(tmp) / f"{case}-warm-up")
        for case in cases:
            for batch in batches:
                ceilings, ours = [], {groups: [] for groups in row_groups}
                for repeat in range(args.repeats):
                    tag = f"{case}-b{batch}-{repeat}"
                    ceilings.append(run_ceiling(args, case, batch, Path(tmp) / f"{tag}.ceiling.json"))
                    for groups in row_groups:
                        out = Path(tmp) / f"{tag}-g{groups}"
                        ours[groups].append(run_ours(args, case, batch, checkpoint, out, groups))
                ceiling = max(ceilings, key=rate)
                bound = (
                    policy_bound(args, checkpoint / "smolvla" / "checkpoint", batch)
                    if case.startswith("smolvla")
                    else None
                )
                for groups, runs in ours.items():
                    rows.append(report(case, batch, groups, ceiling, max(runs, key=rate), bound))
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
