"""The env contract: every registered `--env.type` is held to the same checks.

dm_control's suite_test runs every task through one contract; so does this file, over every
benchmark the registry knows (`EnvConfig.get_known_choices()`), so registering a config is
what enrols a benchmark, and its cheap settings (small images, a cheap task, a short episode)
come from its own `tiny_config()`: adding a benchmark needs no line here. Each one must

- parse without the simulator: its config module and default config load no gymnasium, NumPy,
  torch or simulator package;
- list its tasks: each with a group, an id, a name, an instruction, a frame rate and a step limit;
- state that step limit where LeRobot's code reads it, the env's `_max_episode_steps` (or its
  registered spec's limit);
- answer LeRobot's `create_envs` with our lazy vector envs, one per task, nothing started, and
  `get_env_processors` with processors that leave its batches and actions as they are.

And on its real simulator, in a vector env built by lerobot-eval's factory (`make_task_env`)
with one env in this process and one in a worker process (`--eval.envs_in_main_process=1`),
both reset with the same seed and stepped with the same actions, as episode 0 of a run:

- observations in the declared spaces, which become exactly the batch `policy_features()` says;
- the same observations, rewards and flags in both envs, and the first observation again when
  one is reset with the seed after the episode;
- `is_success` in every step's info;
- the episode truncated at the task's step limit, not before;
- a step asked to skip its images (`blind_ids`: the env's `step_without_images`, where it
  declares one) simulating the same step, its images black, `render()` still the real view;
- no process left once the vector env is closed.
"""

from __future__ import annotations

import copy
import json
import multiprocessing as mp
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

import lerobot.envs  # noqa: F401  (registers every built-in --env.type)
from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.configs.gym_env import probe
from lerobot.configs.types import FeatureType
from lerobot.envs.commands import StepResult
from lerobot.envs.factory import close_envs, make_task_env
from lerobot.envs.vector import LazyVectorEnv, stack_observations
from lerobot.processor.observation import observation_to_batch
from lerobot.utils.constants import ACTION, OBS_ENV_STATE, OBS_IMAGE, OBS_STATE

ENV_TYPES = sorted(EnvConfig.get_known_choices())
BUILT_IN = {"aloha", "libero", "libero_pro", "metaworld", "pusht"}
HEAVY = (
    "gymnasium",
    "numpy",
    "torch",
    "mujoco",
    "metaworld",
    "robosuite",
    "libero",
    "dm_control",
    "gym_aloha",
    "gym_pusht",
    "pygame",
    "pymunk",
)
"""What parsing a command line must not import: it checks the flags of every benchmark, and
answers in a fraction of a second (tests/scripts/test_startup.py times the whole CLI)."""
SEED = 1000
BLIND_STEP = 1
"""The step (0-based) at which the worker's env is asked to skip its images."""


def test_the_registry_holds_every_built_in_benchmark():
    """Guards the parametrization below against an empty or partial registry."""
    assert set(ENV_TYPES) >= BUILT_IN


# --- without a simulator ---------------------------------------------------------------
@pytest.mark.parametrize("env_type", ENV_TYPES)
def test_the_config_parses_without_the_simulator(env_type):
    """In a fresh interpreter: import the config's module and build the default config, what
    `--env.type=<type>` does."""
    module = EnvConfig.get_choice_class(env_type).__module__
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "from lerobot.configs.env import EnvConfig\n"
        f"EnvConfig.get_choice_class({env_type!r})()\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("env_type", ENV_TYPES)
@pytest.mark.parametrize("which", ["default", "tiny"])
def test_tasks_are_listed_with_a_name_an_instruction_a_frame_rate_and_a_step_limit(env_type, which):
    cls = EnvConfig.get_choice_class(env_type)
    cfg = cls() if which == "default" else cls.tiny_config()
    assert isinstance(cfg, cls)
    tasks = cfg.tasks()
    assert tasks, f"--env.type={env_type}: no task"
    for task in tasks:
        assert isinstance(task, TaskSpec)
        assert task.group and isinstance(task.group, str), task
        assert isinstance(task.task_id, int) and task.task_id >= 0, task
        assert task.name and isinstance(task.name, str), task
        assert task.description.strip() and isinstance(task.description, str), task
        assert isinstance(task.fps, int) and task.fps > 0, task
        assert isinstance(task.max_steps, int) and task.max_steps > 0, task
    assert len({task.key for task in tasks}) == len(tasks)


@pytest.mark.parametrize("env_type", ENV_TYPES)
def test_the_step_limit_is_the_one_the_env_states(env_type):
    """LeRobot's rollout reads `_max_episode_steps` from the env (its `env.call`); the limit each
    task declares must be that one. The envs are built, not started: no simulator."""
    cfg = EnvConfig.get_choice_class(env_type)()
    for task in cfg.tasks():
        assert probe(cfg.env_factory(task.name)).max_episode_steps == task.max_steps, task.name


@pytest.mark.parametrize("env_type", ENV_TYPES)
def test_create_envs_gives_a_lazy_vector_env_per_task_with_nothing_started(env_type):
    cfg = EnvConfig.get_choice_class(env_type).tiny_config()
    envs = cfg.create_envs(n_envs=2, use_async_envs=True)
    try:
        assert not cfg.builds_own_envs
        by_key = {(group, task_id): env for group, by_id in envs.items() for task_id, env in by_id.items()}
        assert {task.key: task for task in cfg.tasks()} == {key: env.task for key, env in by_key.items()}
        for env in by_key.values():
            assert isinstance(env, LazyVectorEnv) and env.num_envs == 2 and not env.started
    finally:
        close_envs(envs)


@pytest.mark.parametrize("env_type", ENV_TYPES)
def test_its_env_processors_leave_its_batches_and_actions_as_they_are(env_type):
    """Our envs give the policy's format already (LIBERO's step leaves it as it is). The
    pipelines' output is LeRobot's flat batch (a transition's parts under their batch keys)."""
    preprocessor, postprocessor = EnvConfig.get_choice_class(env_type).tiny_config().get_env_processors()
    state, action = torch.arange(8.0).reshape(2, 4), torch.ones(2, 7)
    batch = preprocessor({OBS_STATE: state, "task": ["a", "b"]})
    assert [k for k in batch if k.startswith("observation.")] == [OBS_STATE] and batch["action"] is None
    assert batch[OBS_STATE] is state and batch["task"] == ["a", "b"]
    assert postprocessor({ACTION: action})[ACTION] is action


# --- on the real simulator ---------------------------------------------------------------
@dataclass(frozen=True)
class ContractRun:
    """One tiny episode of the benchmark's first tiny task: slot 0 in this process, slot 1 in a
    worker, both reset with SEED and stepped with the same actions."""

    config: EnvConfig
    task: TaskSpec
    observation_space: gym.spaces.Space
    """One env's, as the vector env was built with it."""
    action_space: gym.spaces.Space
    resets: list[tuple[Any, dict]]
    steps: list[list[StepResult]]
    """Per step, both slots' results; slot 1 was asked to skip its images at BLIND_STEP."""
    declares_steps_without_images: bool
    frames_after_blind_step: list[np.ndarray]
    stated_limits: tuple[Any, ...]
    reset_again: tuple[Any, dict]
    """The worker's env reset with SEED again after the episode (one slot only: a LIBERO
    reset rebuilds its scene, seconds)."""
    worker_processes: set[int]
    """The worker and every process below it, just before the close."""
    running_after_close: set[int]


def run_tiny_episode(env_type: str) -> ContractRun:
    """Reset both slots, step them to the end of the episode, reset the worker's again, close."""
    cfg = EnvConfig.get_choice_class(env_type).tiny_config()
    task = cfg.tasks()[0]
    env = make_task_env(cfg, task, n_envs=2, use_async_envs=True, in_process_slots=1)
    before = set(mp.active_children())
    both, options = [0, 1], [{"episode_index": 0}] * 2
    try:
        resets = env.reset_at(both, [SEED, SEED], options)
        steps, frames = [], []
        for k, action in enumerate(fixed_actions(env.single_action_space, task.max_steps)):
            steps.append(env.step_at(both, [action, action], blind_ids=[1] if k == BLIND_STEP else []))
            if k == BLIND_STEP:
                frames = env.render_at(both)
            if any(result.terminated or result.truncated for result in steps[-1]):
                break
        stated_limits = env.call("_max_episode_steps")
        [reset_again] = env.reset_at([1], [SEED], options[:1])
        workers = set(mp.active_children()) - before
        processes = set().union(*(process_tree(worker.pid) for worker in workers))
    finally:
        env.close()
    running = {pid for pid in processes if is_running(pid)}
    declares = declares_steps_without_images(cfg, task)
    return ContractRun(
        cfg,
        task,
        env.single_observation_space,
        env.single_action_space,
        resets,
        steps,
        declares,
        frames,
        stated_limits,
        reset_again,
        processes,
        running,
    )


def declares_steps_without_images(cfg: EnvConfig, task: TaskSpec) -> bool:
    """Whether the task's env offers `step_without_images`, as a worker asks it (the env is
    built, not started: no simulator)."""
    env = cfg.env_factory(task.name)()
    try:
        return hasattr(env, "step_without_images")
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_type", ENV_TYPES)
def test_the_env_contract_on_the_real_simulator(env_type, subtests):
    """One tiny episode, then each clause of the contract on what it returned, reported on its
    own (`SUBFAILED[<clause>]`): one run per benchmark, a LIBERO scene costing seconds to build."""
    run = run_tiny_episode(env_type)
    for clause in SIMULATOR_CLAUSES:
        with subtests.test(clause.__name__):
            clause(run)


def fixed_actions(space: gym.spaces.Space, n: int) -> list[np.ndarray]:
    """`n` actions drawn from the action space with a fixed seed: the same in every run."""
    space = copy.deepcopy(space)
    space.seed(0)
    return [space.sample() for _ in range(n)]


def policy_features_are_the_batch_a_reset_becomes(run: ContractRun) -> None:
    """What lerobot-eval checks a checkpoint against before anything starts must be what the
    policy then receives: the keys, shapes and dtypes of `observation_to_batch`."""
    observations = [obs for obs, _ in run.resets]
    for obs in observations:
        assert layout(obs) == space_layout(run.observation_space)
    batch = observation_to_batch(stack_observations(observations))
    features = run.config.policy_features()
    assert {key: (tuple(value.shape), value.dtype) for key, value in batch.items()} == {
        key: ((2, *feature.shape), torch.float32) for key, feature in features.items() if key != ACTION
    }
    assert features[ACTION].shape == run.action_space.shape
    assert {key: feature.type for key, feature in features.items()} == {
        key: feature_type_of(key) for key in features
    }


def two_envs_reset_with_one_seed_and_stepped_alike_agree(run: ContractRun) -> None:
    (first, _), (second, _) = run.resets
    assert_same(first, second)
    for k, (in_process, in_worker) in enumerate(run.steps):
        blind = k == BLIND_STEP
        assert_same(in_process.observation, in_worker.observation, skip_images=blind)
        assert (in_process.reward, in_process.terminated, in_process.truncated) == (
            in_worker.reward,
            in_worker.terminated,
            in_worker.truncated,
        ), f"step {k}"
        assert_same(in_process.info, in_worker.info)


def a_reset_with_the_seed_starts_the_same_episode_whatever_ran_before(run: ContractRun) -> None:
    """The rollout reuses an env for episode after episode: episode e's start depends on its
    seed alone, and so does its result, on any batch size."""
    (first, _), (again, _) = run.resets[1], run.reset_again
    assert_same(first, again)


def every_step_reports_is_success(run: ContractRun) -> None:
    for k, results in enumerate(run.steps):
        for result in results:
            assert isinstance(result.info.get("is_success"), bool | np.bool_), f"step {k}: {result.info}"


def the_episode_is_truncated_at_the_step_limit(run: ContractRun) -> None:
    limit = run.task.max_steps
    assert run.stated_limits == (limit, limit)
    ended = [[r.terminated or r.truncated for r in results] for results in run.steps]
    assert ended == [[False, False]] * (limit - 1) + [[True, True]]
    assert [r.truncated for r in run.steps[-1]] == [True, True]


def a_step_without_images_is_the_same_step_with_black_images(run: ContractRun) -> None:
    """Where the env declares `step_without_images`, the blind step's observation is the normal
    one but for its camera images, which are black; `render()` after it still shows the real
    view and the next step renders again. Where it declares none, the step is a normal one."""
    assert len(run.steps) > BLIND_STEP + 1, "tiny_config(): the episode must outlast the blind step"
    seeing, blind = run.steps[BLIND_STEP]
    assert (seeing.images, blind.images) == (True, not run.declares_steps_without_images)
    seen = layout_leaves(seeing.observation)
    for path, image in layout_leaves(blind.observation).items():
        if path[0] == "pixels":
            assert (image.shape, image.dtype) == (seen[path].shape, seen[path].dtype)
            black = not image.any()
            assert black == run.declares_steps_without_images, path
    assert_same(*run.frames_after_blind_step)
    assert_same(*(result.observation for result in run.steps[BLIND_STEP + 1]))


def close_leaves_no_process(run: ContractRun) -> None:
    assert run.worker_processes, "the vector env started no worker process"
    assert run.running_after_close == set()


SIMULATOR_CLAUSES = (
    policy_features_are_the_batch_a_reset_becomes,
    two_envs_reset_with_one_seed_and_stepped_alike_agree,
    a_reset_with_the_seed_starts_the_same_episode_whatever_ran_before,
    every_step_reports_is_success,
    the_episode_is_truncated_at_the_step_limit,
    a_step_without_images_is_the_same_step_with_black_images,
    close_leaves_no_process,
)


# --- helpers -------------------------------------------------------------------------------
def layout_leaves(tree: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], np.ndarray]:
    """Every array of a (nested) observation or info dict, by its key path."""
    if isinstance(tree, Mapping):
        return {p: leaf for key, sub in tree.items() for p, leaf in layout_leaves(sub, (*path, key)).items()}
    return {path: np.asarray(tree)}


def layout(observation: Any) -> dict[tuple[str, ...], tuple[tuple[int, ...], np.dtype]]:
    return {path: (leaf.shape, leaf.dtype) for path, leaf in layout_leaves(observation).items()}


def space_layout(
    space: gym.spaces.Space, path: tuple[str, ...] = ()
) -> dict[tuple[str, ...], tuple[tuple[int, ...], np.dtype]]:
    if isinstance(space, gym.spaces.Dict):
        return {
            p: leaf
            for key, sub in space.spaces.items()
            for p, leaf in space_layout(sub, (*path, key)).items()
        }
    return {path: (space.shape, space.dtype)}


def assert_same(first: Any, second: Any, skip_images: bool = False) -> None:
    """Equal, array by array (camera images left out with `skip_images`)."""
    first_leaves, second_leaves = layout_leaves(first), layout_leaves(second)
    assert first_leaves.keys() == second_leaves.keys()
    for path, leaf in first_leaves.items():
        if not (skip_images and path[:1] == ("pixels",)):
            np.testing.assert_array_equal(leaf, second_leaves[path], err_msg=f"at {'/'.join(path)}")


def feature_type_of(key: str) -> FeatureType | None:
    """The feature type LeRobot's batch key implies."""
    if key == ACTION:
        return FeatureType.ACTION
    if key.startswith(OBS_IMAGE):  # observation.image and observation.images.<camera>
        return FeatureType.VISUAL
    return {OBS_STATE: FeatureType.STATE, OBS_ENV_STATE: FeatureType.ENV}.get(key)


def process_tree(pid: int) -> set[int]:
    """`pid` and every process below it (Linux's /proc)."""
    tree = {pid}
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            tree.update(*(process_tree(int(child)) for child in children.read_text().split()))
        except OSError:  # the thread or process just ended
            continue
    return tree


def is_running(pid: int) -> bool:
    """Whether `pid` is a process that has not ended (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
