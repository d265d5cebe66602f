"""π0 / π0.5 on the CPU: loading memory, batched inference, and what the prefix KV cache saves.

What a CPU can measure of models this size (a full-size π0.5 is 4.1 B parameters, see
pi_common.py; its GPU numbers come from pi_gpu.py):

- **Loading memory** of LeRobot's tiny fixture checkpoints (tests/fixtures/policies/pi0, pi05),
  and with `--full-size DIR` of a random full-size π0.5 in LeRobot's bfloat16 layout (written
  tensor by tensor under DIR, about 8 GB: mind the disk and memory), each loaded in a fresh
  process as lerobot-eval does: peak RSS (VmHWM) against the weights' size and against the same
  process before loading (torch, transformers and lerobot imported).
- **Batched inference**: ms per `predict_action_chunk` (the VLM prefix once, then
  `num_inference_steps` expert passes) at batch 1, 2, 4 with the dummy variant (openpi's dummy
  Gemma, LIBERO's two 256 px cameras, real chunk size, steps and prompt length).
- **The prefix KV cache**: a chunk as sampled (prefix once, its keys and values reused by every
  expert step) against what each step costs without the cache: one joint pass over the prefix
  and the suffix (images embedded again), which is the training forward's computation. Without
  the cache a chunk would cost `num_inference_steps` such passes.

    .venv/bin/python benchmarks/pi_cpu.py --repeats 5
    .venv/bin/python benchmarks/pi_cpu.py --only load --full-size /tmp/pi05-full
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
from pi_common import REPO, build, libero_batch, parameter_count, pi_config, write_random_checkpoint

FIXTURES = REPO / "tests" / "fixtures" / "policies"
# VmHWM, the process's own peak RSS (getrusage's ru_maxrss would include what a child inherits).
LOADER = """
import json, re, sys, time
from pathlib import Path
import torch
import transformers.models.siglip.modeling_siglip  # imported by every π load, before the baseline
import lerobot.policies
from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.factory import get_policy_class
import lerobot.policies.pi.gemma, lerobot.policies.pi.modeling
def peak_kib():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1))
directory = Path(sys.argv[1])
config = PreTrainedConfig.from_pretrained(directory)
config.device = "cpu"
base = peak_kib()
start = time.perf_counter()
policy = get_policy_class(config.type).from_pretrained(directory, config=config)
seconds = time.perf_counter() - start
held = sum(t.numel() * t.element_size() for t in policy.state_dict().values())
print(json.dumps({"baseline_kib": base, "peak_kib": peak_kib(), "load_s": seconds, "model_bytes": held}))
"""


def load_rss(args) -> None:
    directories = {"tiny π0 (fixture)": FIXTURES / "pi0", "tiny π0.5 (fixture)": FIXTURES / "pi05"}
    if args.full_size:
        directories["full-size π0.5, bfloat16 layout (random)"] = full_size_checkpoint(args.full_size)
    mib = 2**20
    print("| checkpoint | model.safetensors | float32 size | RSS before loading | peak RSS | added by loading | added / file | load s |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, directory in directories.items():
        file_bytes = (directory / "model.safetensors").stat().st_size
        float32_bytes = 4 * parameter_count_of(directory)
        result = load_in_fresh_process(directory)
        base, peak = result["baseline_kib"] * 1024, result["peak_kib"] * 1024
        print(
            f"| {label} | {file_bytes / mib:.1f} MiB | {float32_bytes / mib:.1f} MiB | {base / mib:.0f} MiB | "
            f"{peak / mib:.0f} MiB | {(peak - base) / mib:.1f} MiB | {(peak - base) / file_bytes:.2f} | "
            f"{result['load_s']:.1f} |",
            flush=True,
        )


def parameter_count_of(directory: Path) -> int:
    """Values in model.safetensors, read from its header."""
    with open(directory / "model.safetensors", "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    header.pop("__metadata__", None)
    total = 0
    for entry in header.values():
        n = 1
        for size in entry["shape"]:
            n *= size
        total += n
    return total


def full_size_checkpoint(directory: Path) -> Path:
    if not (directory / "model.safetensors").is_file():
        started = time.perf_counter()
        size = write_random_checkpoint(pi_config("pi05", "full", dtype="bfloat16"), directory)
        print(f"<!-- wrote {size / 2**30:.2f} GiB in {time.perf_counter() - started:.0f} s -->", flush=True)
    return directory


def load_in_fresh_process(directory: Path) -> dict:
    env = {"PYTHONPATH": str(REPO / "src")}
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(directory)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def best_seconds(calls: dict, repeats: int) -> dict[str, float]:
    """Fastest of `repeats` timed calls of each, the calls alternating (a shared machine's load
    then weighs on all alike), after one untimed warm-up call each."""
    for call in calls.values():
        call()
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def batched_inference(args) -> None:
    print("| policy (dummy variant) | batch | ms per chunk | ms per chunk per row |")
    print("| --- | --- | --- | --- |")
    for policy_type in ("pi0", "pi05"):
        config = pi_config(policy_type, "dummy")
        policy = build(config, "cpu")
        for n_rows in args.batch_sizes:
            seconds = chunk_seconds(policy, libero_batch(n_rows, "cpu", config), args.repeats)["chunk"]
            print(
                f"| {policy_type} | {n_rows} | {1000 * seconds:.1f} | {1000 * seconds / n_rows:.1f} |",
                flush=True,
            )


def kv_cache_gain(args) -> None:
    print("| policy (dummy variant), batch 1 | chunk with the cache ms | one uncached step ms | steps | chunk without the cache ms (steps x step) | gain |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for policy_type in ("pi0", "pi05"):
        config = pi_config(policy_type, "dummy")
        best = chunk_seconds(
            build(config, "cpu"), libero_batch(1, "cpu", config), args.repeats, uncached=True
        )
        cached, step, n = best["chunk"], best["uncached step"], config.num_inference_steps
        print(
            f"| {policy_type} | {1000 * cached:.1f} | {1000 * step:.1f} | {n} | {1000 * n * step:.1f} | "
            f"x{n * step / cached:.2f} |",
            flush=True,
        )


def chunk_seconds(policy, batch: dict, repeats: int, uncached: bool = False) -> dict[str, float]:
    calls = {"chunk": lambda: policy.predict_action_chunk(batch)}
    if uncached:
        calls["uncached step"] = lambda: joint_pass(policy, batch)
    with torch.inference_mode():
        return best_seconds(calls, repeats)


def joint_pass(policy, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """One denoising step without a cache: images embedded, then prefix and suffix through both
    transformers together (the model's training forward, whose loss is a negligible extra)."""
    config = policy.config
    shape = (batch["observation.state"].shape[0], config.chunk_size, config.max_action_dim)
    noise = torch.randn(shape)
    time_ = torch.full((shape[0],), 0.5)
    return policy.model(policy.prepare_inputs(batch), torch.zeros(shape), noise, time_)


PARTS = {"load": load_rss, "batch": batched_inference, "cache": kv_cache_gain}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per case (the fastest is shown)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (small models wait on a busy pool)"
    )
    parser.add_argument(
        "--full-size", type=Path, help="also load a random full-size π0.5 written here (~8 GB)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    config = pi_config("pi05", "dummy")
    print(f"<!-- dummy π0.5: {parameter_count(build(config, 'cpu')) / 1e6:.2f} M parameters -->")
    for name in args.only:
        PARTS[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
