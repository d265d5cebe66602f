"""What the policy's processors cost per step, through LeRobot's public API only, so the same
script times this tree, an older checkout of it (first on PYTHONPATH) and LeRobot 0.6.1 itself
(run with its Python):

    .venv/bin/python benchmarks/processor_cost.py                         # this tree
    PYTHONPATH=/tmp/ref/src .venv/bin/python benchmarks/processor_cost.py  # an older checkout
    .venv-lerobot-ref/bin/python benchmarks/processor_cost.py             # LeRobot 0.6.1

For each fixture checkpoint (the pipelines LeRobot saved in tests/fixtures/policies/: ACT and
Diffusion, images and state), `make_pre_post_processors(cfg, pretrained_path=...)` builds the
pair; the preprocessor runs on an evaluation batch (`--rows` rows, 96x96 camera, state,
instructions) and the postprocessor on a (rows, action) tensor. Prints the fastest of
`--repeats` timings of `--calls` calls each, in microseconds per call, as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "policies"


def checkpoint(name: str, into: Path) -> Path:
    """The fixture's config and pipeline files (the config reader wants a weights file too)."""
    from safetensors.torch import save_file

    into.mkdir(parents=True, exist_ok=True)
    for path in (FIXTURES / name).iterdir():
        if path.suffix == ".json" or "processor" in path.name:
            (into / path.name).write_bytes(path.read_bytes())
    save_file({}, into / "model.safetensors")
    return into


def per_call_us(fn, arg, calls: int, repeats: int) -> float:
    fn(arg)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(arg)
        times.append((time.perf_counter() - start) / calls * 1e6)
    return min(times)  # the least disturbed repeat: other work on the machine only adds time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import make_pre_post_processors

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("act", "diffusion"):
            directory = checkpoint(name, Path(tmp) / name)
            cfg = PreTrainedConfig.from_pretrained(directory)
            cfg.device = "cpu"
            pre, post = make_pre_post_processors(cfg, pretrained_path=str(directory))
            batch = {
                "observation.image": torch.rand(args.rows, 3, 96, 96),
                "observation.state": torch.randn(args.rows, 4),
                "task": ["push the block"] * args.rows,
            }
            action = torch.randn(args.rows, 4)
            results[name] = {
                "pre_us": round(per_call_us(pre, batch, args.calls, args.repeats), 1),
                "post_us": round(per_call_us(post, action, args.calls, args.repeats), 1),
            }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
