"""`lerobot-record-sim`: roll a policy out in simulation and record the episodes as a LeRobot
dataset.

The episodes run through the same rollout loop as `lerobot-eval` (same seeds, same
observation-to-batch mapping); the loop's per-step hook feeds the dataset recorder.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lerobot.configs.record import FileLimits, RecordSimConfig
from lerobot.datasets.recorder import DatasetRecorder
from lerobot.envs.factory import make_env_pre_post_processors, make_task_env
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.factory import make_policy, make_pre_post_processors

logger = logging.getLogger(__name__)


def record_sim(cfg: RecordSimConfig) -> Path:
    """Run cfg.n_episodes episodes of the env's one task; write those kept under cfg.root."""
    policy = make_policy(cfg.policy, env_cfg=cfg.env)
    (task,) = cfg.env.tasks()
    recorder = DatasetRecorder(
        cfg.root,
        fps=task.fps,
        task=task.description,
        limits=FileLimits(cfg.chunks_size, cfg.data_files_size_in_mb, cfg.video_files_size_in_mb),
    )

    def on_episode_end(result: EpisodeResult) -> None:
        keep = result.success or not cfg.only_successful
        recorder.end_episode(result.episode_index, keep=keep and result.failure_reason is None)
        logger.info(
            "episode %d: %s after %d steps (%s)",
            result.episode_index,
            "success" if result.success else "failure",
            result.n_steps,
            "kept" if keep else "dropped",
        )

    settings = RolloutSettings(start_seed=cfg.seed).with_processors(
        make_pre_post_processors(cfg.policy), make_env_pre_post_processors(cfg.env, cfg.policy)
    )
    hooks = RolloutHooks(
        on_step=lambda _env_id, episode, observation, action, step: recorder.add_step(
            episode, observation, action, step
        ),
        on_episode_end=on_episode_end,
    )
    n_envs = min(cfg.batch_size, cfg.n_episodes)
    env = make_task_env(cfg.env, task, n_envs, use_async_envs=n_envs > 1)
    try:
        run_episodes(env, policy, range(cfg.n_episodes), settings, task, hooks)
    finally:
        env.close()
    logger.info("kept %d of %d episodes", recorder.n_episodes, cfg.n_episodes)
    return recorder.finish()
