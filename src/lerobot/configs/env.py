"""The base of every benchmark config, and the identity of a task.

A benchmark package (`lerobot.envs.metaworld`, ...) subclasses `EnvConfig` and registers it under
its `--env.type`. The config alone says which tasks a run has (`tasks()`): names,
descriptions, frame rate and step limit are known without starting a simulator or a worker, so
results, reports and CI scripts never need one to label a task. It names its gymnasium env by an
entry-point string (`env_entry_point`, `"module:Class"`, as Gymnasium's registry does), so the
config's module never imports its env's: the env module, with gymnasium and the simulator
behind it, is imported only where an env is built.

A config written LeRobot's way, which only names a gym id (`gym_id`, by default
`gym_<type>/<task>`) and its `gym_kwargs` (and maybe LeRobot's `features` / `features_map`),
works too: every method below has a default for it, one task whose env `gym.make` builds (see
`lerobot.configs.gym_env`). The built-in benchmarks implement them all.

LeRobot's own way to build a benchmark's envs is a config method, `create_envs(n_envs,
use_async_envs)`, with `get_env_processors()` beside it. Both have defaults here: our lazy
vector envs of the config's tasks, and identity processors. A benchmark written for LeRobot
that overrides `create_envs` (`builds_own_envs`) is run on the vector envs it returns, and its
tasks and spaces are read from one build of them.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import draccus

from lerobot.configs import gym_env
from lerobot.configs.fields import facts
from lerobot.configs.types import PolicyFeature
from lerobot.utils.errors import ConfigError, require_extra

LAZY_ENVS = "lerobot.envs.factory:make_lazy_envs"
"""What the default `create_envs` runs: the env layer's builder of our lazy vector envs, named by
entry point (as a benchmark names its env class), so a config parses without the env layer."""
DEFAULT_ENV_PROCESSORS = "lerobot.envs.processors:build_env_processors"
"""What the default `get_env_processors` runs (the env layer's processors, named the same way)."""


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


@dataclass(frozen=True)
class Perturbation:
    """What a perturbed task group changes (`family`, e.g. reworded instructions) in which
    unperturbed group (`base_suite`): the pair that puts a perturbed result beside the result
    it is compared with."""

    family: str
    base_suite: str


@dataclass
class EnvConfig(draccus.ChoiceRegistry, abc.ABC):
    """One benchmark's settings, selected with `--env.type=<name>`.

    A subclass says which tasks a `--env.task` value means, how to build one env for a task
    and what its spaces are; `lerobot.envs.factory` builds the vector envs the same way for
    every benchmark.

    Fields that several env types share by name (`obs_type`, ...) are annotated `str` and
    checked in `__post_init__` (`require_choice`), never `Literal`: draccus registers every
    env type's fields on one argparse parser, where the last type's choices would refuse the
    other types' values (PushT's `environment_state_agent_pos`, Meta-World's `pixels`).
    """

    task: str | None = None
    """The task, group or comma list of tasks to evaluate (each benchmark lists its own)."""
    fps: int = 30
    """Frame rate of the recorded videos."""
    max_parallel_tasks: int = field(default=1, metadata=facts(result_neutral=True))
    """Tasks evaluated at the same time (LeRobot's flag), each in its own thread with its own
    copy of the policy and its own envs, so N x --eval.batch_size env workers; every episode's
    result is the same for any N."""
    disable_env_checker: bool = True
    """LeRobot's flag: skip gymnasium's env checker when an env is built with gym.make (envs
    named by a gym id); the built-in benchmarks never run it."""
    render_mode: str = "rgb_array"
    """LeRobot's flag; `rgb_array` (offscreen images) is the one mode here."""

    worker_preload: ClassVar[tuple[str, ...]] = ()
    """Modules that worker processes should have imported before they start (simulator
    packages that take seconds to import); they must not create any GL context on import."""
    native_bindings: ClassVar[tuple[str, ...]] = ()
    """Simulator binding modules (`mujoco`) that a process stepping these envs beside a policy
    imports before torch (see `lerobot.utils.import_order`: in the other order they run slower)."""
    simulator_distributions: ClassVar[tuple[str, ...]] = ()
    """The installed distributions (pip names) of the simulator, physics engine included, whose
    version changes this benchmark's results: every run records their versions in its
    provenance."""
    env_entry_point: ClassVar[str | None] = None
    """`"package.module:Class"`: the gymnasium env one task runs in, built with `env_kwargs`.
    None: LeRobot's gym-id configs, whose envs `gym.make` builds."""
    extra: ClassVar[str | None] = None
    """The extra of this package that installs the simulator (`pip install 'lerobot[<extra>]'`);
    None where it comes from elsewhere (plugins, LeRobot's gym-id configs)."""
    extra_modules: ClassVar[tuple[str, ...]] = ()
    """What `extra` installs that the envs import: one missing is a one-line error naming the
    extra while the command line is parsed."""

    def __post_init__(self) -> None:
        """Checks every benchmark shares; a subclass's own `__post_init__` calls it first."""
        if self.fps <= 0:
            raise ConfigError(f"--env.fps={self.fps}: must be a positive frame rate")
        if self.render_mode != "rgb_array":
            raise ConfigError(
                f"--env.render_mode={self.render_mode!r}: must be rgb_array (offscreen rendering)"
            )
        if self.extra is not None:
            require_extra(lambda: f"--env.type={self.type}", self.extra, self.extra_modules)

    @property
    def type(self) -> str:
        return self.get_choice_name(self.__class__)

    @classmethod
    def tiny_config(cls) -> EnvConfig:
        """The benchmark at its least cost with its simulator still running for real: one cheap
        task, small camera images, episodes of a few steps (at least 3). tests/envs/test_contract.py
        holds every registered `--env.type` to the env contract with it, so a benchmark states
        its own cheap settings here, beside its fields, and needs no line in the test.
        Default: the default config."""
        return cls()

    @property
    def fork_server_preload(self) -> tuple[str, ...]:
        """What the env workers' fork server imports before it forks any: the simulator
        bindings first, then the simulator package. MuJoCo's bindings run slower when other
        modules load before them (`lerobot.utils.import_order`): a Meta-World worker's step
        took 4% longer with Meta-World's own import order (numpy and gymnasium first) than with
        MuJoCo first (0.375 against 0.36 ms, six alternating runs), 15% longer after SciPy's
        pybind11 modules."""
        return (*self.native_bindings, *(m for m in self.worker_preload if m not in self.native_bindings))

    @property
    def format_type(self) -> str:
        """The env type whose observation format, and LeRobot's env processors, this one shares:
        its own, but LIBERO's for LIBERO-PRO (whose envs are LIBERO's, perturbed)."""
        return self.type

    def task_groups(self) -> dict[str, list[str]]:
        """`--env.task` resolved to {group: [task name, ...]}, in evaluation order.

        Default (LeRobot's single-task configs): one group named after the env type, holding
        `--env.task`.
        """
        return {self.type: [self.task or self.type]}

    def indexed_task_groups(self) -> dict[str, dict[int, str]]:
        """{group: {task_id: task name}}: the ids results and video folders report.

        By default a task's id is its position in its group; a benchmark whose tasks have
        fixed ids of their own (LIBERO's suites) overrides this so that a subset keeps them.
        """
        return {group: dict(enumerate(tasks)) for group, tasks in self.task_groups().items()}

    def tasks(self) -> tuple[TaskSpec, ...]:
        """Every task of the run, in evaluation order: for a config that builds its own envs,
        those its `create_envs` returns."""
        if self.builds_own_envs:
            return self._own_env_tasks()
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

    @classmethod
    def perturbation_of(cls, group: str) -> Perturbation | None:
        """The perturbation this benchmark declares for the task group named `group`; None for
        an unperturbed group or one it does not know (the default: no perturbed groups).

        Answered from the group name alone, without a config instance, because results and
        reports regroup runs read back from eval_info.json, whatever their env type or age.
        """
        return None

    def max_episode_steps(self, task_name: str) -> int | None:
        """The step limit of an episode of `task_name`: the config's `episode_length`, else (a
        gym-id config) `max_episode_steps` in its gym_kwargs or its registered limit."""
        limit = getattr(self, "episode_length", None)
        if limit is None and self.env_entry_point is None:
            limit = self.gym_kwargs.get("max_episode_steps") or self._gym_env_info().max_episode_steps
        return limit

    # --- LeRobot's env-building API -----------------------------------------------------
    def create_envs(self, n_envs: int, use_async_envs: bool = False) -> dict[str, dict[int, Any]]:
        """{suite: {task_id: vector env}}, `n_envs` envs for every task: LeRobot's method, which
        its `make_env` (and ours) calls.

        Default, for every built-in benchmark: our lazy vector envs (`LazyVectorEnv`), which start
        their simulators, in worker processes with `use_async_envs`, on first use. A benchmark
        written for LeRobot may override it to build its own gymnasium vector envs: `lerobot-eval`
        and in-training evaluation then run on those (`builds_own_envs`).
        """
        return gym_env.load_entry_point(LAZY_ENVS)(self, n_envs, use_async_envs)

    def get_env_processors(self) -> tuple[Any, Any]:
        """(preprocessor, postprocessor): LeRobot's env processors, applied by every evaluation
        around the policy's own. The preprocessor maps the observation batch before the policy's
        preprocessor; the postprocessor maps `{"action": tensor}` after the policy's
        postprocessor. Default: identities (our envs give the policy's format already)."""
        return gym_env.load_entry_point(DEFAULT_ENV_PROCESSORS)()

    def batched_slot_env(self, task: TaskSpec, n_envs: int) -> Any | None:
        """The slots of `task` as one batched simulation in this process (a `SlotEnv` of the
        benchmark's own, e.g. ManiSkill's GPU scenes: `n_envs` envs, one process), or None:
        one env per slot, in env workers (`LazyVectorEnv`), as every benchmark does by default."""
        return None

    @property
    def builds_own_envs(self) -> bool:
        """Whether this config overrides `create_envs` (a benchmark written for LeRobot): its
        runs step the vector envs it returns, with what of our seeding and isolation they allow,
        instead of our lazy envs of `env_factory`."""
        return type(self).create_envs is not EnvConfig.create_envs

    # --- LeRobot's gym-id configs ----------------------------------------------------------
    @property
    def package_name(self) -> str:
        """The package that registers the gym id (LeRobot's convention: `gym_<type>`)."""
        return f"gym_{self.type}"

    @property
    def gym_id(self) -> str:
        """The id `gym.make` builds the env from (LeRobot's convention: `<package>/<task>`)."""
        return f"{self.package_name}/{self.task}"

    @property
    def gym_kwargs(self) -> dict:
        """Keyword arguments of `gym.make` (LeRobot's configs define them)."""
        return {}

    def env_kwargs(self, task_name: str) -> dict[str, Any]:
        """The keyword arguments `env_entry_point`'s class is built with for `task_name`."""
        return {}

    @classmethod
    def env_class(cls) -> type:
        """The class `env_entry_point` names (imports its module, gymnasium and all)."""
        if cls.env_entry_point is None:
            raise TypeError(f"{cls.__name__} names no env_entry_point; its envs come from gym.make")
        return gym_env.load_entry_point(cls.env_entry_point)

    def env_factory(self, task_name: str) -> Callable[[], Any]:
        """A picklable callable that builds one (lazy) gymnasium env of `task_name`, inside the
        worker: `env_entry_point`'s class with `env_kwargs`, else (a gym-id config)
        `gym.make(self.gym_id, **self.gym_kwargs)`.
        """
        if self.env_entry_point is not None:
            return functools.partial(
                gym_env.make_entry_point_env, self.env_entry_point, self.env_kwargs(task_name)
            )
        return functools.partial(
            gym_env.make_gym_env,
            self.gym_id,
            self.package_name,
            self.disable_env_checker,
            dict(self.gym_kwargs),
        )

    def task_description(self, task_name: str) -> str:
        """The natural-language instruction of a task (default: the env's `task_description`)."""
        return self._gym_env_info().task_description

    def observation_space(self) -> Any:
        """One env's gymnasium observation space, known without building a simulator (read from
        one env built and closed in this process; the built-in envs build their simulators on
        first reset, so that costs nothing)."""
        return self._gym_env_info().observation_space

    def action_space(self) -> Any:
        """One env's gymnasium action space (a Box), known without building a simulator."""
        return self._gym_env_info().action_space

    def task_observation_space(self, task_name: str) -> Any:
        """The observation space of `task_name`'s env: `observation_space()` for a benchmark
        whose tasks share one (all but ManiSkill's groups, whose robots and objects differ)."""
        return self.observation_space()

    def task_action_space(self, task_name: str) -> Any:
        """The action space of `task_name`'s env: `action_space()` where the tasks share one."""
        return self.action_space()

    def action_dim(self) -> int | None:
        """The length of one action when actions are flat vectors (None otherwise): what a
        policy served elsewhere must return."""
        shape = self.action_space().shape
        return int(shape[0]) if len(shape) == 1 else None

    def policy_features(self) -> dict[str, PolicyFeature]:
        """What a policy receives and returns, under LeRobot's batch keys (default: LeRobot's
        `features` / `features_map` when the config has them, else the env's spaces)."""
        features = getattr(self, "features", None)
        if features:
            return gym_env.features_from_lerobot_map(features, getattr(self, "features_map", None) or {})
        return gym_env.features_from_spaces(self.observation_space(), self.action_space())

    def _gym_env_info(self) -> gym_env.GymEnvInfo:
        """Spaces, instruction and limits of the first task's env, read once."""
        if self.builds_own_envs:
            return next(iter(self._own_envs_info().values()))
        info = self.__dict__.get("_gym_env_info_cache")
        if info is None:
            first = next(iter(self.task_groups().values()))[0]
            info = gym_env.probe(self.env_factory(first))
            self.__dict__["_gym_env_info_cache"] = info
        return info

    def _own_envs_info(self) -> dict[tuple[str, int], gym_env.GymEnvInfo]:
        """What each task's vector env says of itself, from one build of `create_envs` (one env
        per task, closed again), read once."""
        infos = self.__dict__.get("_own_envs_info_cache")
        if infos is None:
            infos = gym_env.probe_created_envs(self.create_envs)
            if not infos:
                raise ConfigError(f"--env.type={self.type}: its create_envs(n_envs=1) returned no env")
            self.__dict__["_own_envs_info_cache"] = infos
        return infos

    def _own_env_tasks(self) -> tuple[TaskSpec, ...]:
        """The tasks of the envs `create_envs` builds: named as each env says (else
        `--env.task`), with this config's frame rate and its `episode_length` as step limit
        where it has one (LeRobot's field), else the env's."""
        return tuple(
            TaskSpec(
                group=group,
                task_id=task_id,
                name=info.name or self.task or "",
                description=info.task_description,
                fps=self.fps,
                max_steps=getattr(self, "episode_length", None) or info.max_episode_steps,
            )
            for (group, task_id), info in self._own_envs_info().items()
        )


class PerTaskSpaces:
    """For an `EnvConfig` whose tasks differ in spaces and features (ManiSkill's robots,
    robomimic's two-arm Transport): each task's read from its own env, built without its
    simulator, and the run's those of its first task. The config gives `task_names` and
    `task_policy_features(task_name)`; list this class before `EnvConfig` among its bases."""

    def observation_space(self) -> Any:
        return self.task_observation_space(self.task_names[0])

    def action_space(self) -> Any:
        return self.task_action_space(self.task_names[0])

    def task_observation_space(self, task_name: str) -> Any:
        """Read from the task's env, built without its simulator (nothing starts)."""
        return self.env_factory(task_name)().observation_space

    def task_action_space(self, task_name: str) -> Any:
        return self.env_factory(task_name)().action_space

    def policy_features(self) -> dict[str, PolicyFeature]:
        """The first task's (another task's may differ: `task_policy_features`)."""
        return self.task_policy_features(self.task_names[0])


def env_class_getter(
    module_name: str, class_name: str, config_class: type[EnvConfig]
) -> Callable[[str], Any]:
    """A module `__getattr__` giving `config_class`'s env class as `class_name`, where LeRobot
    code imports it from (`lerobot.envs.metaworld.MetaworldEnv`); the env module, gymnasium
    and all, is imported on first use, through the entry point."""

    def env_class_attribute(name: str) -> Any:
        if name == class_name:
            return config_class.env_class()
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return env_class_attribute


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
