"""A run plan: which episodes of which tasks this run still has to execute.

A config becomes a plan in one place (`RunPlan.from_config`): the env config names the tasks,
`--eval.n_episodes` and `--eval.shard` say which episodes each task has, and the journal of an
earlier attempt says which of those are already done. Backends only ever see work units cut
from the plan, so every backend runs exactly the same episodes with the same seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lerobot.configs.env import TaskSpec
from lerobot.configs.eval import EvalConfig
from lerobot.evaluation.results import EpisodeResult, TaskKey


@dataclass(frozen=True)
class WorkUnit:
    """Some episodes of one task, run together on one vector env."""

    task: TaskSpec
    episodes: tuple[int, ...]
    attempts: int = 0
    """Workers that died running these episodes so far (Ray)."""

    @property
    def task_key(self) -> TaskKey:
        return self.task.key


@dataclass(frozen=True)
class RunPlan:
    """The tasks of a run, the episodes each one has, and those already finished."""

    tasks: tuple[TaskSpec, ...]
    n_episodes: int
    """Episodes per task in the whole evaluation (all shards)."""
    shard: tuple[int, int] | None = None
    """(i, n): this run executes only episodes e with e % n == i."""
    done: Mapping[TaskKey, Mapping[int, EpisodeResult]] = field(default_factory=dict)
    """Episodes an earlier attempt finished (from the journal), by task and episode index."""

    @classmethod
    def from_config(
        cls,
        tasks: Sequence[TaskSpec],
        eval_cfg: EvalConfig,
        done: Mapping[TaskKey, Mapping[int, EpisodeResult]] | None = None,
    ) -> RunPlan:
        return cls(tuple(tasks), eval_cfg.n_episodes, eval_cfg.shard_spec, dict(done or {}))

    def episodes_of(self, task: TaskSpec) -> list[int]:
        """Every episode of `task` that this run (this shard) covers, done or not."""
        return shard_episodes(range(self.n_episodes), self.shard)

    def done_of(self, task: TaskSpec) -> dict[int, EpisodeResult]:
        return dict(self.done.get(task.key, {}))

    def pending_of(self, task: TaskSpec) -> list[int]:
        finished = self.done.get(task.key, {})
        return [e for e in self.episodes_of(task) if e not in finished]

    def units(self, unit_size: int | None = None) -> list[WorkUnit]:
        """The pending episodes cut into units of at most `unit_size` (None: one unit per task),
        task by task in evaluation order."""
        units = []
        for task in self.tasks:
            pending = self.pending_of(task)
            size = unit_size or max(1, len(pending))
            for start in range(0, len(pending), size):
                units.append(WorkUnit(task, tuple(pending[start : start + size])))
        return units

    @property
    def n_done(self) -> int:
        return sum(len(self.done.get(task.key, {})) for task in self.tasks)


def shard_episodes(episodes: Sequence[int] | range, shard: tuple[int, int] | None) -> list[int]:
    """The episodes of shard (i, n): those with e % n == i (all of them without a shard)."""
    if shard is None:
        return list(episodes)
    index, count = shard
    return [e for e in episodes if e % count == index]
