"""Join the output directories of sharded runs (`--eval.shard=i/n`) into one result.

Shards may run anywhere (Slurm array jobs, several machines); each writes its own
episodes.jsonl and run_config.json. Merging checks that they ran the same evaluation, keeps
each episode once, and says which episodes no shard finished, so an incomplete merge is
never mistaken for a complete one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import draccus

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.evaluation.journal import JOURNAL_FILENAME, EpisodeJournal, result_from_record
from lerobot.evaluation.metrics import TaskResult, build_eval_info, write_eval_info
from lerobot.evaluation.report import write_report
from lerobot.evaluation.resume import RUN_CONFIG_FILENAME, config_differences
from lerobot.utils.errors import ConfigError

# Settings that legitimately differ between the shards of one evaluation.
SHARD_KEYS = ("eval.shard",)


def merge_runs(run_dirs: Sequence[Path], output_dir: Path) -> dict[str, Any]:
    """Merge shard directories into `output_dir` (eval_info.json and episodes.jsonl)."""
    configs = [_load_run_config(Path(d)) for d in run_dirs]
    _check_same_evaluation(run_dirs, configs)
    records = _unique_records(Path(d) for d in run_dirs)
    expected = expected_episodes(configs[0])
    missing = sorted(set(expected) - set(records))
    tasks = _task_results(records, expected)
    info = build_eval_info(
        tasks,
        eval_s=sum(t.eval_s for t in tasks),
        extra={
            "complete": not missing,
            "n_episodes_retried": sum(1 for t in tasks for e in t.episodes if e.retries),
            "n_episodes_failed": sum(1 for t in tasks for e in t.episodes if e.failure_reason),
            "missing_episodes": [{"task_group": g, "task_id": t, "episode_index": e} for g, t, e in missing],
            "merged_from": [str(Path(d)) for d in run_dirs],
        },
    )
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    _write_journal(output_dir, records)
    write_eval_info(info, output_dir)
    write_report(output_dir, info)
    return info


def expected_episodes(run_config: dict[str, Any]) -> dict[tuple[str, int, int], tuple[str, str]]:
    """Every (group, task id, episode) the full evaluation has, with task name and description."""
    cfg = draccus.decode(EvalPipelineConfig, {**run_config, "eval": {**run_config["eval"], "shard": None}})
    return {
        (group, task_id, episode): (task, cfg.env.task_description(task))
        for group, tasks in cfg.env.indexed_task_groups().items()
        for task_id, task in tasks.items()
        for episode in range(cfg.eval.n_episodes)
    }


def _load_run_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_CONFIG_FILENAME
    if not path.exists():
        raise ConfigError(f"{run_dir}: no {RUN_CONFIG_FILENAME}; is this a lerobot-eval output directory?")
    return json.loads(path.read_text())


def _check_same_evaluation(run_dirs: Sequence[Path], configs: Sequence[dict[str, Any]]) -> None:
    for run_dir, config in zip(run_dirs[1:], configs[1:], strict=True):
        differences = [
            d for d in config_differences(configs[0], config) if not d.startswith(_flags(SHARD_KEYS))
        ]
        if differences:
            raise ConfigError(
                f"{run_dir}: not a shard of the same evaluation as {run_dirs[0]} ({'; '.join(differences)})"
            )


def _flags(keys: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"--{key}:" for key in keys)


def _unique_records(run_dirs) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Journal records of all shards, one per episode (the first shard that has it wins)."""
    records: dict[tuple[str, int, int], dict[str, Any]] = {}
    for run_dir in run_dirs:
        for record in EpisodeJournal(run_dir).records:
            records.setdefault((record["task_group"], record["task_id"], record["episode_index"]), record)
    return records


def _task_results(records: dict, expected: dict) -> list[TaskResult]:
    """One TaskResult per task that has finished episodes, in the evaluation's task order."""
    tasks: list[TaskResult] = []
    task_keys = list(dict.fromkeys((g, t) for g, t, _ in expected))
    for group, task_id in task_keys:
        episodes = sorted(
            (result_from_record(r) for (g, t, _), r in records.items() if (g, t) == (group, task_id)),
            key=lambda e: e.episode_index,
        )
        if episodes:
            name, description = expected[(group, task_id, episodes[0].episode_index)]
            tasks.append(TaskResult(group, task_id, name, description, tuple(episodes), 0.0))
    return tasks


def _write_journal(output_dir: Path, records: dict) -> None:
    lines = [json.dumps(records[key], allow_nan=False) for key in sorted(records)]
    (output_dir / JOURNAL_FILENAME).write_text("".join(line + "\n" for line in lines))
