"""Evaluate a policy on one vector env, on every task of a benchmark, or from a full config."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

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
from lerobot.evaluation.progress import task_progress
from lerobot.evaluation.provenance import collect_provenance, utc_now
from lerobot.evaluation.report import write_report
from lerobot.evaluation.report_text import render_task_table
from lerobot.evaluation.resume import encode_config, prepare_output_dir
from lerobot.evaluation.rollout import EpisodeResult, RolloutSettings, run_episodes
from lerobot.evaluation.run_results import run_from_info
from lerobot.policies.factory import make_policy
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.device import policy_device

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
    shard: tuple[int, int] | None = None,
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
        shard=shard,
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
    """What `lerobot-eval` does: build envs and policy, evaluate, write the results.

    Every finished episode goes to episodes.jsonl first. If the run is interrupted (Ctrl-C,
    SIGTERM), eval_info.json and the report are still written from what finished, with
    `"complete": false`, and the interrupt propagates; `--eval.resume=true` picks up from there.
    """
    from lerobot.policies.factory import make_pre_post_processors

    # Checkpoint problems surface here, before any output is written or simulator started.
    policy = make_policy(driver_policy_config(cfg), cfg.env)
    preprocessor, postprocessor = make_pre_post_processors(cfg.policy)
    if cfg.eval.backend == "ray":
        policy = None  # only a check: the actors build their own; free the memory now
    prepare_output_dir(cfg)
    journal = EpisodeJournal(cfg.output_dir)
    n_envs, use_async = cfg.eval.resolved_batch_size, cfg.eval.resolved_use_async
    logger.info("output dir: %s", cfg.output_dir)
    logger.info("envs per task: %d (%s)", n_envs, "async workers" if use_async else "in-process")
    n_resumed = len(journal.records)
    if n_resumed:
        logger.info("resuming: %d episodes already finished", n_resumed)
    started, started_at = time.perf_counter(), utc_now()
    if use_async and policy is not None:
        share_cores_with_workers(policy, n_envs)
    envs = make_env(cfg.env, n_envs=n_envs, use_async_envs=use_async)
    for by_id in envs.values():
        for env in by_id.values():
            env.step_timeout_s = cfg.eval.step_timeout_s
    try:
        if cfg.eval.backend == "ray":
            info = _evaluate_on_ray(cfg, journal, started)
        else:
            info = eval_policy_all(
                envs,
                policy,
                preprocessor=preprocessor,
                postprocessor=postprocessor,
                n_episodes=cfg.eval.n_episodes,
                max_episodes_rendered=cfg.eval.max_episodes_rendered,
                videos_dir=Path(cfg.output_dir) / "videos",
                start_seed=cfg.seed,
                continuous_batching=cfg.eval.continuous_batching,
                shard=cfg.eval.shard_spec,
                rename_map=cfg.rename_map,
                use_amp=cfg.policy.use_amp,
                max_episode_retries=cfg.eval.max_episode_retries,
                journal=journal,
            )
    except BaseException:
        partial = partial_eval_info(journal, envs, time.perf_counter() - started)
        write_results(cfg, partial, started_at, n_resumed, interrupted=True)
        logger.warning("interrupted: eval_info.json holds the %d finished episodes", len(journal.records))
        raise
    finally:
        close_envs(envs)
    write_results(cfg, info, started_at, n_resumed)
    return info


def driver_policy_config(cfg: EvalPipelineConfig):
    """The policy config this process builds with.

    On the Ray backend the driver builds the policy only to check the checkpoint before any
    actor starts, so it builds it on the CPU: a head node without a GPU can drive GPU actors
    with `--policy.device=cuda`.
    """
    if cfg.eval.backend != "ray" or cfg.policy.device in (None, "cpu"):
        return cfg.policy
    return dataclasses.replace(cfg.policy, device="cpu")


def _evaluate_on_ray(cfg: EvalPipelineConfig, journal: EpisodeJournal, started: float) -> dict[str, Any]:
    """The same evaluation, with episodes run by Ray actors (`--eval.backend=ray`)."""
    from lerobot.evaluation.ray_backend import run_tasks_on_ray  # imports ray

    tasks = run_tasks_on_ray(cfg, journal, Path(cfg.output_dir) / "videos")
    return build_eval_info(tasks, time.perf_counter() - started, extra=_run_summary(tasks, complete=True))


def write_results(
    cfg: EvalPipelineConfig,
    info: dict[str, Any],
    started_at: dt.datetime,
    n_resumed: int,
    interrupted: bool = False,
) -> None:
    """Add provenance to `info`, write eval_info.json, then report.html, summary.md and the log table.

    eval_info.json goes first: it is the record, the rest are views of it. After an interrupt,
    a failing report is only logged, so that the interrupt itself still decides the exit code.
    """
    info["provenance"] = collect_provenance(
        encode_config(cfg),
        started_at,
        utc_now(),
        [e["wall_s"] for e in info["per_episode"] if e.get("wall_s") is not None],
        n_resumed,
    )
    write_eval_info(info, cfg.output_dir)
    try:
        write_report(cfg.output_dir, info)
    except Exception:
        if not interrupted:
            raise
        logger.exception(
            "could not write report.html; rebuild it with lerobot-eval-report %s", cfg.output_dir
        )
    logger.info("results per task:\n%s", render_task_table(run_from_info(info, Path(cfg.output_dir))))


def partial_eval_info(journal: EpisodeJournal, envs: EnvsByGroup, eval_s: float) -> dict[str, Any]:
    """eval_info.json from the journal alone, for a run that did not finish."""
    tasks = []
    for group, by_id in envs.items():
        for task_id, env in by_id.items():
            done = journal.done_episodes(group, task_id)
            if done:
                tasks.append(_task_result(env, group, task_id, sorted(done.values(), key=_index), 0.0))
    return build_eval_info(tasks, eval_s, extra=_run_summary(tasks, complete=False))


def share_cores_with_workers(policy: PreTrainedPolicy, n_workers: int) -> None:
    """Leave the cores that env workers use to them when the policy runs on the CPU.

    Torch starts one thread per core; with simulator workers on the same cores, its threads
    fight them, and small models run many times slower than on a single thread.
    """
    if policy_device(policy).type != "cpu":
        return
    threads = max(1, (os.cpu_count() or 1) - n_workers)
    if threads < torch.get_num_threads():
        logger.info("policy on CPU: %d torch thread(s), the other cores step the envs", threads)
        torch.set_num_threads(threads)


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
    settings = dataclasses.replace(
        settings,
        episode_indices=[e for e in range(settings.n_episodes) if e not in done],
        videos_dir=settings.videos_dir / f"{group}_{task_id}"
        if settings.videos_dir and group
        else settings.videos_dir,
        fps=env.metadata.get("render_fps", DEFAULT_FPS),
    )
    label = _task_label(group, task_id, task_name)
    n_total = len(done) + len(settings.pending_episodes())
    with task_progress(label, n_total, list(done.values())) as progress:

        def on_episode_end(result: EpisodeResult) -> None:
            if journal is not None:
                journal.append(group, task_id, task_name, description, result)
            progress.update(result)
            _log_episode(label, result)

        try:
            new = run_episodes(env, policy, dataclasses.replace(settings, on_episode_end=on_episode_end))
        finally:
            env.close()
    episodes = sorted([*done.values(), *new], key=_index)
    result = _task_result(env, group, task_id, episodes, time.perf_counter() - started)
    metrics = aggregate(episodes, result.eval_s)
    low, high = metrics["pc_success_ci95"] or (0.0, 0.0)
    logger.info(
        "%s task %d (%s): %.1f%% success (95%% CI %.1f-%.1f) over %d episodes (%d run now) in %.1fs",
        group or "task",
        task_id,
        task_name,
        metrics["pc_success"] or 0.0,
        low,
        high,
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


def _log_episode(label: str, result: EpisodeResult) -> None:
    logger.debug(
        "%s episode %d (seed %d): %s after %d steps, %.1fs",
        label,
        result.episode_index,
        result.seed,
        "success" if result.success else "failure",
        result.n_steps,
        result.wall_s,
    )


def _task_label(group: str, task_id: int, task_name: str) -> str:
    """Short name for the progress bar: the task when it is its own suite, else suite and id."""
    if not group or group == task_name:
        return task_name or f"task {task_id}"
    return f"{group} #{task_id}"


def _task_identity(env: LazyVectorEnv) -> tuple[str, str]:
    """Task name and description, as the env config recorded them when it built the env."""
    return env.metadata.get("task", ""), env.metadata.get("task_description", "")


def _index(result: EpisodeResult) -> int:
    return result.episode_index


def _compose(first: Callable | None, second: Callable | None) -> Callable | None:
    if first is None or second is None:
        return first or second
    return lambda value: second(first(value))
