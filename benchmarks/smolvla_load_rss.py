"""Peak host memory of loading a full-size (450 M parameter) SmolVLA checkpoint on the CPU.

Writes a random full-size checkpoint (model.safetensors and config.json, from a locally built
SmolVLM2-500M-sized config: nothing is downloaded) under --dir, then loads it in a fresh
process as lerobot-eval does (`from_pretrained`: built on the meta device, filled tensor by
tensor) and reports that process's peak RSS against the size of the weights, and against the
RSS of the same process before loading (Python, torch and transformers imported).

    .venv/bin/python benchmarks/smolvla_load_rss.py --dir /tmp/smolvla-full
    .venv/bin/python benchmarks/smolvla_load_rss.py --dir /tmp/smolvla-full-bf16 --bf16
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from smolvla_common import full_size_config, parameter_count, write_full_size_vlm

# VmHWM, the process's own peak RSS: getrusage's ru_maxrss would include the parent's peak,
# which a child inherits across fork and exec.
LOADER = """
import json, re, sys, time
from pathlib import Path
import torch
from transformers import AutoConfig, AutoModel, SmolVLMForConditionalGeneration  # before the baseline: every loader imports them
from lerobot.policies.smolvla.loading import read_config
from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy
def peak_kib():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
directory = Path(sys.argv[1])
base = peak_kib()
start = time.perf_counter()
policy = SmolVLAPolicy.from_pretrained(directory, config=read_config(directory), device="cpu")
seconds = time.perf_counter() - start
peak = peak_kib()
bytes_held = sum(t.numel() * t.element_size() for t in policy.state_dict().values())
print(json.dumps({"baseline_kib": base, "peak_kib": peak, "load_s": seconds, "model_bytes": bytes_held}))
"""


def write_checkpoint(directory: Path, bf16: bool) -> int:
    """A random full-size checkpoint in LeRobot's layout; returns model.safetensors' size."""
    import torch

    from lerobot.policies.smolvla.modeling_smolvla import SmolVLAPolicy
    from lerobot.training.checkpoints import save_pretrained

    config = full_size_config(write_full_size_vlm(directory / "vlm"), load_vlm_weights=bf16)
    torch.manual_seed(0)
    policy = SmolVLAPolicy(config, vlm_weights=False)
    print(f"built {parameter_count(policy) / 1e6:.1f} M parameters", flush=True)
    stats = {"observation.state": {"mean": torch.zeros(8), "std": torch.ones(8)}}
    stats["action"] = {"mean": torch.zeros(7), "std": torch.ones(7)}
    save_pretrained(policy, stats, directory / "checkpoint")
    return (directory / "checkpoint" / "model.safetensors").stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="where the random checkpoint is written")
    parser.add_argument(
        "--bf16", action="store_true", help="load_vlm_weights=true: LeRobot's bfloat16 layout"
    )
    args = parser.parse_args()
    if not (args.dir / "checkpoint" / "model.safetensors").is_file():
        started = time.perf_counter()
        write_checkpoint(args.dir, args.bf16)
        print(f"checkpoint written in {time.perf_counter() - started:.0f} s", flush=True)
    file_bytes = (args.dir / "checkpoint" / "model.safetensors").stat().st_size
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(args.dir / "checkpoint")],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    peak, base = result["peak_kib"] * 1024, result["baseline_kib"] * 1024
    mib = 1024**2
    print(
        "| weights (model.safetensors) | held by the model | RSS before loading | peak RSS | peak / weights | added by loading / weights | load s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(
        f"| {file_bytes / mib:.0f} MiB | {result['model_bytes'] / mib:.0f} MiB | {base / mib:.0f} MiB | "
        f"{peak / mib:.0f} MiB | {peak / file_bytes:.2f} | {(peak - base) / file_bytes:.2f} | {result['load_s']:.1f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
