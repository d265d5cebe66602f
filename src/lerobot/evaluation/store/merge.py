"""Join the output directories of sharded runs (`--eval.shard=i/n`) into one result.

Shards may run anywhere (Slurm array jobs, several machines); each writes its own
episodes.jsonl and run_config.json. Merging checks that they ran the same evaluation, keeps
each episode once, and says which episodes no shard finished, so an incomplete merge is
never mistaken for a complete one. Nothing here imports torch or a simulator: the tasks come
from the env config alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import draccus

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.evaluation.report import write_report
from lerobot.evaluation.results import MissingEpisode, RunResult, TaskResult
from lerobot.evaluation.store.journal import EpisodeJournal, JournalEntry, write_journal
from lerobot.evaluation.store.output_dir import (
    config_differences,
    read_run_config,
    refuse_or_clear_results,
)
from lerobot.evaluation.store.result_files import write_eval_info
from lerobot.utils.dir_lock import locked_dir
from lerobot.utils.errors import ConfigError
from lerobot.utils.io import make_output_dir

# Settings that legitimately differ between the shards of one evaluation.
SHARD_KEYS = ("eval.shard",)

EpisodeKey = tuple[str, int, int]


def merge_runs(run_dirs: Sequence[Path], output_dir: Path, overwrite: bool = False) -> RunResult:
    """Merge shard directories into `output_dir` (eval_info.json, episodes.jsonl, report).

    `output_dir` must be new or empty, or hold results only with `overwrite`; it is never one
    of the shards, and it is locked while the merge writes.
    """
    output_dir = Path(output_dir)
    if any(output_dir.resolve() == Path(d).resolve() for d in run_dirs):
        raise ConfigError(
            f"--output_dir={output_dir}: is one of the shards being merged; choose a new directory"
        )
    make_output_dir(output_dir, "--output_dir")
    with locked_dir(output_dir, "--output_dir"):
        refuse_or_clear_results(output_dir, overwrite, resume=None)
        return _merge_into(run_dirs, output_dir)


def _merge_into(run_dirs: Sequence[Path], output_dir: Path) -> RunResult:
    configs = [read_run_config(Path(d)) for d in run_dirs]
    _check_same_evaluation(run_dirs, configs)
    entries = _unique_entries(Path(d) for d in run_dirs)
    tasks = planned_tasks(configs[0])
    n_episodes = int(configs[0]["eval"]["n_episodes"])
    missing = [
        MissingEpisode(task.group, task.task_id, e)
        for task in tasks
        for e in range(n_episodes)
        if (task.group, task.task_id, e) not in entries
    ]
    results = _task_results(tasks, entries)
    run = RunResult.of(
        results,
        eval_s=sum(t.eval_s for t in results),
        complete=not missing,
        missing_episodes=tuple(missing),
        merged_from=tuple(str(Path(d)) for d in run_dirs),
    )
    write_journal(output_dir, [entries[key] for key in sorted(entries)])
    write_eval_info(run, output_dir)
    write_report(output_dir, run)
    return run


def planned_tasks(run_config: dict[str, Any]) -> tuple[TaskSpec, ...]:
    """The tasks of the evaluation a run_config.json describes (from its env config alone)."""
    try:
        env_cfg = draccus.decode(EnvConfig, run_config["env"])
    except draccus.utils.DraccusException as exc:
        raise ConfigError(
            f"run_config.json: its env settings do not decode ({str(exc).splitlines()[0]})"
        ) from None
    return env_cfg.tasks()


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


def _unique_entries(run_dirs) -> dict[EpisodeKey, JournalEntry]:
    """Journal entries of all shards, one per episode: the first shard that ran it to its end
    wins, else the first that has it at all (failed for good by the harness)."""
    entries: dict[EpisodeKey, JournalEntry] = {}
    for run_dir in run_dirs:
        for entry in EpisodeJournal(run_dir).entries:
            kept = entries.get(entry.key)
            if kept is None or (kept.episode.failure_reason and not entry.episode.failure_reason):
                entries[entry.key] = entry
    return entries


def _task_results(tasks: Sequence[TaskSpec], entries: dict[EpisodeKey, JournalEntry]) -> list[TaskResult]:
    """One TaskResult per task that has finished episodes, in the evaluation's task order."""
    results = []
    for task in tasks:
        episodes = [entry.episode for entry in entries.values() if entry.task_key == task.key]
        if episodes:
            results.append(TaskResult.of(task, episodes, 0.0))
    return results
