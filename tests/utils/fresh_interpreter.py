"""Run code in a fresh interpreter (this one has torch and a fork server loaded already)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def json_lines(code: str) -> list[dict]:
    """The lines of JSON the code printed, in order (other output is ignored)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def tiny_metaworld_eval_argv(output_dir: Path) -> list[str]:
    """A `lerobot-eval` of one 3-step Meta-World episode of the random policy, in-process."""
    return [
        "--env.type=metaworld",
        "--env.obs_type=state",
        "--env.episode_length=3",
        "--policy.type=random",
        "--eval.n_episodes=1",
        "--eval.batch_size=1",
        f"--output_dir={output_dir}",
    ]
