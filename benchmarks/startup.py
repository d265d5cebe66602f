"""How long a user waits: for --help, for the refusal of bad input, and for the first env step.

Measures, in one run and in alternating order (the machine's load changes between rounds), the
wall time of fresh processes:
  - `python -c "import torch"`, the yardstick: bad input and --help should take under a third;
  - `lerobot-eval --help`, a misspelt flag, an unknown task, `import lerobot.scripts.lerobot_eval`;
  - the README demo (`--policy.type=metaworld_expert --env.type=metaworld --env.task=push-v3`)
    up to the end of its first env step, with one env in-process and with two async workers.
Prints the median of each and its ratio to the torch import, as a markdown table.

    python benchmarks/startup.py --rounds 5 --first-step-rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
DEMO = [
    "--policy.type=metaworld_expert",
    "--env.type=metaworld",
    "--env.task=push-v3",
    "--eval.n_episodes=10",
]
# Runs the CLI with the vector env's first step reporting the wall clock, then ending the process.
FIRST_STEP = """
import os, sys, time
from lerobot.envs import vector
step_and_reset_at = vector.LazyVectorEnv.step_and_reset_at
def first_step(self, round_):
    out = step_and_reset_at(self, round_)
    if round_.step_ids:
        print(f"FIRST_STEP {time.time()!r}", flush=True)
        os._exit(0)
    return out
vector.LazyVectorEnv.step_and_reset_at = first_step
from lerobot.scripts.lerobot_eval import main
sys.exit(main(sys.argv[1:]))
"""


def quick_commands() -> dict[str, list[str]]:
    eval_bin = str(BIN / "lerobot-eval")
    return {
        "python -c 'import torch'": [sys.executable, "-c", "import torch"],
        "lerobot-eval --help": [eval_bin, "--help"],
        "bad flag (--eval.n_epsiodes=1)": [eval_bin, *DEMO, "--eval.n_epsiodes=1"],
        "unknown task (--env.task=pushh-v3)": [eval_bin, *DEMO, "--env.task=pushh-v3"],
        "import lerobot.scripts.lerobot_eval": [sys.executable, "-c", "import lerobot.scripts.lerobot_eval"],
    }


def first_step_commands(output_root: Path) -> dict[str, list[str]]:
    """The demo's runs, each into a fresh output dir under `output_root`."""
    run = [sys.executable, "-c", FIRST_STEP, *DEMO]
    output_root = Path(tempfile.mkdtemp(dir=output_root))
    return {
        "README demo to first env step, 1 env in-process": [
            *run,
            "--eval.batch_size=1",
            "--eval.use_async_envs=false",
            f"--output_dir={output_root / 'sync'}",
        ],
        "README demo to first env step, 2 async workers": [
            *run,
            "--eval.batch_size=2",
            "--eval.use_async_envs=true",
            f"--output_dir={output_root / 'async'}",
        ],
    }


def wall_seconds(command: list[str]) -> float:
    """Seconds from launching `command` to its exit, or to its FIRST_STEP line when it prints one."""
    started = time.time()
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=os.environ)
    ended = time.time()
    for line in result.stdout.splitlines():
        if line.startswith("FIRST_STEP "):
            return float(line.split()[1]) - started
    if "FIRST_STEP" in " ".join(command) or result.returncode not in (0, 2):
        raise RuntimeError(f"{command[:3]}... exited {result.returncode}: {result.stderr[-2000:]}")
    return ended - started


def measure(make_commands, rounds: int) -> dict[str, list[float]]:
    """Every command of `make_commands()` once per round, in a rotated order each round."""
    times: dict[str, list[float]] = {}
    for r in range(rounds):
        commands = make_commands()
        names = list(commands)
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times.setdefault(name, []).append(wall_seconds(commands[name]))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the quick commands")
    parser.add_argument("--first-step-rounds", type=int, default=3, help="rounds of the README demo runs")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    times = measure(quick_commands, args.rounds)
    with tempfile.TemporaryDirectory(prefix="lerobot-startup-") as tmp:
        times.update(measure(lambda: first_step_commands(Path(tmp)), args.first_step_rounds))
    torch_s = statistics.median(times["python -c 'import torch'"])
    print(f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; {os.cpu_count()} cores")
    print("| what | median s | runs | / import torch |")
    print("| --- | --- | --- | --- |")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"| {name} | {median:.2f} | {len(samples)} | {median / torch_s:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
