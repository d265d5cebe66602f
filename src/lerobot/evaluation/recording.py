"""Roll a policy out in simulation and record the episodes as a LeRobot dataset.

The episodes run through the same rollout loop as `lerobot-eval` (same seeds, same
observation-to-batch mapping); the loop's per-step hook feeds the dataset recorder. Two uses:
`lerobot-record-sim` (`record_sim`), and `lerobot-eval --eval.recording=true`, which records
every evaluated task into a dataset of its own (`EvalRecorders`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lerobot.configs.env import TaskSpec
from lerobot.configs.record import FileLimits, RecordSimConfig
from lerobot.datasets.recorder import DatasetRecorder
from lerobot.envs.factory import make_task_env
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.rollout import RolloutHooks, RolloutSettings, run_episodes
from lerobot.policies.factory import make_policy, make_pre_post_processors

logger = logging.getLogger(__name__)


def record_sim(cfg: RecordSimConfig) -> Path:
    """Run cfg.n_episodes episodes of the env's one task; write those kept under cfg.root."""
    policy = make_policy(cfg.policy, env_cfg=cfg.env)
    preprocessor, postprocessor = make_pre_post_processors(cfg.policy)
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

    settings = RolloutSettings(start_seed=cfg.seed, preprocessor=preprocessor, postprocessor=postprocessor)
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


class EvalRecorders:
    """`--eval.recording`: one LeRobot v3 dataset per evaluated task, under
    `<root>/<group>_<task_id>/` (LeRobot's layout; a task without a group writes into `root`).

    Every finished episode is recorded, successful or not; an episode the harness gave up on
    (its env kept crashing) is left out, as it has no complete rollout.
    """

    def __init__(self, root: Path, limits: FileLimits | None = None):
        self.root = Path(root)
        self.limits = limits or FileLimits()

    def __call__(self, task: TaskSpec, episodes: Sequence[int]) -> OrderedRecording:
        root = self.root / task.video_folder if task.group else self.root
        recorder = DatasetRecorder(root, fps=task.fps, task=task.description or task.name, limits=self.limits)
        return OrderedRecording(recorder, episodes)


class OrderedRecording:
    """Feeds a task's episodes to a dataset recorder in episode-index order.

    With continuous batching, episodes end in any order; appending them as they end would make
    dataset episode k some other evaluation episode. An episode that ends early waits (its
    videos already closed) until every episode before it has ended.
    """

    def __init__(self, recorder: DatasetRecorder, episodes: Sequence[int]):
        self.recorder = recorder
        self.waiting = sorted(episodes)
        self.ended: dict[int, bool] = {}

    def add_step(self, env_id: int, episode: int, observation: Any, action: Any, step: int) -> None:
        self.recorder.add_step(episode, observation, action, step)

    def end_episode(self, result: EpisodeResult) -> None:
        self.recorder.close_episode(result.episode_index)
        self.ended[result.episode_index] = result.failure_reason is None
        while self.waiting and self.waiting[0] in self.ended:
            episode = self.waiting.pop(0)
            self.recorder.end_episode(episode, keep=self.ended.pop(episode))

    def finish(self) -> None:
        """Append what ended (an interrupted run keeps its finished episodes) and write the
        dataset's metadata; a task without any recorded episode leaves no dataset."""
        for episode in sorted(self.ended):
            self.recorder.end_episode(episode, keep=self.ended.pop(episode))
        try:
            root = self.recorder.finish()
        except ValueError as exc:  # no episode kept
            logger.warning("recording: %s", exc)
            return
        logger.info("recorded %d episodes into %s", self.recorder.n_episodes, root)
