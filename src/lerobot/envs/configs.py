"""The base of every benchmark config, and the one place that turns tasks into vector envs."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import draccus
import gymnasium as gym

from lerobot.configs.types import PolicyFeature
from lerobot.envs.vector import LazyVectorEnv

EnvsByGroup = dict[str, dict[int, LazyVectorEnv]]


@dataclass
class EnvConfig(draccus.ChoiceRegistry, abc.ABC):
    """One benchmark's settings, selected with `--env.type=<name>`.

    A subclass says which tasks a `--env.task` value means, how to build one env for a task
    and what its spaces are; `create_envs` does the rest the same way for every benchmark.
    """

    task: str | None = None
    fps: int = 30

    worker_preload: ClassVar[tuple[str, ...]] = ()
    """Modules that worker processes should have imported before they start (simulator
    packages that take seconds to import); they must not create any GL context on import."""

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

    @abc.abstractmethod
    def env_factory(self, task_name: str) -> Callable[[], gym.Env]:
        """A picklable callable that builds one (lazy) env of `task_name`."""

    @abc.abstractmethod
    def task_description(self, task_name: str) -> str:
        """The natural-language instruction of a task."""

    @abc.abstractmethod
    def observation_space(self) -> gym.spaces.Space:
        """One env's observation space, known without building a simulator."""

    @abc.abstractmethod
    def action_space(self) -> gym.spaces.Box:
        """One env's action space, known without building a simulator."""

    @abc.abstractmethod
    def policy_features(self) -> dict[str, PolicyFeature]:
        """What a policy receives and returns, under LeRobot's batch keys."""

    def create_envs(self, n_envs: int, use_async_envs: bool) -> EnvsByGroup:
        """{group: {task_id: VectorEnv}}; nothing starts until an env is first reset."""
        obs_space, act_space = self.observation_space(), self.action_space()
        return {
            group: {
                task_id: LazyVectorEnv(
                    [self.env_factory(task_name)] * n_envs,
                    obs_space,
                    act_space,
                    use_async=use_async_envs,
                    preload_modules=self.worker_preload,
                    metadata={
                        "render_fps": self.fps,
                        "task": task_name,
                        "task_description": self.task_description(task_name),
                    },
                )
                for task_id, task_name in tasks.items()
            }
            for group, tasks in self.indexed_task_groups().items()
        }


# LeRobot's names for the benchmark config classes -> (module, our class name).
_LEROBOT_CONFIG_NAMES = {
    "MetaworldEnv": ("lerobot.envs.metaworld", "MetaworldEnvConfig"),
    "LiberoEnv": ("lerobot.envs.libero", "LiberoEnvConfig"),
}


def __getattr__(name: str):
    """`lerobot.envs.configs.MetaworldEnv` and `.LiberoEnv`, LeRobot's names for the config classes."""
    if name in _LEROBOT_CONFIG_NAMES:
        import importlib

        module_name, class_name = _LEROBOT_CONFIG_NAMES[name]
        return getattr(importlib.import_module(module_name), class_name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
