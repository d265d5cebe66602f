"""Throughput with a real policy in the loop: an ACT checkpoint on Meta-World, three ways.

(a) the raw loop: one env built by the same config, stepped (with its render) in this process,
    and the same ACT called the way a hand-written loop would: a chunk from the current
    observation every `n_action_steps` steps, converted and normalised only then. Its time
    splits into env time and policy time, which give the two limits of the issue: env-steps/s
    of step + render alone, and ms per chunk. `raw-blind`: the same loop rendering only the
    observations the chunks read, as lerobot-eval now does.
(b) `lerobot-eval` (ours) on the same episodes, batch 1 in-process and batch 2 in async workers,
    without videos (as (a)) and with LeRobot's default of videos for the first 10 episodes;
(c) LeRobot 0.6.1's own `lerobot-eval` on the same checkpoint, from a scratch environment
    (`--lerobot-python`), which always writes videos of the first 10 episodes.

Every run is a fresh process, so thread settings, imports and peak memory are its own; runs
alternate in the order given, `--repeats` times, and the best of each case is kept. The
checkpoint is built here with our own code in LeRobot's format (random weights; ResNet-18,
LeRobot's transformer sizes unless `--small`), at LeRobot's Meta-World shapes: one 480x480
corner2 image, a 4-d state, 4-d actions.

    python benchmarks/throughput.py --act --episodes 2 --repeats 2 --lerobot-python /tmp/ref/bin/python
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = (
    "raw",
    "raw-blind",
    "ours-b1",
    "ours-b1-video",
    "lerobot-b1",
    "ours-b2",
    "ours-b2-video",
    "lerobot-b2",
    "lerobot-b1-novideo",
    "lerobot-b2-novideo",
    "before-b1",
    "before-b2",
)
"""`before-*`: our lerobot-eval from another source tree (`--before-src`), e.g. an older commit.
`lerobot-*-novideo`: LeRobot's lerobot-eval with its videos turned off (it has no flag for it:
`eval_policy_all` is called with `max_episodes_rendered=0`), the like-for-like case of
`ours-b*`, as LeRobot runs every episode after its tenth.
`raw-blind`: the raw loop rendering only the observations ACT reads (`step_without_images`
on the other steps), the floor for a harness that skips unread renders."""
IMAGE_SIZE = 480
STATE_DIM = ACTION_DIM = 4
LEROBOT_EPISODE_LENGTH = 500
"""LeRobot's Meta-World env ends an episode at 500 steps (or success), whatever the flags say."""
LEROBOT_VIDEOS = 10
"""LeRobot's lerobot-eval writes videos of the first 10 episodes, with no flag to turn it off."""
SMALL_DIMS = {
    "dim_model": 32,
    "n_heads": 2,
    "dim_feedforward": 64,
    "n_encoder_layers": 2,
    "n_decoder_layers": 1,
    "n_vae_encoder_layers": 1,
    "latent_dim": 8,
}

# Runs a console script's module as `__main__` and leaves the process's peak memory and CPU
# time behind: the same measurement for our lerobot-eval and LeRobot's, each in its own
# interpreter. Workers started through a forkserver are reaped by it, not by us: their CPU
# time is read from the live descendants' /proc/<pid>/stat (own and reaped children's time).
CLI_WRAPPER = """
import json, os, resource, runpy, sys

def descendants_cpu_s():
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(pid)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    mine, total, grew = {os.getpid()}, 0.0, True
    while grew:
        new = {pid for pid, (ppid, _) in parents.items() if ppid in mine and pid not in mine}
        mine |= new
        total += sum(parents[pid][1] for pid in new)
        grew = bool(new)
    return total / os.sysconf("SC_CLK_TCK")

def without_videos(module):
    import importlib
    cli = importlib.import_module(module)
    evaluate_all = cli.eval_policy_all

    def no_videos(*args, **kwargs):
        kwargs["videos_dir"].parent.mkdir(parents=True, exist_ok=True)  # the videos made it
        return evaluate_all(*args, **{**kwargs, "max_episodes_rendered": 0, "videos_dir": None})

    cli.eval_policy_all = no_videos
    cli.main()

module, sys.argv = sys.argv[1], sys.argv[1:]
try:
    if os.environ.get("THROUGHPUT_NO_VIDEOS"):
        without_videos(module)
    else:
        runpy.run_module(module, run_name="__main__")
except SystemExit as exit_:
    if exit_.code not in (None, 0):
        raise
finally:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ["THROUGHPUT_RUSAGE"], "w") as f:
        json.dump({"main_mb": me.ru_maxrss / 1024, "largest_child_mb": children.ru_maxrss / 1024,
                   "cpu_s": me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
                            + descendants_cpu_s()}, f)
"""


def build_checkpoint(
    directory: Path,
    chunk_size: int,
    n_action_steps: int,
    small: bool,
    image_size: int = IMAGE_SIZE,
    state_dim: int = 0,
) -> Path:
    """A random ACT saved by our training code in LeRobot's checkpoint format; with
    `state_dim`, one that reads Meta-World's `state` observation (its 39-d state as both
    `observation.state` and `observation.environment_state`, no camera)."""
    import torch

    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.training.checkpoints import save_pretrained

    inputs = {
        "observation.image": PolicyFeature(FeatureType.VISUAL, (3, image_size, image_size)),
        "observation.state": PolicyFeature(FeatureType.STATE, (STATE_DIM,)),
    }
    if state_dim:
        inputs = {
            "observation.state": PolicyFeature(FeatureType.STATE, (state_dim,)),
            "observation.environment_state": PolicyFeature(FeatureType.ENV, (state_dim,)),
        }
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    config = ACTConfig(
        input_features=inputs,
        output_features=outputs,
        device="cpu",
        chunk_size=chunk_size,
        n_action_steps=n_action_steps,
        **(SMALL_DIMS if small else {}),
    )
    torch.manual_seed(0)
    policy = ACTPolicy(config).eval()
    save_pretrained(policy, dataset_stats(state_dim), directory)
    # LeRobot 0.6.1's ACTConfig has no `empty_cameras` field and refuses a config.json with it.
    config_path = directory / "config.json"
    saved = json.loads(config_path.read_text())
    saved.pop("empty_cameras", None)
    config_path.write_text(json.dumps(saved, indent=4))
    return directory


def dataset_stats(state_dim: int = 0) -> dict:
    """Plausible statistics, so that normalising does real arithmetic."""
    import torch

    g = torch.Generator().manual_seed(7)

    def stats(dim: int, image: bool = False) -> dict:
        shape = (dim, 1, 1) if image else (dim,)
        mean = torch.rand(shape, generator=g) * 0.4 + (0.3 if image else -0.2)
        std = torch.rand(shape, generator=g) * 0.2 + (0.15 if image else 0.3)
        return {"mean": mean, "std": std, "min": mean - 2.5 * std, "max": mean + 2.0 * std}

    if state_dim:
        return {
            "observation.state": stats(state_dim),
            "observation.environment_state": stats(state_dim),
            "action": stats(ACTION_DIM),
        }
    return {
        "observation.image": stats(3, True),
        "observation.state": stats(STATE_DIM),
        "action": stats(ACTION_DIM),
    }


def env_flags(args: argparse.Namespace) -> list[str]:
    """The same env for every side (LeRobot's Meta-World env reads only the task)."""
    return ["--env.type=metaworld", f"--env.task={args.task}", f"--env.episode_length={args.episode_length}"]


def policy_device_flags(args: argparse.Namespace) -> list[str]:
    """Where the policy runs (`--device`, CPU unless a GPU check asks) and under autocast or not."""
    return [f"--policy.device={args.device}", f"--policy.use_amp={str(args.use_amp).lower()}"]


def eval_flags(args: argparse.Namespace, checkpoint: Path, out: Path, batch: int, videos: int) -> list[str]:
    return [
        *env_flags(args),
        f"--policy.path={checkpoint}",
        *policy_device_flags(args),
        f"--eval.n_episodes={args.episodes}",
        f"--eval.batch_size={batch}",
        "--eval.use_async_envs=true",
        f"--seed={args.seed}",
        f"--output_dir={out}",
    ] + ([f"--eval.max_episodes_rendered={videos}"] if videos is not None else [])


# --- the raw loop (child process) ---------------------------------------------------------
def run_raw_loop(args: argparse.Namespace) -> dict:
    """Step + render + ACT on the same episodes, no harness: the floor lerobot-eval is held to."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        from lerobot.utils.threads import prefer_passive_omp_waits
    except ImportError:  # an older tree (the "before" runs in benchmarks/README.md): torch's defaults
        pass
    else:
        prefer_passive_omp_waits()  # the thread settings lerobot-eval runs under
    import numpy as np
    import torch

    import lerobot.envs  # noqa: F401
    import lerobot.policies  # noqa: F401
    from lerobot.configs.eval import EvalPipelineConfig
    from lerobot.configs.parser import parse_config
    from lerobot.envs.vector import stack_observations
    from lerobot.policies.factory import make_policy, make_pre_post_processors
    from lerobot.processor.observation import observation_to_batch

    cfg = parse_config(
        EvalPipelineConfig,
        ["--policy.path", str(args.checkpoint), *policy_device_flags(args), *env_flags(args)],
    )
    policy = make_policy(cfg.policy, env_cfg=cfg.env)
    pre, post = make_pre_post_processors(cfg.policy)
    [tasks] = cfg.env.task_groups().values()
    n_action_steps = cfg.policy.n_action_steps
    env_s = policy_s = 0.0
    steps = chunks = 0
    # From building the env to closing it: the span lerobot-eval's eval_s covers.
    started = time.perf_counter()
    env = cfg.env.env_factory(tasks[0])()
    amp = torch.autocast(torch.device(cfg.policy.device).type) if args.use_amp else contextlib.nullcontext()
    with torch.inference_mode(), amp:
        for episode in range(args.episodes):
            observation, _ = env.reset(seed=args.seed + episode)
            done, t = False, 0
            while not done:
                tick = time.perf_counter()
                if t % n_action_steps == 0:
                    batch = pre(observation_to_batch(stack_observations([observation])))
                    chunk = post(policy.predict_action_chunk(batch)[:, :n_action_steps])
                    actions = np.ascontiguousarray(chunk[0].float().cpu().numpy())
                    chunks += 1
                tock = time.perf_counter()
                read_next = (t + 1) % n_action_steps == 0
                step = env.step_without_images if args.blind and not read_next else env.step
                observation, _, terminated, truncated, _ = step(actions[t % n_action_steps])
                env_s += time.perf_counter() - tock
                policy_s += tock - tick
                steps, t = steps + 1, t + 1
                done = terminated or truncated
    env.close()
    seconds = time.perf_counter() - started
    return {
        "env_steps": steps,
        "seconds": seconds,
        "env_steps_per_s_alone": steps / env_s,
        "ms_per_chunk": 1000 * policy_s / chunks,
        "limit_steps_per_s": steps / (env_s + policy_s),
        "torch_threads": torch.get_num_threads(),
        "main_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "largest_child_mb": 0.0,
        "cpu_s": cpu_seconds(),
    }


def cpu_seconds() -> float:
    """User + system CPU time of this process and its waited-for children, imports included:
    unlike wall time, it hardly moves with what else the machine runs."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


# --- the CLI runs ------------------------------------------------------------------------
def run_cli(
    python: str,
    module: str,
    flags: list[str],
    out: Path,
    env_steps: int,
    pythonpath: str | None = None,
    no_videos: bool = False,
) -> dict:
    """One lerobot-eval process; env-steps/s over the run's own eval_s and over its wall time."""
    rusage = out.with_suffix(".rusage.json")
    env = {**os.environ, "THROUGHPUT_RUSAGE": str(rusage), "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    if no_videos:
        env["THROUGHPUT_NO_VIDEOS"] = "1"
    started = time.perf_counter()
    done = subprocess.run(
        [python, "-c", CLI_WRAPPER, module, *flags], env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{module} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    info = json.loads((out / "eval_info.json").read_text())
    overall = info["overall"] if "overall" in info else info["aggregated"]
    if overall.get("pc_success"):
        print(f"  note: {overall['pc_success']}% success, episodes ended early", file=sys.stderr)
    return {
        "env_steps": env_steps,
        "seconds": overall["eval_s"],
        "wall_s": wall,
        **json.loads(rusage.read_text()),
    }


def episode_steps(out: Path) -> int:
    """The env steps of a lerobot-eval run, from its episodes.jsonl."""
    lines = (out / "episodes.jsonl").read_text().splitlines()
    return sum(json.loads(line)["n_steps"] for line in lines if line)


def run_case(case: str, args: argparse.Namespace, checkpoint: Path, out: Path) -> dict:
    env_steps = args.episodes * args.episode_length
    if case in ("raw", "raw-blind"):
        result_file = out.with_suffix(".json")
        child = [
            sys.executable,
            __file__,
            "--child-raw",
            "--checkpoint",
            str(checkpoint),
            "--json",
            str(result_file),
        ] + (["--blind"] if case == "raw-blind" else [])
        child += [
            f"--{k.replace('_', '-')}={getattr(args, k)}"
            for k in ("task", "episodes", "episode_length", "seed", "device")
        ] + (["--use-amp"] if args.use_amp else [])
        subprocess.run(child, check=True, env={**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")})
        return json.loads(result_file.read_text())
    side, batch, *video = case.split("-")
    batch_size = int(batch.removeprefix("b"))
    if side == "lerobot":
        flags = eval_flags(args, checkpoint, out, batch_size, videos=None)
        no_videos = video == ["novideo"]
        return run_cli(
            args.lerobot_python, "lerobot.scripts.lerobot_eval", flags, out, env_steps, no_videos=no_videos
        )
    videos = LEROBOT_VIDEOS if video else 0
    flags = eval_flags(args, checkpoint, out, batch_size, videos=videos)
    pythonpath = str(args.before_src) if side == "before" else None
    return run_cli(sys.executable, "lerobot.scripts.lerobot_eval", flags, out, env_steps, pythonpath)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(args: argparse.Namespace) -> dict:
    cases = [c for c in args.act_cases.split(",") if c]
    unknown = sorted(c for c in cases if c not in CASES and not re.fullmatch(r"ours-b\d+(-video)?", c))
    if unknown:
        raise SystemExit(
            f"--act-cases: unknown {', '.join(unknown)}; choose from {', '.join(CASES)} or ours-b<N>[-video]"
        )
    if any(c.startswith("lerobot") for c in cases) and not args.lerobot_python:
        cases = [c for c in cases if not c.startswith("lerobot")]
        print("no --lerobot-python: LeRobot's runs are skipped")
    if any(c.startswith("before") for c in cases) and not args.before_src:
        cases = [c for c in cases if not c.startswith("before")]
        print("no --before-src: the before-* runs are skipped")
    if any(c.startswith("lerobot") for c in cases) and args.episode_length != LEROBOT_EPISODE_LENGTH:
        raise SystemExit(
            f"--episode-length={args.episode_length}: LeRobot's Meta-World episodes always run 500 steps"
        )
    runs: dict[str, list[dict]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = build_checkpoint(Path(tmp) / "act", args.chunk_size, args.n_action_steps, args.small)
        for repeat in range(args.repeats):
            for case in cases:
                before = load_average()
                try:
                    result = run_case(case, args, checkpoint, Path(tmp) / f"{case}_{repeat}")
                except (RuntimeError, subprocess.CalledProcessError) as exc:
                    print(f"[{repeat}] {case:>14}: failed: {exc}", flush=True)
                    continue
                result.update(
                    steps_per_s=result["env_steps"] / result["seconds"],
                    load_before=before,
                    load_after=load_average(),
                )
                runs[case].append(result)
                print(
                    f"[{repeat}] {case:>14}: {result['steps_per_s']:.2f} env-steps/s, "
                    f"{1000 * result['cpu_s'] / result['env_steps']:.0f} CPU ms/step  "
                    f"load {before} -> {result['load_after']}",
                    flush=True,
                )
    best = {case: max(results, key=lambda r: r["steps_per_s"]) for case, results in runs.items() if results}
    print_table(best)
    return {"runs": runs, "best": best}


def print_table(best: dict[str, dict]) -> None:
    raw = best.get("raw")
    if raw is not None:
        print(
            f"limits (raw loop): step + render alone {raw['env_steps_per_s_alone']:.2f} env-steps/s, "
            f"{raw['ms_per_chunk']:.0f} ms per chunk ({raw['torch_threads']} torch threads), "
            f"so {raw['limit_steps_per_s']:.2f} env-steps/s with the policy"
        )
    blind = best.get("raw-blind")
    print(
        f"{'case':>14} {'env-steps/s':>12} {'/ raw':>7} {'/ raw-blind':>12} {'/ LeRobot':>10} "
        f"{'CPU ms/step':>12} {'main MB':>8} {'child MB':>9}"
    )
    for case, r in best.items():
        lerobot = None
        if case.startswith("ours"):
            batch = case.split("-")[1]
            lerobot = best.get(f"lerobot-{batch}" if case.endswith("video") else f"lerobot-{batch}-novideo")
        vs_raw = f"{r['steps_per_s'] / raw['steps_per_s']:.3f}" if raw and case != "raw" else "-"
        vs_blind = f"{r['steps_per_s'] / blind['steps_per_s']:.3f}" if blind and case != "raw-blind" else "-"
        vs_lerobot = f"x{r['steps_per_s'] / lerobot['steps_per_s']:.2f}" if lerobot else "-"
        print(
            f"{case:>14} {r['steps_per_s']:12.2f} {vs_raw:>7} {vs_blind:>12} {vs_lerobot:>10} "
            f"{1000 * r['cpu_s'] / r['env_steps']:12.1f} {r['main_mb']:8.0f} {r['largest_child_mb']:9.0f}"
        )


def child_main() -> int:
    """`--child-raw`: one raw-loop run, its numbers written to `--json`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--child-raw", action="store_true")
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--episodes", type=int, required=True)
    parser.add_argument("--episode-length", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--blind", action="store_true")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--use-amp", action="store_true")
    args = parser.parse_args()
    args.json.write_text(json.dumps(run_raw_loop(args)))
    return 0


if __name__ == "__main__":
    sys.exit(child_main())
