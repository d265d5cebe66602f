"""Roll a policy out in simulation and record the episodes as a LeRobot dataset.

The episodes run through the same rollout loop as `lerobot-eval` (same seeds, same
observation-to-batch mapping); the loop's per-step hook feeds the recorder.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lerobot.configs.record import RecordSimConfig
from lerobot.datasets.recorder import DatasetRecorder
from lerobot.envs.factory import make_env
from lerobot.evaluation.evaluate import close_envs
from lerobot.evaluation.rollout import EpisodeResult, RolloutSettings, run_episodes
from lerobot.policies.factory import make_policy, make_pre_post_processors

logger = logging.getLogger(__name__)


def record_sim(cfg: RecordSimConfig) -> Path:
    """Run cfg.n_episodes episodes of the env's one task; write those kept under cfg.root."""
    policy = make_policy(cfg.policy, cfg.env)
    preprocessor, postprocessor = make_pre_post_processors(cfg.policy)
    envs = make_env(cfg.env, n_envs=min(cfg.batch_size, cfg.n_episodes), use_async_envs=cfg.batch_size > 1)
    env = next(iter(next(iter(envs.values())).values()))
    recorder = DatasetRecorder(
        cfg.root,
        fps=env.metadata.get("render_fps", cfg.env.fps),
        task=env.metadata["task_description"],
        limits=cfg.file_limits,
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

    settings = RolloutSettings(
        n_episodes=cfg.n_episodes,
        start_seed=cfg.seed,
        preprocessor=preprocessor,
        postprocessor=postprocessor,
        on_step=lambda _env_id, episode, observation, action, step: recorder.add_step(
            episode, observation, action, step
        ),
        on_episode_end=on_episode_end,
    )
    try:
        run_episodes(env, policy, settings)
    finally:
        close_envs(envs)
    logger.info("kept %d of %d episodes", recorder.n_episodes, cfg.n_episodes)
    return recorder.finish()
