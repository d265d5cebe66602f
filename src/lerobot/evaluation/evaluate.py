"""Evaluate a policy on one vector env, on every task of a benchmark, or from a full config."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.envs.configs import EnvsByGroup
from lerobot.envs.factory import make_env
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.journal import EpisodeJournal
from lerobot.evaluation.metrics import (
    TaskResult,
    aggregate,
    build_eval_info,
    episode_record,
    write_eval_info,
)
from lerobot.evaluation.resume import prepare_output_dir
from lerobot.evaluation.rollout import EpisodeResult, RolloutSettings, run_episodes
from lerobot.policies.factory import make_policy
from lerobot.policies.pretrained import PreTrainedPolicy

logger = logging.getLogger(__name__)

DEFAULT_FPS = 30


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
    (env first), the two postprocessors map the action tensor (policy first).
    """
    settings = RolloutSettings(
        n_episodes=n_episodes,
        start_seed=start_seed or 0,
        max_episodes_rendered=max_episodes_rendered,
        videos_dir=videos_dir,
        fps=env.metadata.get("render_fps", DEFAULT_FPS),
        continuous_batching=continuous_batching,
        rename_map=dict(rename_map or {}),
        preprocessor=_compose(env_preprocessor, preprocessor),
        postprocessor=_compose(postprocessor, env_postprocessor),
    )
    task = _run_task(env, policy, "", 0, settings, journal=None)
    info = {
        "per_episode": [episode_record(e) for e in task.episodes],
        "aggregated": aggregate(task.episodes, task.eval_s),
        "video_paths": task.video_paths,
    }
    if return_episode_data:
        info["episodes"] = list(task.episodes)
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
) -> dict[str, Any]:
    """Every task of every group, one after the other; per-task, per-group and overall results.

    Each task's env is closed as soon as its task is done, also when it fails, so at most one
    task's workers and simulators exist at any time. With a `journal`, episodes it already
    holds are not run again and every new episode is written to it as soon as it ends.
    """
    started = time.perf_counter()
    settings = RolloutSettings(
        n_episodes=n_episodes,
        start_seed=start_seed or 0,
        max_episodes_rendered=max_episodes_rendered,
        videos_dir=Path(videos_dir) if videos_dir else None,
        continuous_batching=continuous_batching,
        use_amp=use_amp,
        max_episode_retries=max_episode_retries,
        rename_map=dict(rename_map or {}),
        preprocessor=_compose(env_preprocessor, preprocessor),
        postprocessor=_compose(postprocessor, env_postprocessor),
    )
    tasks = [
        _run_task(env, policy, group, task_id, settings, journal)
        for group, by_id in envs.items()
        for task_id, env in by_id.items()
    ]
    info = build_eval_info(tasks, time.perf_counter() - started, extra=_run_summary(tasks, complete=True))
    if return_episode_data:
        info["episodes"] = {(t.group, t.task_id): list(t.episodes) for t in tasks}
    return info


def evaluate(cfg: EvalPipelineConfig) -> dict[str, Any]:
    """What `lerobot-eval` does: build envs and policy, evaluate, write eval_info.json.

    Every finished episode goes to episodes.jsonl first. If the run is interrupted (Ctrl-C,
    SIGTERM), eval_info.json is still written from what finished, with `"complete": false`,
    and the interrupt propagates; `--eval.resume=true` picks up from there.
    """
    prepare_output_dir(cfg)
    journal = EpisodeJournal(cfg.output_dir)
    n_envs, use_async = cfg.eval.resolved_batch_size, cfg.eval.resolved_use_async
    logger.info("output dir: %s", cfg.output_dir)
    logger.info("envs per task: %d (%s)", n_envs, "async workers" if use_async else "in-process")
    if journal.records:
        logger.info("resuming: %d episodes already finished", len(journal.records))
    started = time.perf_counter()
    policy = make_policy(cfg.policy, cfg.env)
    envs = make_env(cfg.env, n_envs=n_envs, use_async_envs=use_async)
    for by_id in envs.values():
        for env in by_id.values():
            env.step_timeout_s = cfg.eval.step_timeout_s
    try:
        info = eval_policy_all(
            envs,
            policy,
            n_episodes=cfg.eval.n_episodes,
            max_episodes_rendered=cfg.eval.max_episodes_rendered,
            videos_dir=Path(cfg.output_dir) / "videos",
            start_seed=cfg.seed,
            continuous_batching=cfg.eval.continuous_batching,
            rename_map=cfg.rename_map,
            use_amp=cfg.policy.use_amp,
            max_episode_retries=cfg.eval.max_episode_retries,
            journal=journal,
        )
    except BaseException:
        write_eval_info(partial_eval_info(journal, envs, time.perf_counter() - started), cfg.output_dir)
        logger.warning("interrupted: eval_info.json holds the %d finished episodes", len(journal.records))
        raise
    finally:
        close_envs(envs)
    write_eval_info(info, cfg.output_dir)
    return info


def partial_eval_info(journal: EpisodeJournal, envs: EnvsByGroup, eval_s: float) -> dict[str, Any]:
    """eval_info.json from the journal alone, for a run that did not finish."""
    tasks = []
    for group, by_id in envs.items():
        for task_id, env in by_id.items():
            done = journal.done_episodes(group, task_id)
            if done:
                tasks.append(_task_result(env, group, task_id, sorted(done.values(), key=_index), 0.0))
    return build_eval_info(tasks, eval_s, extra=_run_summary(tasks, complete=False))


def close_envs(envs: EnvsByGroup) -> None:
    for by_id in envs.values():
        for env in by_id.values():
            env.close()


def _run_task(
    env: LazyVectorEnv,
    policy: PreTrainedPolicy,
    group: str,
    task_id: int,
    settings: RolloutSettings,
    journal: EpisodeJournal | None,
) -> TaskResult:
    """Run the episodes of one task that are not done yet, then close its env."""
    started = time.perf_counter()
    task_name, description = _task_identity(env)
    done = journal.done_episodes(group, task_id) if journal else {}

    def on_episode_end(result: EpisodeResult) -> None:
        if journal is not None:
            journal.append(group, task_id, task_name, description, result)

    settings = dataclasses.replace(
        settings,
        episode_indices=[e for e in range(settings.n_episodes) if e not in done],
        videos_dir=settings.videos_dir / f"{group}_{task_id}"
        if settings.videos_dir and group
        else settings.videos_dir,
        fps=env.metadata.get("render_fps", DEFAULT_FPS),
        on_episode_end=on_episode_end,
    )
    try:
        new = run_episodes(env, policy, settings)
    finally:
        env.close()
    episodes = sorted([*done.values(), *new], key=_index)
    result = _task_result(env, group, task_id, episodes, time.perf_counter() - started)
    logger.info(
        "%s task %d (%s): %.1f%% success over %d episodes (%d run now) in %.1fs",
        group or "task",
        task_id,
        task_name,
        aggregate(episodes, result.eval_s)["pc_success"] or 0.0,
        len(episodes),
        len(new),
        result.eval_s,
    )
    return result


def _task_result(
    env: LazyVectorEnv, group: str, task_id: int, episodes: list[EpisodeResult], eval_s: float
) -> TaskResult:
    task_name, description = _task_identity(env)
    return TaskResult(group, task_id, task_name, description, tuple(episodes), eval_s)


def _run_summary(tasks: list[TaskResult], complete: bool) -> dict[str, Any]:
    """Whether the run finished, and how many episodes needed re-runs or failed for good."""
    episodes = [e for t in tasks for e in t.episodes]
    return {
        "complete": complete,
        "n_episodes_retried": sum(1 for e in episodes if e.retries),
        "n_episodes_failed": sum(1 for e in episodes if e.failure_reason),
    }


def _task_identity(env: LazyVectorEnv) -> tuple[str, str]:
    """Task name and description, as the env config recorded them when it built the env."""
    return env.metadata.get("task", ""), env.metadata.get("task_description", "")


def _index(result: EpisodeResult) -> int:
    return result.episode_index


def _compose(first: Callable | None, second: Callable | None) -> Callable | None:
    if first is None or second is None:
        return first or second
    return lambda value: second(first(value))
