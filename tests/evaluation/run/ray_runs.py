"""What the Ray tests share: the evaluation they run, and its per-episode outcomes.

Every Ray run is compared with one local run of the same evaluation: per-episode outcomes must
be identical, whatever ran where, died, or resumed.
"""

from __future__ import annotations

import json
from pathlib import Path

from lerobot.evaluation.results import TaskResult
from lerobot.evaluation.store.journal import JOURNAL_FILENAME
from lerobot.scripts.lerobot_eval import main

N_EPISODES = 6
FLAGS = [
    "--policy.type=random",
    "--env.type=metaworld",
    "--env.task=push-v3,reach-v3",
    "--env.obs_type=state",
    "--env.episode_length=20",
    f"--eval.n_episodes={N_EPISODES}",
    "--eval.max_episodes_rendered=1",
]
RAY_FLAGS = ["--eval.backend=ray", "--eval.num_workers=2"]
# What decides an episode's outcome; wall time, video path, node and re-run count may differ.
OUTCOME_FIELDS = (
    "seed",
    "success",
    "success_at_end",
    "sum_reward",
    "max_reward",
    "n_steps",
    "failure_reason",
)

EpisodeKey = tuple[str, int, int]


def run_locally(out: Path, flags: list[str] = FLAGS) -> Path:
    """`flags` evaluated on the local backend into `out`."""
    assert main([*flags, f"--output_dir={out}"]) == 0
    return out


def outcomes_in(out: Path) -> dict[EpisodeKey, tuple]:
    """Each episode's outcome in the run's eval_info.json."""
    info = json.loads((out / "eval_info.json").read_text())
    return {(e["task_group"], e["task_id"], e["episode_index"]): outcome(e) for e in info["per_episode"]}


def outcomes(tasks: list[TaskResult]) -> dict[EpisodeKey, tuple]:
    return {(t.group, t.task_id, e.episode_index): outcome(vars(e)) for t in tasks for e in t.episodes}


def outcome(episode: dict) -> tuple:
    return tuple(episode[name] for name in OUTCOME_FIELDS)


def journal_lines(out: Path) -> list[dict]:
    path = out / JOURNAL_FILENAME
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
