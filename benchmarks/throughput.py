"""How close does `lerobot-eval` get to the simulator's own speed?

For one env/task/observation setting, this measures in one run:
  (a) the raw simulator loop: the same envs, built by the same config, stepped and rendered
      with the same settings and a zero action, in the same number of processes, no harness;
  (b) `lerobot-eval` (the library's `evaluate`) on the same episodes with the random policy,
and prints env-steps/s and episodes/s for both, the ratio (b)/(a) and peak memory (RSS).
With `--expert`, it instead compares continuous batching on/off with the scripted expert,
whose episodes end early at different times; `--inference-ms` adds a fixed latency to every
policy call, spent sleeping, as a stand-in for a GPU policy whose cost does not depend on how
many rows are active (this machine has no GPU).

    python benchmarks/throughput.py --task push-v3 --obs-type pixels_agent_pos --episodes 20
    python benchmarks/throughput.py --env libero --task libero_spatial --episodes 4 \
        --episode-length 30 -- --env.task_ids=[0]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

import throughput_act  # noqa: E402  (benchmarks/, next to this script)

import lerobot.envs  # noqa: E402,F401
import lerobot.policies  # noqa: E402,F401
from lerobot.configs.eval import EvalPipelineConfig  # noqa: E402
from lerobot.configs.parser import parse_config  # noqa: E402
from lerobot.evaluation.evaluate import evaluate  # noqa: E402
from lerobot.evaluation.run.batching.layout import BatchLayout  # noqa: E402
from lerobot.evaluation.store.provenance import cpu_model  # noqa: E402


def eval_args(args: argparse.Namespace, out: Path, policy: str, continuous: bool = True) -> list[str]:
    flags = [
        f"--policy.type={policy}",
        f"--env.type={args.env}",
        f"--env.task={args.task}",
        f"--env.obs_type={args.obs_type}",
        f"--env.episode_length={args.episode_length}",
        f"--eval.n_episodes={args.episodes}",
        f"--eval.batch_size={args.batch_size}",
        "--eval.max_episodes_rendered=0",
        f"--eval.continuous_batching={str(continuous).lower()}",
        f"--output_dir={out}",
    ]
    if args.size:
        flags += [f"--env.observation_height={args.size}", f"--env.observation_width={args.size}"]
    return flags + args.extra


def raw_worker(env_factory, seeds: list[int], queue) -> None:
    """Step whole episodes with a zero action: the floor any harness can reach."""
    env = env_factory()
    steps = 0
    zero = np.zeros(env.action_space.shape, dtype=env.action_space.dtype)
    for seed in seeds:
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(zero)
            steps += 1
            done = terminated or truncated
    env.close()
    queue.put(steps)


def warm_up_simulator(cfg: EvalPipelineConfig) -> None:
    """Import the simulator and build, reset and step one env in this process, untimed.

    Whichever of (a) and (b) ran first would otherwise pay the one-time imports (LIBERO's take
    seconds) and look slower for it.
    """
    env = first_task_env_factory(cfg)()
    env.reset(seed=cfg.seed)
    env.step(np.zeros(env.action_space.shape, dtype=env.action_space.dtype))
    env.close()


def first_task_env_factory(cfg: EvalPipelineConfig):
    """Builds one env of the benchmarked task (the first of its one group)."""
    [tasks] = cfg.env.task_groups().values()
    return cfg.env.env_factory(tasks[0])


def run_raw(cfg: EvalPipelineConfig) -> dict:
    factory = first_task_env_factory(cfg)
    n_envs = BatchLayout.of(cfg.eval).n_envs
    seeds = [cfg.seed + e for e in range(cfg.eval.n_episodes)]
    shares = [seeds[i::n_envs] for i in range(n_envs)]
    started = time.perf_counter()
    if n_envs == 1:
        queue: list[int] = []
        raw_worker(factory, shares[0], type("Q", (), {"put": queue.append})())
        steps = sum(queue)
    else:
        ctx = mp.get_context("forkserver")
        queue = ctx.Queue()
        procs = [ctx.Process(target=raw_worker, args=(factory, share, queue)) for share in shares]
        for p in procs:
            p.start()
        steps = sum(queue.get() for _ in procs)
        for p in procs:
            p.join()
    seconds = time.perf_counter() - started
    return {"env_steps": steps, "episodes": len(seeds), "seconds": seconds}


def run_harness(argv: list[str]) -> dict:
    cfg = parse_config(EvalPipelineConfig, argv)
    started = time.perf_counter()
    run = evaluate(cfg)
    seconds = time.perf_counter() - started
    return {
        "env_steps": sum(e.n_steps for e in run.episodes),
        "episodes": run.overall.n_episodes,
        "seconds": seconds,
        "pc_success": run.overall.pc_success,
    }


def add_inference_latency(seconds: float) -> None:
    """Make every scripted-expert call take `seconds` longer without using the CPU, like a
    policy waiting on a GPU (this benchmark's process only; nothing in the library changes)."""
    from lerobot.policies.metaworld_expert.modeling_metaworld_expert import MetaworldExpertPolicy

    select_action = MetaworldExpertPolicy.select_action

    def delayed(self, batch):
        time.sleep(seconds)
        return select_action(self, batch)

    MetaworldExpertPolicy.select_action = delayed


def rates(result: dict) -> dict:
    return {
        **result,
        "steps_per_s": result["env_steps"] / result["seconds"],
        "episodes_per_s": result["episodes"] / result["seconds"],
    }


def peak_rss_mb() -> dict:
    to_mb = 1 / 1024  # ru_maxrss is in KiB on Linux
    return {
        "main_process_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * to_mb,
        "largest_child_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * to_mb,
    }


def describe_machine() -> str:
    cpu = cpu_model() or platform.processor() or "?"
    return f"{os.cpu_count()} cores ({cpu}), MUJOCO_GL={os.environ.get('MUJOCO_GL')}, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="metaworld")
    parser.add_argument("--task", default="push-v3")
    parser.add_argument("--obs-type", default="pixels_agent_pos")
    parser.add_argument("--size", type=int, default=0, help="image height and width (0: the env's default)")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--episode-length", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=0, help="0: auto, as lerobot-eval")
    parser.add_argument(
        "--repeats", type=int, default=1, help="alternate raw and harness runs, keep the best"
    )
    parser.add_argument("--expert", action="store_true", help="compare continuous batching on/off instead")
    parser.add_argument(
        "--inference-ms", type=float, default=0.0, help="with --expert: sleep this long in every policy call"
    )
    parser.add_argument(
        "--act",
        action="store_true",
        help="a real ACT checkpoint: raw loop, ours and LeRobot (throughput_act.py)",
    )
    parser.add_argument(
        "--act-cases", default=",".join(throughput_act.CASES), help="with --act: which runs, in order"
    )
    parser.add_argument(
        "--lerobot-python", help="with --act: the python of a scratch venv with lerobot==0.6.1"
    )
    parser.add_argument(
        "--before-src",
        type=Path,
        help="with --act: a src/ folder (e.g. an older commit's) for the before-* runs",
    )
    parser.add_argument("--chunk-size", type=int, default=10, help="with --act")
    parser.add_argument("--n-action-steps", type=int, default=10, help="with --act")
    parser.add_argument(
        "--small", action="store_true", help="with --act: a tiny transformer (ResNet-18 still)"
    )
    parser.add_argument("--seed", type=int, default=1000, help="with --act: episode e starts from seed + e")
    parser.add_argument("--device", default="cpu", help="with --act: where ACT runs (cuda on a GPU machine)")
    parser.add_argument("--use-amp", action="store_true", help="with --act: ACT under autocast")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument("extra", nargs="*", help="more lerobot-eval flags, e.g. --env.camera_names=[corner2]")
    args = parser.parse_args()

    print(f"machine: {describe_machine()}")
    if args.act:
        result = throughput_act.main(args)
        if args.json:
            args.json.write_text(json.dumps({"args": vars(args), **result}, indent=2, default=str))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        if args.expert and args.inference_ms:
            add_inference_latency(args.inference_ms / 1000)
        if args.expert:
            # Warm-up: the first run also starts the fork server and imports the simulator in it.
            warm_up = argparse.Namespace(**{**vars(args), "episodes": 2, "episode_length": 5})
            run_harness(eval_args(warm_up, Path(tmp) / "warm_up", "metaworld_expert"))
            runs: dict[bool, list[dict]] = {True: [], False: []}
            for repeat in range(args.repeats):  # alternating, best of each
                for continuous in (True, False):
                    out = Path(tmp) / f"continuous_{continuous}_{repeat}"
                    argv = eval_args(args, out, "metaworld_expert", continuous=continuous)
                    runs[continuous].append(rates(run_harness(argv)))
            on = max(runs[True], key=lambda r: r["episodes_per_s"])
            off = max(runs[False], key=lambda r: r["episodes_per_s"])
            result = {
                "continuous_batching": on,
                "wave_batching": off,
                "episodes_per_s_gain": on["episodes_per_s"] / off["episodes_per_s"],
                "gain_per_repeat": [
                    a["episodes_per_s"] / b["episodes_per_s"]
                    for a, b in zip(runs[True], runs[False], strict=True)
                ],
            }
            print(
                f"continuous batching: {on['episodes_per_s']:.3f} episodes/s ({on['pc_success']:.0f}% success)"
            )
            print(f"wave batching:       {off['episodes_per_s']:.3f} episodes/s")
            print(
                f"gain: x{result['episodes_per_s_gain']:.2f} episodes/s "
                f"(per repeat: {', '.join(f'x{g:.2f}' for g in result['gain_per_repeat'])})"
            )
        else:
            # Alternate the two so that load from other processes hits both alike; keep the
            # best run of each (the least disturbed) and report the ratio of those.
            raws, harnesses = [], []
            warm_up_simulator(parse_config(EvalPipelineConfig, eval_args(args, Path(tmp) / "warm", "random")))
            for repeat in range(args.repeats):
                argv = eval_args(args, Path(tmp) / f"eval{repeat}", "random")
                raws.append(rates(run_raw(parse_config(EvalPipelineConfig, argv))))
                harnesses.append(rates(run_harness(argv)))
            raw = max(raws, key=lambda r: r["steps_per_s"])
            harness = max(harnesses, key=lambda r: r["steps_per_s"])
            result = {
                "raw": raw,
                "lerobot_eval": harness,
                "steps_ratio": harness["steps_per_s"] / raw["steps_per_s"],
                "episodes_ratio": harness["episodes_per_s"] / raw["episodes_per_s"],
                "ratio_per_repeat": [
                    h["steps_per_s"] / r["steps_per_s"] for r, h in zip(raws, harnesses, strict=True)
                ],
            }
            for name, r in (("raw simulator loop", raw), ("lerobot-eval", harness)):
                print(
                    f"{name:>20}: {r['steps_per_s']:8.1f} env-steps/s  {r['episodes_per_s']:7.3f} episodes/s"
                    f"  ({r['env_steps']} steps, {r['seconds']:.1f}s)"
                )
            print(
                f"ratio lerobot-eval / raw: {result['steps_ratio']:.3f} (env-steps/s), "
                f"{result['episodes_ratio']:.3f} (episodes/s)"
            )
    result["peak_rss"] = peak_rss_mb()
    print(
        f"peak RSS: main process {result['peak_rss']['main_process_mb']:.0f} MB, "
        f"largest worker {result['peak_rss']['largest_child_mb']:.0f} MB"
    )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args), **result}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
