"""SmolVLA inference on the CPU: the tiny test checkpoint (and, with --full-size, a random
450 M parameter one) at several batch sizes, one forward per chunk for all rows.

    .venv/bin/python benchmarks/smolvla_cpu.py
    .venv/bin/python benchmarks/smolvla_cpu.py --full-size --batch-sizes 1 --repeats 2

Per chunk: the VLM runs once over the prefix (cameras, instruction, state) and the expert
num_steps (10) times; `select_action` then serves n_action_steps actions from the queue, so the
cost per env step is the chunk's divided by n_action_steps (plus the preprocessor's tokeniser,
cached per instruction).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

import torch
from smolvla_common import full_size_config, libero_batch, parameter_count, time_chunks, write_full_size_vlm

REPO = Path(__file__).resolve().parents[1]


def tiny_policy(tmp: Path):
    sys.path.insert(0, str(REPO))
    from tests.policies.smolvla_checkpoints import materialize

    from lerobot.policies.smolvla.loading import read_config
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    directory = materialize("smolvla", tmp / "tiny")
    return SmolVLAPolicy.from_pretrained(directory, config=read_config(directory), device="cpu")


def tiny_batch(n_rows: int) -> dict:
    g = torch.Generator().manual_seed(0)
    return {
        "observation.images.camera1": torch.rand((n_rows, 3, 256, 256), generator=g),
        "observation.images.camera2": torch.rand((n_rows, 3, 256, 256), generator=g),
        "observation.state": torch.randn((n_rows, 8), generator=g),
        "observation.language.tokens": torch.randint(0, 300, (n_rows, 16), generator=g),
        "observation.language.attention_mask": torch.ones((n_rows, 16), dtype=torch.bool),
    }


def full_policy(tmp: Path):
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    torch.manual_seed(0)
    return SmolVLAPolicy(full_size_config(write_full_size_vlm(tmp / "vlm")), vlm_weights=False).eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads; default 1 for the tiny model (its small ops only wait on a thread "
        "pool, ~15x slower with 2 threads on a busy 2-core machine), all cores at full size",
    )
    parser.add_argument("--full-size", action="store_true", help="a random 450 M parameter SmolVLA instead")
    args = parser.parse_args()
    args.threads = args.threads or (os.cpu_count() if args.full_size else 1)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        policy = full_policy(Path(tmp)) if args.full_size else tiny_policy(Path(tmp))
        make_batch = (lambda n: libero_batch(n, "cpu")) if args.full_size else tiny_batch
        n_actions = policy.config.n_action_steps
        print(
            f"{'full-size' if args.full_size else 'tiny'} SmolVLA, {parameter_count(policy) / 1e6:.2f} M parameters, "
            f"chunk {policy.config.chunk_size}, n_action_steps {n_actions}, {policy.config.num_steps} Euler steps; "
            f"torch {torch.__version__}, {args.threads} threads, {platform.processor() or platform.machine()}"
        )
        print("| batch | ms per chunk | ms per chunk per row | ms per env step (all rows) |")
        print("| --- | --- | --- | --- |")
        for n_rows in args.batch_sizes:
            seconds = time_chunks(policy, make_batch(n_rows), args.repeats)
            print(
                f"| {n_rows} | {1000 * seconds:.1f} | {1000 * seconds / n_rows:.2f} | {1000 * seconds / n_actions:.2f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
