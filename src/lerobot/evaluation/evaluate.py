"""Evaluate a policy on one vector env, on every task of a benchmark, or from a full config."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.envs.configs import EnvsByGroup
from lerobot.envs.factory import make_env
from lerobot.envs.vector import LazyVectorEnv
from lerobot.evaluation.metrics import (
    TaskResult,
    aggregate,
    build_eval_info,
    episode_record,
    write_eval_info,
)
from lerobot.evaluation.rollout import RolloutSettings, run_episodes
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
    task = _run_task(
        env,
        policy,
        group="",
        task_id=0,
        settings=RolloutSettings(
            n_episodes=n_episodes,
            start_seed=start_seed or 0,
            max_episodes_rendered=max_episodes_rendered,
            videos_dir=videos_dir,
            fps=env.metadata.get("render_fps", DEFAULT_FPS),
            continuous_batching=continuous_batching,
            rename_map=dict(rename_map or {}),
            preprocessor=_compose(env_preprocessor, preprocessor),
            postprocessor=_compose(postprocessor, env_postprocessor),
        ),
    )
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
) -> dict[str, Any]:
    """Every task of every group, one after the other; per-task, per-group and overall results.

    Each task's env is closed as soon as its task is done, also when it fails, so at most one
    task's workers and simulators exist at any time.
    """
    started = time.perf_counter()
    tasks: list[TaskResult] = []
    for group, by_id in envs.items():
        for task_id, env in by_id.items():
            settings = RolloutSettings(
                n_episodes=n_episodes,
                start_seed=start_seed or 0,
                max_episodes_rendered=max_episodes_rendered,
                videos_dir=Path(videos_dir) / f"{group}_{task_id}" if videos_dir else None,
                fps=env.metadata.get("render_fps", DEFAULT_FPS),
                continuous_batching=continuous_batching,
                use_amp=use_amp,
                rename_map=dict(rename_map or {}),
                preprocessor=_compose(env_preprocessor, preprocessor),
                postprocessor=_compose(postprocessor, env_postprocessor),
            )
            try:
                tasks.append(_run_task(env, policy, group, task_id, settings))
            finally:
                env.close()
    info = build_eval_info(tasks, time.perf_counter() - started)
    if return_episode_data:
        info["episodes"] = {(t.group, t.task_id): list(t.episodes) for t in tasks}
    return info


def evaluate(cfg: EvalPipelineConfig) -> dict[str, Any]:
    """What `lerobot-eval` does: build envs and policy, evaluate, write eval_info.json."""
    n_envs = cfg.eval.resolved_batch_size
    use_async = cfg.eval.resolved_use_async
    logger.info("output dir: %s", cfg.output_dir)
    logger.info("envs per task: %d (%s)", n_envs, "async workers" if use_async else "in-process")
    policy = make_policy(cfg.policy, cfg.env)
    envs = make_env(cfg.env, n_envs=n_envs, use_async_envs=use_async)
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
        )
    finally:
        close_envs(envs)
    write_eval_info(info, cfg.output_dir)
    return info


def close_envs(envs: EnvsByGroup) -> None:
    for by_id in envs.values():
        for env in by_id.values():
            env.close()


def _run_task(
    env: LazyVectorEnv, policy: PreTrainedPolicy, group: str, task_id: int, settings: RolloutSettings
) -> TaskResult:
    started = time.perf_counter()
    episodes = run_episodes(env, policy, settings)
    task_name, description = _task_identity(env)
    result = TaskResult(
        group=group,
        task_id=task_id,
        task=task_name,
        description=description,
        episodes=tuple(episodes),
        eval_s=time.perf_counter() - started,
    )
    logger.info(
        "%s task %d (%s): %.1f%% success over %d episodes in %.1fs",
        group or "task",
        task_id,
        task_name,
        aggregate(episodes, result.eval_s)["pc_success"] or 0.0,
        len(episodes),
        result.eval_s,
    )
    return result


def _task_identity(env: LazyVectorEnv) -> tuple[str, str]:
    """Task name and description, as the env config recorded them when it built the env."""
    return env.metadata.get("task", ""), env.metadata.get("task_description", "")


def _compose(first: Callable | None, second: Callable | None) -> Callable | None:
    if first is None or second is None:
        return first or second
    return lambda value: second(first(value))
