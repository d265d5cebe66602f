"""SmolVLA at full size on a GPU: ms per action chunk for LIBERO-shaped batches of 1, 8 and 32.

Prepared for a machine with a GPU (none was lent when it was written, so its numbers are not
in benchmarks/README.md yet). It builds a random-weight SmolVLA from a SmolVLM2-500M-sized
config (nothing is downloaded; see smolvla_common.py), moves it to the GPU, and times
`predict_action_chunk` (prefix once, 10 expert passes) under `torch.inference_mode`, in
float32, under bf16 autocast (`--policy.use_amp=true`) and in LeRobot's `load_vlm_weights`
layout (VLM and expert held in bfloat16), with peak GPU memory.

    python benchmarks/smolvla_gpu.py                   # cuda, batches 1 8 32
    python benchmarks/smolvla_gpu.py --device cpu --batch-sizes 1 --repeats 1   # smoke run
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
from smolvla_common import full_size_config, libero_batch, parameter_count, time_chunks, write_full_size_vlm

MODES = {
    "float32": (False, None),
    "float32 + bf16 autocast": (False, torch.bfloat16),
    "load_vlm_weights (bf16 VLM)": (True, None),
}


def build(vlm_dir: Path, device: str, bf16_layout: bool):
    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy

    torch.manual_seed(0)
    with torch.device(device):
        policy = SmolVLAPolicy(full_size_config(vlm_dir, bf16_layout, device), vlm_weights=False)
    return policy.eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    if cuda:
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    with tempfile.TemporaryDirectory() as tmp:
        vlm_dir = write_full_size_vlm(Path(tmp) / "vlm")
        print("| mode | batch | ms per chunk | ms per action (n_action_steps=50 / 10) | peak GPU MiB |")
        print("| --- | --- | --- | --- | --- |")
        for mode, (bf16_layout, amp) in MODES.items():
            started = time.perf_counter()
            policy = build(vlm_dir, args.device, bf16_layout)
            if mode == "float32":
                print(
                    f"<!-- {parameter_count(policy) / 1e6:.0f} M parameters, built in {time.perf_counter() - started:.0f} s -->"
                )
            for n_rows in args.batch_sizes:
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                seconds = time_chunks(policy, libero_batch(n_rows, args.device), args.repeats, amp)
                peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else float("nan")
                ms = 1000 * seconds
                print(
                    f"| {mode} | {n_rows} | {ms:.1f} | {ms / 50:.2f} / {ms / 10:.2f} | {peak:.0f} |",
                    flush=True,
                )
            del policy
            if cuda:
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
