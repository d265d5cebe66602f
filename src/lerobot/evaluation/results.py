"""What an evaluation produces, as types: episodes, tasks, summaries with intervals, the run.

The rollout makes `EpisodeResult`s; a task's episodes make a `TaskResult`; the tasks of a run
make a `RunResult`, which knows its per-suite and overall `Summary`s. Everything downstream
(journal, resume, merge, report, `lerobot-train`) works on these. The only dict boundaries
are eval_info.json itself: `RunResult.to_eval_info()` writes its shape, `run_from_eval_info`
and `load_run` read it back. Reading is lenient, so an eval_info.json of an older version or
of LeRobot itself (no intervals, no provenance, fewer episode fields) still gives a run that
reports can show.

No torch, no simulator: reports and merges are rebuilt from files on any machine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from lerobot.configs.env import TaskSpec
from lerobot.evaluation.intervals import pc_wilson_interval
from lerobot.evaluation.robustness import per_perturbation_json
from lerobot.utils.io import to_strict_json
from lerobot.utils.logging_utils import one_line

EVAL_INFO_FILENAME = "eval_info.json"

RESULT_KEYS = ("per_task", "per_episode", "overall", "aggregated")
"""Top-level keys of which an eval_info.json (ours or LeRobot's) has at least one."""

TaskKey = tuple[str, int]
"""(task group, task id): a task's identity within a run."""


@dataclass(frozen=True)
class EpisodeResult:
    """What one finished episode produced.

    Every field is set by the rollout; the optional ones are None only in an episode read
    from a file that did not record them (LeRobot's own eval_info.json).
    """

    episode_index: int
    seed: int | None
    success: bool
    """Succeeded at any step before the episode ended."""
    success_at_end: bool | None
    """Succeeded at the last step."""
    sum_reward: float
    max_reward: float
    n_steps: int | None
    wall_s: float | None
    video_path: str | None = None
    retries: int = 0
    """How many times the episode was re-run from its start after its env crashed or hung."""
    failure_reason: str | None = None
    """Set when every attempt failed; the episode then counts as unsuccessful."""
    init_state_index: int | None = None
    """Which of the task's fixed initial states the episode started from (LIBERO), as the env
    reported it in its reset info."""
    policy_error: str | None = None
    """Set when the policy's own output ended the episode (NaN or inf actions). Unlike a
    `failure_reason`, this is the policy's doing: the episode is scored, unsuccessful from then on."""

    @classmethod
    def failed(
        cls,
        episode_index: int,
        seed: int,
        reason: str,
        retries: int,
        n_steps: int = 0,
        wall_s: float = 0.0,
        init_state_index: int | None = None,
    ) -> EpisodeResult:
        """An episode whose every attempt failed (crash, hang, error): unsuccessful, with the
        reason as one bounded line (a server's 20 MB error text must not fill every result file)."""
        return cls(
            episode_index=episode_index,
            seed=seed,
            success=False,
            success_at_end=False,
            sum_reward=0.0,
            max_reward=0.0,
            n_steps=n_steps,
            wall_s=wall_s,
            retries=retries,
            failure_reason=one_line(reason),
            init_state_index=init_state_index,
        )

    def to_record(self) -> dict[str, Any]:
        """The episode's fields, in declaration order (the order files keep them in)."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> EpisodeResult:
        """An episode from a journal line or an eval_info.json `per_episode` entry.

        A reward stored as null was not finite; LeRobot's files name the index `episode_ix`
        and lack some fields, which stay None.
        """
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in record.items() if k in known}
        values.setdefault("episode_index", record.get("episode_ix", 0))
        for key in ("sum_reward", "max_reward"):
            if values.get(key) is None:
                values[key] = math.nan
        for key in ("seed", "success_at_end", "n_steps", "wall_s"):
            values.setdefault(key, None)
        values["success"] = bool(values.get("success", False))
        return cls(**values)


@dataclass(frozen=True)
class Summary:
    """The aggregate numbers of a set of episodes: a task, a suite or a whole run.

    `pc_success_ci95` is the 95% Wilson interval of the success rate, in percent. Averages are
    None where there is nothing to average (no episodes, or a file that did not record them).
    """

    n_episodes: int
    """Episodes the rates are computed over: those that ran to their end (not `n_episodes_failed`)."""
    n_successes: int | None
    pc_success: float | None
    pc_success_ci95: tuple[float, float] | None
    pc_success_at_end: float | None
    avg_sum_reward: float | None
    avg_max_reward: float | None
    avg_episode_length: float | None
    eval_s: float | None
    video_paths: tuple[str, ...] = ()
    n_episodes_failed: int = 0
    """Episodes that failed for good because of the harness (crash, hang, reset error, server
    gone): not the policy's failures, so left out of every rate and average."""

    @classmethod
    def of(cls, all_episodes: Sequence[EpisodeResult], eval_s: float) -> Summary:
        episodes = scored(all_episodes)
        n_successes = sum(1 for e in episodes if e.success)
        interval = pc_wilson_interval(n_successes, len(episodes))
        return cls(
            n_episodes=len(episodes),
            n_successes=n_successes,
            pc_success=_mean([100.0 * e.success for e in episodes]),
            pc_success_ci95=tuple(interval) if interval else None,
            pc_success_at_end=_mean([100.0 * bool(e.success_at_end) for e in episodes]),
            avg_sum_reward=_mean([e.sum_reward for e in episodes]),
            avg_max_reward=_mean([e.max_reward for e in episodes]),
            avg_episode_length=_mean([e.n_steps or 0 for e in episodes]),
            eval_s=eval_s,
            video_paths=tuple(e.video_path for e in episodes if e.video_path),
            n_episodes_failed=len(all_episodes) - len(episodes),
        )

    @property
    def eval_ep_s(self) -> float | None:
        if self.eval_s is None or not self.n_episodes:
            return None
        return self.eval_s / self.n_episodes

    @property
    def success_rate(self) -> float:
        """The success rate as a fraction (0 when no episode ran)."""
        return (self.pc_success or 0.0) / 100.0

    def to_json(self) -> dict[str, Any]:
        """LeRobot's aggregate keys plus the success count and its interval, in file order;
        `n_episodes_failed` only when some episode failed for good."""
        block = {
            "pc_success": self.pc_success,
            "pc_success_ci95": list(self.pc_success_ci95) if self.pc_success_ci95 else None,
            "n_successes": self.n_successes,
            "pc_success_at_end": self.pc_success_at_end,
            "n_episodes": self.n_episodes,
            "avg_sum_reward": self.avg_sum_reward,
            "avg_max_reward": self.avg_max_reward,
            "avg_episode_length": self.avg_episode_length,
            "eval_s": self.eval_s,
            "eval_ep_s": self.eval_ep_s,
            "video_paths": list(self.video_paths),
        }
        if self.n_episodes_failed:
            block["n_episodes_failed"] = self.n_episodes_failed
        return block

    @classmethod
    def from_json(cls, metrics: Mapping[str, Any]) -> Summary:
        """A summary from an aggregate block, computing the interval when an older file lacks it."""
        n = int(metrics.get("n_episodes") or 0)
        pc_success = metrics.get("pc_success")
        n_successes = metrics.get("n_successes")
        if n_successes is None and pc_success is not None:
            n_successes = round(pc_success * n / 100)
        interval = metrics.get("pc_success_ci95")
        if interval is None and n_successes is not None and n:
            interval = pc_wilson_interval(int(n_successes), n)
        return cls(
            n_episodes=n,
            n_successes=n_successes,
            pc_success=pc_success,
            pc_success_ci95=tuple(interval) if interval else None,
            pc_success_at_end=metrics.get("pc_success_at_end"),
            avg_sum_reward=metrics.get("avg_sum_reward"),
            avg_max_reward=metrics.get("avg_max_reward"),
            avg_episode_length=metrics.get("avg_episode_length"),
            eval_s=metrics.get("eval_s"),
            video_paths=tuple(metrics.get("video_paths") or ()),
            n_episodes_failed=int(metrics.get("n_episodes_failed") or 0),
        )


def scored(episodes: Iterable[EpisodeResult]) -> list[EpisodeResult]:
    """The episodes that count for the policy: all but those the harness failed."""
    return [e for e in episodes if not e.failure_reason]


@dataclass(frozen=True)
class TaskResult:
    """All episodes of one task of one group, with their summary."""

    group: str
    task_id: int
    task: str
    description: str
    episodes: tuple[EpisodeResult, ...]
    eval_s: float
    summary: Summary | None = None
    """Set when read from a file (it is what the file says); computed from the episodes otherwise."""

    def __post_init__(self) -> None:
        if self.summary is None:
            object.__setattr__(self, "summary", Summary.of(self.episodes, self.eval_s))

    @classmethod
    def of(cls, task: TaskSpec, episodes: Iterable[EpisodeResult], eval_s: float) -> TaskResult:
        """A task's result from its episodes, in episode order."""
        ordered = tuple(sorted(episodes, key=lambda e: e.episode_index))
        return cls(task.group, task.task_id, task.name, task.description, ordered, eval_s)

    @property
    def key(self) -> TaskKey:
        return self.group, self.task_id

    @property
    def video_paths(self) -> list[str]:
        return [e.video_path for e in self.episodes if e.video_path]

    def to_json(self) -> dict[str, Any]:
        """The task's `per_task` entry: its summary plus LeRobot's per-episode lists."""
        metrics = self.summary.to_json()
        counted = scored(self.episodes)
        metrics.update(
            sum_rewards=[e.sum_reward for e in counted],
            max_rewards=[e.max_reward for e in counted],
            successes=[e.success for e in counted],
        )
        return {
            "task_group": self.group,
            "task_id": self.task_id,
            "task": self.task,
            "task_description": self.description,
            "metrics": metrics,
        }


@dataclass(frozen=True)
class MissingEpisode:
    """An episode that a merged run should have and no shard finished."""

    task_group: str
    task_id: int
    episode_index: int


@dataclass(frozen=True)
class RunResult:
    """One evaluation run: its tasks in evaluation order, their suites, the whole run, and
    what the run says of itself. Build it with `RunResult.of`, which computes the summaries."""

    tasks: tuple[TaskResult, ...]
    groups: Mapping[str, Summary]
    """Per-suite summaries, suites in the order their first task appears."""
    overall: Summary
    complete: bool
    """False when the run was interrupted, a merge lacks episodes, or an episode failed for
    good because of the harness (`--eval.resume=true` re-runs those)."""
    n_episodes_retried: int
    """Episodes that needed at least one re-run after a crash or hang."""
    n_episodes_failed: int
    """Episodes whose every attempt failed."""
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """Settings, versions, host and times (free-form JSON; see `evaluation.provenance`)."""
    missing_episodes: tuple[MissingEpisode, ...] | None = None
    """Merged runs only: the episodes no shard finished."""
    merged_from: tuple[str, ...] | None = None
    """Merged runs only: the shard directories."""
    output_dir: Path | None = None
    """Where the run's files are, when it was read back from disk."""

    @classmethod
    def of(cls, tasks: Iterable[TaskResult], eval_s: float, complete: bool = True, **extra: Any) -> RunResult:
        """The run of these tasks; `eval_s` is the run's wall time."""
        tasks = tuple(tasks)
        episodes = [e for task in tasks for e in task.episodes]
        n_failed = sum(1 for e in episodes if e.failure_reason)
        return cls(
            tasks=tasks,
            groups=_group_summaries(tasks),
            overall=Summary.of(episodes, eval_s),
            complete=complete and not n_failed,
            n_episodes_retried=sum(1 for e in episodes if e.retries),
            n_episodes_failed=n_failed,
            **extra,
        )

    @property
    def episodes(self) -> list[EpisodeResult]:
        return [e for task in self.tasks for e in task.episodes]

    def with_provenance(self, provenance: Mapping[str, Any]) -> RunResult:
        return replace(self, provenance=dict(provenance))

    # -- eval_info.json ---------------------------------------------------------------------

    def to_eval_info(self) -> dict[str, Any]:
        """The whole eval_info.json document (strict JSON: null, never NaN).

        `overall` is repeated as `aggregated` so that tools written for LeRobot's single-task
        output read our multi-task output too.
        """
        overall = self.overall.to_json()
        info: dict[str, Any] = {
            "per_episode": [episode_record(e, t) for t in self.tasks for e in t.episodes],
            "per_task": [t.to_json() for t in self.tasks],
            "per_group": {group: summary.to_json() for group, summary in self.groups.items()},
            "overall": overall,
            "aggregated": dict(overall),
            "complete": self.complete,
            "n_episodes_retried": self.n_episodes_retried,
            "n_episodes_failed": self.n_episodes_failed,
        }
        per_perturbation = per_perturbation_json(self.groups)
        if per_perturbation is not None:
            info["per_perturbation"] = per_perturbation
        if self.missing_episodes is not None:
            info["missing_episodes"] = [asdict(m) for m in self.missing_episodes]
        if self.merged_from is not None:
            info["merged_from"] = list(self.merged_from)
        if self.provenance:
            info["provenance"] = dict(self.provenance)
        return to_strict_json(info)

    # -- what reports show ------------------------------------------------------------------

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.provenance.get("config") or {})

    @property
    def name(self) -> str:
        if self.config.get("job_name"):
            return self.config["job_name"]
        return self.output_dir.name if self.output_dir is not None else "run"

    @property
    def has_suites(self) -> bool:
        """Whether suites group several tasks; Meta-World task lists make one suite per task."""
        return any(task.group != task.task for task in self.tasks)

    def title(self) -> str:
        policy = (self.config.get("policy") or {}).get("type")
        env = (self.config.get("env") or {}).get("type")
        return f"{policy} on {env}" if policy and env else self.name


def episode_record(episode: EpisodeResult, task: TaskResult | None = None) -> dict[str, Any]:
    """An episode's `per_episode` entry: its task (when it has one), its fields, LeRobot's index name."""
    record: dict[str, Any] = {}
    if task is not None:
        record.update(task_group=task.group, task_id=task.task_id, task=task.task)
    record.update(episode.to_record())
    record["episode_ix"] = episode.episode_index  # LeRobot's name for the same field
    return record


class UnreadableResultsError(ValueError):
    """An output directory without a readable eval_info.json; the message names the file."""


def load_run(output_dir: Path) -> RunResult:
    """Read `<output_dir>/eval_info.json`."""
    path = Path(output_dir) / EVAL_INFO_FILENAME
    if not path.is_file():
        raise UnreadableResultsError(
            f"{output_dir}: no {EVAL_INFO_FILENAME}; is it a lerobot-eval --output_dir?"
        )
    try:
        info = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UnreadableResultsError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(info, dict):
        raise UnreadableResultsError(
            f"{path}: not an eval_info.json (a JSON {type(info).__name__}, not an object)"
        )
    if not any(info.get(key) for key in RESULT_KEYS):
        raise UnreadableResultsError(f"{path}: holds no results (none of {', '.join(RESULT_KEYS)})")
    return run_from_eval_info(info, Path(output_dir))


def run_from_eval_info(info: Mapping[str, Any], output_dir: Path | None = None) -> RunResult:
    """A run as an eval_info.json document describes it (ours, older ones, or LeRobot's)."""
    episodes_by_task: dict[TaskKey, list[EpisodeResult]] = {}
    for record in info.get("per_episode") or []:
        key = (str(record.get("task_group", "")), int(record.get("task_id", 0)))
        episodes_by_task.setdefault(key, []).append(EpisodeResult.from_record(record))
    tasks = tuple(_task_from_json(t, episodes_by_task) for t in info.get("per_task") or [])
    overall = info.get("overall") or info.get("aggregated") or {}
    if not tasks and episodes_by_task:  # LeRobot's single-task shape: episodes, no tasks
        (group, task_id), episodes = next(iter(episodes_by_task.items()))
        tasks = (TaskResult(group, task_id, "", "", tuple(episodes), 0.0, Summary.from_json(overall)),)
    return RunResult(
        tasks=tasks,
        groups={g: Summary.from_json(m) for g, m in (info.get("per_group") or {}).items()},
        overall=Summary.from_json(overall),
        complete=info.get("complete", True) is not False,
        n_episodes_retried=int(info.get("n_episodes_retried") or 0),
        n_episodes_failed=int(info.get("n_episodes_failed") or 0),
        provenance=info.get("provenance") or {},
        missing_episodes=_missing_from_json(info.get("missing_episodes")),
        merged_from=tuple(info["merged_from"]) if info.get("merged_from") is not None else None,
        output_dir=Path(output_dir) if output_dir is not None else None,
    )


def _task_from_json(entry: Mapping[str, Any], episodes: Mapping[TaskKey, list[EpisodeResult]]) -> TaskResult:
    group = str(entry.get("task_group", ""))
    task_id = int(entry.get("task_id", 0))
    metrics = entry.get("metrics") or {}
    return TaskResult(
        group=group,
        task_id=task_id,
        task=str(entry.get("task") or group),
        description=str(entry.get("task_description") or ""),
        episodes=tuple(episodes.get((group, task_id), ())),
        eval_s=float(metrics.get("eval_s") or 0.0),
        summary=Summary.from_json(metrics),
    )


def _missing_from_json(entries: Any) -> tuple[MissingEpisode, ...] | None:
    if entries is None:
        return None
    return tuple(MissingEpisode(e["task_group"], e["task_id"], e["episode_index"]) for e in entries)


def _group_summaries(tasks: Sequence[TaskResult]) -> dict[str, Summary]:
    members: dict[str, list[TaskResult]] = {}
    for task in tasks:
        members.setdefault(task.group, []).append(task)
    return {
        group: Summary.of([e for t in tasks for e in t.episodes], sum(t.eval_s for t in tasks))
        for group, tasks in members.items()
    }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
