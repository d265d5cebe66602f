"""π0.5 at full size on a GPU: ms per call, episodes per minute and GPU memory, LIBERO batches of 1, 8, 32.

Prepared for a machine with a GPU (none was lent when it was written, so its numbers are not in
benchmarks/README.md yet). It builds a random-weight π0.5 of LeRobot's size (gemma_2b PaliGemma,
SigLIP So400m, gemma_300m expert; nothing is downloaded, see pi_common.py) on the GPU and times
`predict_action_chunk` (the VLM prefix once over two 224 px cameras and a 200-token prompt, then
10 expert passes over a 50-action chunk) under `torch.inference_mode`, in four modes:

- float32;
- LeRobot's bfloat16 layout (`--policy.dtype=bfloat16`: Gemma weights in bfloat16);
- float32 under bfloat16 autocast (`--policy.use_amp=true`);
- the bfloat16 layout through torch.compile (`--policy.compile_model=true`; the first call's
  compile time is reported apart).

Episodes per minute: with `n_action_steps=10`, a libero_spatial episode that runs to its 280-step
limit calls the policy 28 times, and a call serves every env slot of the batch, so the policy
alone allows 60 * batch / (28 * seconds per call) episodes a minute; that bound is printed for
every mode. Where LIBERO is installed (`--libero-episodes N`, default 2 per slot) it also runs
real episodes of libero_spatial task 0 with the bfloat16 layout, one worker process per slot, and
prints the measured rate (env start-up included).

    python benchmarks/pi_gpu.py                                   # cuda, batches 1 8 32
    python benchmarks/pi_gpu.py --device cpu --variant dummy --batch-sizes 1 2 --repeats 1 \
        --episode-length 20 --libero-episodes 1                     # smoke run on a CPU
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from pathlib import Path

import torch
from pi_common import TOKENIZER_DIR, build, libero_batch, parameter_count, pi_config
from smolvla_common import time_chunks

MODES = {  # flag name: (label, policy settings)
    "float32": ("float32", {"dtype": "float32"}),
    "bf16": ("bfloat16 layout", {"dtype": "bfloat16"}),
    "amp": ("float32 + bf16 autocast", {"dtype": "float32", "use_amp": True}),
    "compile": ("bfloat16 layout + torch.compile", {"dtype": "bfloat16", "compile_model": True}),
}


def time_modes(args) -> None:
    cuda = args.device.startswith("cuda")
    calls_per_episode = math.ceil(args.episode_length / args.n_action_steps)
    print(
        f"| mode | batch | ms per call | policy-bound episodes/min | peak GPU MiB |  (n_action_steps={args.n_action_steps})"
    )
    print("| --- | --- | --- | --- | --- |")
    for name in args.modes:
        mode, settings = MODES[name]
        config = pi_config("pi05", args.variant, args.device, compile_mode=args.compile_mode,
                           n_action_steps=args.n_action_steps, **settings)  # fmt: skip
        started = time.perf_counter()
        policy = build(config, args.device)
        print(
            f"<!-- {mode}: {parameter_count(policy) / 1e6:.1f} M parameters, built in {time.perf_counter() - started:.0f} s -->"
        )
        for n_rows in args.batch_sizes:
            batch = libero_batch(n_rows, args.device, config)
            if name == "compile":
                first = time.perf_counter()
                with torch.inference_mode():
                    policy.predict_action_chunk(batch)
                if cuda:
                    torch.cuda.synchronize()
                print(f"<!-- compile + first call at batch {n_rows}: {time.perf_counter() - first:.0f} s -->")
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            seconds = time_chunks(policy, batch, args.repeats)
            peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else float("nan")
            per_minute = 60 * n_rows / (calls_per_episode * seconds)
            print(f"| {mode} | {n_rows} | {1000 * seconds:.1f} | {per_minute:.0f} | {peak:.0f} |", flush=True)
        del policy
        if cuda:
            torch.cuda.empty_cache()


def libero_episodes_per_minute(args) -> None:
    """Real libero_spatial task-0 episodes (random weights: each runs to the step limit)."""
    from lerobot.configs.eval import EvalConfig
    from lerobot.envs.factory import make_env_config, make_task_env
    from lerobot.evaluation.evaluate import run_evaluation
    from lerobot.evaluation.run.backend import LocalBackend
    from lerobot.evaluation.run.batching.layout import BatchLayout
    from lerobot.evaluation.run.plan import RunPlan
    from lerobot.evaluation.run.rollout import RolloutSettings
    from lerobot.processor.device_processor import DeviceProcessorStep
    from lerobot.processor.pipeline import DataProcessorPipeline
    from lerobot.processor.policy_processors import policy_pipelines
    from lerobot.processor.tokenizer_processor import (
        Pi05PrepareStateTokenizerProcessorStep,
        TokenizerProcessorStep,
    )

    config = pi_config(
        "pi05", args.variant, args.device, dtype="bfloat16", n_action_steps=args.n_action_steps
    )
    policy = build(config, args.device)
    tokenizer = TokenizerProcessorStep(str(TOKENIZER_DIR), max_length=config.tokenizer_max_length)
    pre = DataProcessorPipeline(
        [Pi05PrepareStateTokenizerProcessorStep(), tokenizer, DeviceProcessorStep(args.device)]
    )
    _, post = policy_pipelines(config, None)
    env_cfg = make_env_config(
        "libero", task="libero_spatial", task_ids=[0], episode_length=args.episode_length
    )
    print("| batch (env workers) | episodes | wall s | episodes/min (env start included) |")
    print("| --- | --- | --- | --- |")
    for n_rows in args.batch_sizes:
        eval_cfg = EvalConfig(
            n_episodes=args.libero_episodes * n_rows, batch_size=n_rows, max_episodes_rendered=0
        )
        settings = RolloutSettings.from_config(eval_cfg, 1000, preprocessor=pre, postprocessor=post)
        backend = LocalBackend(
            policy,
            settings,
            lambda task, n=n_rows, c=eval_cfg: make_task_env(env_cfg, task, n, BatchLayout.of(c).use_async),
        )
        started = time.perf_counter()
        run = run_evaluation(RunPlan.from_config(env_cfg.tasks(), eval_cfg), backend)
        wall = time.perf_counter() - started
        n = run.overall.n_episodes
        print(f"| {n_rows} | {n} | {wall:.0f} | {60 * n / wall:.1f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--variant", choices=["full", "dummy"], default="full")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--n-action-steps", type=int, default=10)
    parser.add_argument("--episode-length", type=int, default=280, help="libero_spatial's step limit")
    parser.add_argument("--compile-mode", default="default", help="torch.compile mode of the compiled run")
    parser.add_argument(
        "--modes", nargs="+", choices=list(MODES), default=list(MODES), metavar="MODE",
        help="float32, bf16 (LeRobot's bfloat16 layout), amp (bf16 autocast), compile (default all)",
    )  # fmt: skip
    parser.add_argument(
        "--libero-episodes", type=int, default=2, help="episodes per env slot; 0 skips LIBERO"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    time_modes(args)
    if args.libero_episodes and importlib.util.find_spec("libero") is not None:
        libero_episodes_per_minute(args)
    elif args.libero_episodes:
        print("LIBERO is not installed here: episodes per minute above are the policy-bound ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
