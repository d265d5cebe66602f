"""`lerobot-record-sim`: roll a policy out in simulation and record the episodes as a LeRobot
dataset.

The episodes run through the same rollout loop as `lerobot-eval` (same seeds, same
observation-to-batch mapping); the loop's per-step hook feeds the dataset recorder, which
commits each kept episode to the dataset as it ends. A SIGINT or SIGTERM drops only the
episodes still running (an episode half-rolled-out has no honest place in a dataset); a
resume (`--resume=true`) runs the rollouts meta/recording.json does not list as done, each with
the seed it would have had, so the finished dataset is the one an uninterrupted run records.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lerobot.configs.env import TaskSpec
from lerobot.configs.record import FileLimits, RecordSimConfig
from lerobot.datasets.recorder import SCRATCH_DIR, DatasetRecorder
from lerobot.datasets.recording_log import RecordingLog
from lerobot.envs.factory import make_env_pre_post_processors, make_task_env
from lerobot.evaluation.adapters.record_sim_resume import recording_settings
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.factory import make_policy, make_pre_post_processors
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.dir_lock import locked_dir
from lerobot.utils.signals import stop_at_the_next_signal

logger = logging.getLogger(__name__)


def record_sim(cfg: RecordSimConfig) -> Path:
    """Roll out the episodes of cfg.n_episodes that --root lacks; commit those kept under cfg.root.

    The root is locked for the run (a second recording into it is refused) through a file in
    its scratch folder, which goes when the run ends.
    """
    policy = make_policy(cfg.policy, env_cfg=cfg.env)
    (task,) = cfg.env.tasks()
    scratch = cfg.root / SCRATCH_DIR
    scratch.mkdir(parents=True, exist_ok=True)
    with locked_dir(scratch, "--root"):
        recorder = open_recorder(cfg, task)
        try:
            pending = [e for e in range(cfg.n_episodes) if e not in recorder.log.done()]
            if pending:
                run_pending(cfg, task, policy, recorder, pending)
        except KeyboardInterrupt:  # SIGINT, or SIGTERM as `utils.signals.Interrupted`
            stop_at_the_next_signal()  # a second one ends the process at once; commits are atomic
            raise
        finally:
            recorder.close()
    logger.info("%d episodes rolled out of %d", len(recorder.log.done()), cfg.n_episodes)
    return recorder.finish()


def open_recorder(cfg: RecordSimConfig, task: TaskSpec) -> DatasetRecorder:
    """The recorder of a new dataset, or, with --resume=true, of the one under --root."""
    if cfg.resume:
        recorder = DatasetRecorder.resume(cfg.root, task.description, recording_settings(cfg))
        logger.info(
            "resuming: %d episodes in %s, %d of %d rollouts done",
            recorder.n_episodes,
            cfg.root,
            len(recorder.log.done()),
            cfg.n_episodes,
        )
        return recorder
    return DatasetRecorder(
        cfg.root,
        fps=task.fps,
        task=task.description,
        limits=FileLimits(cfg.chunks_size, cfg.data_files_size_in_mb, cfg.video_files_size_in_mb),
        log=RecordingLog(recording_settings(cfg)),
    )


def run_pending(
    cfg: RecordSimConfig,
    task: TaskSpec,
    policy: PreTrainedPolicy,
    recorder: DatasetRecorder,
    pending: list[int],
) -> None:
    """Roll out episodes `pending` (episode e from seed cfg.seed + e) into the recorder."""

    def on_episode_end(result: EpisodeResult) -> None:
        keep = (result.success or not cfg.only_successful) and result.failure_reason is None
        recorder.end_episode(result.episode_index, keep=keep, seed=result.seed)
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
    n_envs = min(cfg.batch_size, len(pending))
    env = make_task_env(cfg.env, task, n_envs, use_async_envs=n_envs > 1)
    try:
        run_episodes(env, policy, pending, settings, task, hooks)
    finally:
        env.close()
