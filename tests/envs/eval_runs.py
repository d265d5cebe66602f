"""lerobot-eval runs of a benchmark's tests, and what each of their episodes gave."""

from __future__ import annotations

import json
from pathlib import Path


def run_eval(flags: list[str], out: Path, n_episodes: int) -> dict:
    """`lerobot-eval` with `flags` into `out`: its eval_info.json, once episodes.jsonl holds
    every episode exactly once."""
    from lerobot.scripts.lerobot_eval import main

    assert main([*flags, f"--output_dir={out}"]) == 0
    info = json.loads((out / "eval_info.json").read_text())
    journal = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert sorted(record["episode_index"] for record in journal) == list(range(n_episodes))
    return info


def outcomes(info: dict) -> list[tuple]:
    """(episode, seed, success, sum of rewards, steps) of each episode of a run, in its order."""
    return [
        (e["episode_index"], e["seed"], e["success"], e["sum_reward"], e["n_steps"])
        for e in info["per_episode"]
    ]
