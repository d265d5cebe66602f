"""The base of every benchmark config, and the identity of a task.

A benchmark module (`lerobot.envs.metaworld`, ...) subclasses `EnvConfig` and registers it under
its `--env.type`. The config alone says which tasks a run has (`tasks()`): names,
descriptions, frame rate and step limit are known without starting a simulator or a worker, so
results, reports and CI scripts never need one to label a task.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import draccus

from lerobot.configs.types import PolicyFeature
from lerobot.utils.errors import ConfigError


@dataclass(frozen=True)
class TaskSpec:
    """One task of a run, as results, videos and reports name it.

    `group` is the suite (LIBERO) or the task itself (Meta-World task lists); `task_id` is the
    task's id within its group, which a subset keeps (LIBERO's `--env.task_ids=[3]` is task 3).
    """

    group: str
    task_id: int
    name: str
    description: str
    fps: int
    """Frame rate of the task's videos."""
    max_steps: int | None = None
    """Step limit per episode, when the benchmark has one."""

    @property
    def key(self) -> tuple[str, int]:
        """What identifies the task within a run (journal records, shards, resumes)."""
        return self.group, self.task_id

    @property
    def video_folder(self) -> str:
        """The folder of the task's videos under the run's `videos/`."""
        return f"{self.group}_{self.task_id}"

    @property
    def label(self) -> str:
        """Short name for progress bars and logs: the task when it is its own suite."""
        if not self.group or self.group == self.name:
            return self.name or f"task {self.task_id}"
        return f"{self.group} #{self.task_id}"


@dataclass
class EnvConfig(draccus.ChoiceRegistry, abc.ABC):
    """One benchmark's settings, selected with `--env.type=<name>`.

    A subclass says which tasks a `--env.task` value means, how to build one env for a task
    and what its spaces are; `lerobot.envs.factory` builds the vector envs the same way for
    every benchmark.
    """

    task: str | None = None
    fps: int = 30
    """Frame rate of the task's videos (and of recorded datasets)."""

    worker_preload: ClassVar[tuple[str, ...]] = ()
    """Modules that worker processes should have imported before they start (simulator
    packages that take seconds to import); they must not create any GL context on import."""

    def __post_init__(self) -> None:
        """Checks every benchmark shares; a subclass's own `__post_init__` calls it first."""
        if self.fps <= 0:
            raise ConfigError(f"--env.fps={self.fps}: must be a positive frame rate")

    @property
    def type(self) -> str:
        return self.get_choice_name(self.__class__)

    @abc.abstractmethod
    def task_groups(self) -> dict[str, list[str]]:
        """`--env.task` resolved to {group: [task name, ...]}, in evaluation order."""

    def indexed_task_groups(self) -> dict[str, dict[int, str]]:
        """{group: {task_id: task name}}: the ids results and video folders report.

        By default a task's id is its position in its group; a benchmark whose tasks have
        fixed ids of their own (LIBERO's suites) overrides this so that a subset keeps them.
        """
        return {group: dict(enumerate(tasks)) for group, tasks in self.task_groups().items()}

    def tasks(self) -> tuple[TaskSpec, ...]:
        """Every task of the run, in evaluation order."""
        return tuple(
            TaskSpec(
                group=group,
                task_id=task_id,
                name=name,
                description=self.task_description(name),
                fps=self.fps,
                max_steps=self.max_episode_steps(name),
            )
            for group, by_id in self.indexed_task_groups().items()
            for task_id, name in by_id.items()
        )

    def max_episode_steps(self, task_name: str) -> int | None:
        """The step limit of an episode of `task_name` (default: the config's `episode_length`)."""
        return getattr(self, "episode_length", None)

    @abc.abstractmethod
    def env_factory(self, task_name: str) -> Callable[[], Any]:
        """A picklable callable that builds one (lazy) gymnasium env of `task_name`."""

    @abc.abstractmethod
    def task_description(self, task_name: str) -> str:
        """The natural-language instruction of a task."""

    @abc.abstractmethod
    def observation_space(self) -> Any:
        """One env's gymnasium observation space, known without building a simulator."""

    @abc.abstractmethod
    def action_space(self) -> Any:
        """One env's gymnasium action space (a Box), known without building a simulator."""

    @abc.abstractmethod
    def policy_features(self) -> dict[str, PolicyFeature]:
        """What a policy receives and returns, under LeRobot's batch keys."""


def parse_name_list(value: list[str] | str, flag: str, allowed: Sequence[str]) -> list[str]:
    """A list of distinct names among `allowed`, from a list or a string.

    Strings come as `[a,b]` (draccus hands list syntax over as a string when the field may also
    be one), LeRobot's comma-joined `a,b`, or a single name.
    """
    if isinstance(value, str):
        text = value.strip().removeprefix("[").removesuffix("]")
        names = [n.strip().strip("'\"") for n in text.split(",")]
    else:
        names = list(value)
    if not names or len(set(names)) != len(names) or any(n not in allowed for n in names):
        example = ",".join(allowed[:2])
        raise ConfigError(
            f"{flag}={value!r}: give distinct names among {', '.join(allowed)} as a list, "
            f"e.g. {flag}='[{example}]'"
        )
    return names
