"""What the LeRobot bridge costs: milliseconds per env step, against the same ACT loaded natively.

    python benchmarks/bridge_overhead.py --lerobot-python .venv-lerobot-ref/bin/python

Both policies are the ACT checkpoint LeRobot 0.6.1 saved for the tests (tests/fixtures), on
the CPU, fed the same batches of camera images (uint8 frames as the rollout converts them) and
4-d states, one step after another as the rollout calls them. Steps split in two kinds: those
that compute a chunk (every row reads its observation: the frames travel to the child) and
those that pop queued actions (no observation travels: one small round trip). Prints the mean
milliseconds of each kind for both, and the bridge's extra cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def load_both(checkpoint: Path, python: str):
    from lerobot.configs.eval import EvalPipelineConfig
    from lerobot.configs.parser import parse_config
    from lerobot.policies.factory import make_policy

    common = ["--env.type=metaworld", f"--policy.path={checkpoint}", "--policy.device=cpu"]
    sized = ["--env.observation_height=96", "--env.observation_width=96"]
    native_cfg = parse_config(EvalPipelineConfig, [*common, *sized])
    bridged_cfg = parse_config(
        EvalPipelineConfig, [*common, *sized, "--policy.type=lerobot_bridge", f"--policy.python={python}"]
    )
    return make_policy(native_cfg.policy, env_cfg=native_cfg.env), make_policy(
        bridged_cfg.policy, env_cfg=bridged_cfg.env
    )


def batch_of(rows: int, size: int, step: int) -> dict:
    generator = torch.Generator().manual_seed(step)
    image = torch.randint(0, 256, (rows, 3, size, size), generator=generator, dtype=torch.uint8)
    return {
        "observation.image": image.float().div_(255.0),
        "observation.state": torch.randn(rows, 4, generator=generator),
        "task": [""] * rows,
    }


def time_steps(policy, rows: int, size: int, steps: int, pre, post) -> tuple[list[float], list[float]]:
    """(ms of chunk steps, ms of queued steps), from the rollout's batch to the env's actions."""
    policy.reset(env_ids=list(range(rows)), seeds=list(range(rows)))
    chunk_ms, queued_ms = [], []
    for step in range(steps):
        raw = batch_of(rows, size, step)
        started = time.perf_counter()
        reading = bool(policy.rows_reading_images(rows))
        with torch.inference_mode():
            actions = None if reading else policy.actions_without_observation(rows)
            if actions is None:
                actions = policy.select_action(pre(raw))
            post(actions)
        (chunk_ms if reading else queued_ms).append((time.perf_counter() - started) * 1000)
    return chunk_ms, queued_ms


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lerobot-python", default=os.environ.get("LEROBOT_0_6_1_PYTHON"))
    parser.add_argument("--rows", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--sizes", nargs="+", type=int, default=[96, 480])
    parser.add_argument("--chunks", type=int, default=6, help="chunks timed per setting (5 steps each)")
    args = parser.parse_args()
    if not args.lerobot_python:
        raise SystemExit("--lerobot-python: the Python of LeRobot 0.6.1's environment (make lerobot-ref)")
    from tests.policies.checkpoints import materialize

    from lerobot.processor.policy_processors import make_pre_post_processors

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = materialize("act", Path(tmp) / "act")
        native, bridged = load_both(checkpoint, args.lerobot_python)
        native_pre, native_post = make_pre_post_processors(native.config)
        bridged_pre, bridged_post = make_pre_post_processors(bridged.config)  # placement only
        steps = args.chunks * native.config.n_action_steps
        print(
            f"ACT (LeRobot 0.6.1's fixture), CPU, {torch.get_num_threads()} torch threads, {steps} steps each"
        )
        print("| rows | image | native chunk ms | bridged chunk ms | native queued ms | bridged queued ms |")
        print("| --- | --- | --- | --- | --- | --- |")
        for size in args.sizes:
            for rows in args.rows:
                n_steps = native.config.n_action_steps
                time_steps(native, rows, size, n_steps, native_pre, native_post)  # warm-up
                time_steps(bridged, rows, size, n_steps, bridged_pre, bridged_post)
                n_chunk, n_queued = time_steps(native, rows, size, steps, native_pre, native_post)
                b_chunk, b_queued = time_steps(bridged, rows, size, steps, bridged_pre, bridged_post)
                cells = [statistics.mean(x) for x in (n_chunk, b_chunk, n_queued, b_queued)]
                print(
                    f"| {rows} | {size}x{size} | " + " | ".join(f"{c:.2f}" for c in cells) + " |", flush=True
                )
        bridged.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
