"""A run's tasks and the run itself, and the eval_info.json document they make.

A task's episodes make a `TaskResult`; the tasks of a run make a `RunResult`, which computes
its per-suite and overall `Summary`s and writes eval_info.json's shape (`to_eval_info`), with
the perturbed suites regrouped beside their base suites (`lerobot.evaluation.robustness`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from lerobot.configs.env import TaskSpec
from lerobot.evaluation.results.episodes import EpisodeResult, scored
from lerobot.evaluation.results.summary import Summary
from lerobot.evaluation.robustness import per_perturbation_json
from lerobot.utils.io import to_strict_json

TaskKey = tuple[str, int]
"""(task group, task id): a task's identity within a run."""


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
        """Whether suites group several tasks; a benchmark without suites makes one per task."""
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


def _group_summaries(tasks: Sequence[TaskResult]) -> dict[str, Summary]:
    members: dict[str, list[TaskResult]] = {}
    for task in tasks:
        members.setdefault(task.group, []).append(task)
    return {
        group: Summary.of([e for t in tasks for e in t.episodes], sum(t.eval_s for t in tasks))
        for group, tasks in members.items()
    }
