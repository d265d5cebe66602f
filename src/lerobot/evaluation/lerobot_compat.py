"""LeRobot's evaluation functions, for code written against `lerobot.scripts.lerobot_eval`.

`eval_policy` (one vector env) and `eval_policy_all` (LeRobot's {suite: {task_id: env}}) take
envs that are already built and return LeRobot's dict shapes. Underneath they are the same
runner and local backend as `lerobot-eval`, so results are identical to a CLI run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lerobot.configs.env import TaskSpec
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.backend import LocalBackend
from lerobot.evaluation.journal import EpisodeJournal
from lerobot.evaluation.plan import RunPlan
from lerobot.evaluation.results import episode_record
from lerobot.evaluation.rollout import RolloutSettings, task_of_env
from lerobot.evaluation.runner import run_plan
from lerobot.policies.pretrained import PreTrainedPolicy

EnvsByGroup = Mapping[str, Mapping[int, LazyVectorEnv]]


def eval_policy(
    env: LazyVectorEnv,
    policy: PreTrainedPolicy,
    env_preprocessor: Callable | None = None,
    env_postprocessor: Callable | None = None,
    preprocessor: Callable | None = None,
    postprocessor: Callable | None = None,
    n_episodes: int = 1,
    max_episodes_rendered: int = 0,
    videos_dir: Path | None = None,
    return_episode_data: bool = False,
    start_seed: int | None = None,
    continuous_batching: bool = True,
    rename_map: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run `n_episodes` on one vector env; LeRobot's single-task result shape.

    The processors are optional callables: the two preprocessors map the policy batch
    (env first), the two postprocessors map the action tensor (policy first). Videos go
    straight into `videos_dir`.
    """
    task = _ungrouped(task_of_env(env))
    settings = _settings(
        start_seed,
        max_episodes_rendered,
        videos_dir,
        continuous_batching,
        rename_map,
        (env_preprocessor, preprocessor, postprocessor, env_postprocessor),
    )
    run = run_plan(RunPlan((task,), n_episodes), LocalBackend(policy, settings, lambda _: env))
    result = run.tasks[0]
    info = {
        "per_episode": [episode_record(e) for e in result.episodes],
        "aggregated": result.summary.to_json(),
        "video_paths": result.video_paths,
    }
    if return_episode_data:
        info["episodes"] = list(result.episodes)
    return info


def eval_policy_all(
    envs: EnvsByGroup,
    policy: PreTrainedPolicy,
    env_preprocessor: Callable | None = None,
    env_postprocessor: Callable | None = None,
    preprocessor: Callable | None = None,
    postprocessor: Callable | None = None,
    n_episodes: int = 1,
    *,
    max_episodes_rendered: int = 0,
    videos_dir: Path | None = None,
    return_episode_data: bool = False,
    start_seed: int | None = None,
    continuous_batching: bool = True,
    rename_map: Mapping[str, str] | None = None,
    use_amp: bool = False,
    max_episode_retries: int = 2,
    journal: EpisodeJournal | None = None,
    shard: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Every task of every group, one after the other; per-task, per-group and overall results.

    Each task's env is closed as soon as its task is done, also when it fails, so at most one
    task's workers and simulators exist at any time. With a `journal`, episodes it already
    holds are not run again and every new episode is written to it as soon as it ends.
    """
    tasks = {
        _task_in_group(env, group, task_id): env
        for group, by_id in envs.items()
        for task_id, env in by_id.items()
    }
    settings = _settings(
        start_seed,
        max_episodes_rendered,
        videos_dir,
        continuous_batching,
        rename_map,
        (env_preprocessor, preprocessor, postprocessor, env_postprocessor),
        use_amp=use_amp,
        max_episode_retries=max_episode_retries,
    )
    done = journal.done_by_task() if journal is not None else {}
    plan = RunPlan(tuple(tasks), n_episodes, shard, done)
    backend = LocalBackend(policy, settings, lambda task: tasks[task])
    run = run_plan(plan, backend, journal)
    info = run.to_eval_info()
    if return_episode_data:
        info["episodes"] = {task.key: list(task.episodes) for task in run.tasks}
    return info


def _settings(
    start_seed: int | None,
    max_episodes_rendered: int,
    videos_dir: Path | None,
    continuous_batching: bool,
    rename_map: Mapping[str, str] | None,
    processors: tuple[Callable | None, Callable | None, Callable | None, Callable | None],
    **extra: Any,
) -> RolloutSettings:
    env_pre, pre, post, env_post = processors
    return RolloutSettings(
        start_seed=start_seed or 0,
        max_episodes_rendered=max_episodes_rendered,
        videos_dir=Path(videos_dir) if videos_dir else None,
        continuous_batching=continuous_batching,
        rename_map=dict(rename_map or {}),
        preprocessor=_compose(env_pre, pre),
        postprocessor=_compose(post, env_post),
        **extra,
    )


def _task_in_group(env: LazyVectorEnv, group: str, task_id: int) -> TaskSpec:
    """The env's task, under the suite and id of the dict it came in."""
    task = task_of_env(env)
    return TaskSpec(group, task_id, task.name, task.description, task.fps, task.max_steps)


def _ungrouped(task: TaskSpec) -> TaskSpec:
    """LeRobot's single-env evaluation reports no suite and writes videos without a task folder."""
    return TaskSpec("", 0, task.name, task.description, task.fps, task.max_steps)


def _compose(first: Callable | None, second: Callable | None) -> Callable | None:
    if first is None or second is None:
        return first or second
    return lambda value: second(first(value))
