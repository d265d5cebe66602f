"""`lerobot-eval --eval.recording=true`: every evaluated task recorded into a LeRobot dataset of
its own, fed by the rollout's per-step hook while the evaluation runs (`EvalRecorders`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lerobot.configs.env import TaskSpec
from lerobot.configs.record import FileLimits
from lerobot.datasets.recorder import DatasetRecorder
from lerobot.evaluation.results import EpisodeResult

logger = logging.getLogger(__name__)


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
