"""Write rollouts as a LeRobot v3 dataset, episode by episode, without holding frames in memory.

The rollout loop reports (observation, action) pairs per env slot. While an episode runs, its
camera frames stream into one scratch mp4 per camera (under <root>/.recording) and its vectors
into small lists. When it ends and is kept, the dataset writer commits it (`writer`): once
`end_episode` returns, the files under root are a dataset that holds it, whatever happens to
the process next. An episode still running when the recording stops is dropped.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.configs.record import FileLimits
from lerobot.datasets import stats
from lerobot.datasets.recording_log import RecordingLog, Rollout
from lerobot.datasets.writer import DatasetWriter, FinishedEpisode
from lerobot.processor.observation import STATE_KEYS
from lerobot.utils.constants import ACTION, OBS_IMAGE, OBS_IMAGES
from lerobot.utils.signals import signals_deferred
from lerobot.utils.video import EpisodeVideo

logger = logging.getLogger(__name__)

SCRATCH_DIR = ".recording"


def split_observation(observation: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One env's observation as ({vector key: float32 array}, {camera key: uint8 HxWx3}), LeRobot keys."""
    vectors = {
        policy_key: np.asarray(observation[env_key], dtype=np.float32)
        for env_key, policy_key in STATE_KEYS.items()
        if env_key in observation
    }
    pixels = observation.get("pixels")
    if isinstance(pixels, Mapping):
        images = {f"{OBS_IMAGES}.{camera}": np.asarray(image) for camera, image in pixels.items()}
    elif pixels is not None:
        images = {OBS_IMAGE: np.asarray(pixels)}
    else:
        images = {}
    return vectors, images


@dataclass
class _RunningEpisode:
    """An episode in progress: its vectors, and its frames already on their way into mp4s."""

    scratch: Path
    fps: int
    vectors: dict[str, list[np.ndarray]] = field(default_factory=dict)
    videos: dict[str, EpisodeVideo] = field(default_factory=dict)
    pixels: dict[str, stats.PixelHistogram] = field(default_factory=dict)
    image_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def add(self, vectors: Mapping[str, np.ndarray], images: Mapping[str, np.ndarray]) -> None:
        for key, value in vectors.items():
            self.vectors.setdefault(key, []).append(value)
        for key, frame in images.items():
            if key not in self.videos:
                self.videos[key] = EpisodeVideo(self.scratch / f"{key}.mp4", self.fps)
                self.pixels[key] = stats.PixelHistogram()
                self.image_shapes[key] = tuple(frame.shape)
            self.videos[key].add(frame)
            self.pixels[key].add(frame)

    @property
    def length(self) -> int:
        return len(self.vectors.get(ACTION, []))

    def close(self) -> None:
        for video in self.videos.values():
            video.close()

    def discard(self) -> None:
        try:
            self.close()
        except OSError:  # its encoder died with the recording (a Ctrl-C reaches the whole group)
            logger.debug("an unfinished episode's video did not close; it is dropped anyway")
        shutil.rmtree(self.scratch, ignore_errors=True)

    def finished(self, task: str) -> FinishedEpisode:
        self.close()
        return FinishedEpisode(
            task=task,
            vectors={key: np.stack(values) for key, values in self.vectors.items()},
            videos={key: video.path for key, video in self.videos.items()},
            image_shapes=self.image_shapes,
            image_stats={key: histogram.stats() for key, histogram in self.pixels.items()},
        )


class DatasetRecorder:
    """Collects episodes and commits the kept ones to a LeRobot v3 dataset under `root`.

    With a `log`, meta/recording.json says which rollouts are done (kept or not) and with
    which seeds, so that `resume` can run the missing ones.
    """

    def __init__(
        self,
        root: Path,
        fps: int,
        task: str,
        limits: FileLimits | None = None,
        log: RecordingLog | None = None,
        writer: DatasetWriter | None = None,
    ):
        self.root = Path(root)
        self.task = task
        self.writer = writer or DatasetWriter(self.root, fps, limits)
        self.fps = self.writer.fps
        self.log = log
        self.scratch = self.root / SCRATCH_DIR
        self.running: dict[int, _RunningEpisode] = {}

    @classmethod
    def resume(cls, root: Path, task: str, settings: Mapping[str, Any]) -> DatasetRecorder:
        """Append to the dataset at `root`, which a recording with a log wrote; `settings`
        replace the logged ones (they may differ only where results cannot)."""
        writer = DatasetWriter.reopen(root)
        log = RecordingLog.read(root, writer.n_episodes)
        for stale in Path(root, SCRATCH_DIR).glob("running-*"):  # a killed run's last episodes
            shutil.rmtree(stale)
        return cls(root, writer.fps, task, log=RecordingLog(settings, log.rollouts), writer=writer)

    def add_step(
        self, episode_index: int, observation: Mapping[str, Any], action: np.ndarray, step: int
    ) -> None:
        if step == 0:  # a new episode, or one re-run from its start after a crash
            if episode_index in self.running:
                self.running.pop(episode_index).discard()
            scratch = self.scratch / f"running-{episode_index}"
            self.running[episode_index] = _RunningEpisode(scratch, self.fps)
        vectors, images = split_observation(observation)
        vectors[ACTION] = np.asarray(action, dtype=np.float32)
        self.running[episode_index].add(vectors, images)

    def close_episode(self, episode_index: int) -> None:
        """Finish writing an ended episode's scratch videos; `end_episode` appends or drops it
        later (an evaluation appends episodes in index order, not in the order they end)."""
        episode = self.running.get(episode_index)
        if episode is not None:
            episode.close()

    def end_episode(
        self, episode_index: int, keep: bool, task: str | None = None, seed: int | None = None
    ) -> None:
        """Commit the episode to the dataset (keep) or drop it; `task` defaults to the
        recorder's, `seed` goes to the log. A SIGINT or SIGTERM arriving meanwhile is raised
        once the commit is complete: an episode that ended is kept whole or not at all."""
        episode = self.running.pop(episode_index, None)
        if episode is None:
            return
        with signals_deferred():
            if keep and episode.length > 0:
                self._commit(episode, episode_index, task or self.task, seed)
            else:
                episode.discard()
                self._log(Rollout(episode_index, seed, None))

    @property
    def n_episodes(self) -> int:
        return self.writer.n_episodes

    def close(self) -> None:
        """Drop the episodes still running and the scratch files; the dataset stays as the last
        commit left it, and a root left empty (nothing kept) is removed."""
        for episode in self.running.values():
            episode.discard()
        self.running.clear()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if not self.n_episodes and self.root.is_dir() and not any(self.root.iterdir()):
            self.root.rmdir()

    def finish(self) -> Path:
        """Close, and return the root; ValueError when no episode was kept."""
        self.close()
        if not self.n_episodes:
            raise ValueError(f"no episode was kept, so no dataset was written to {self.root}")
        logger.info("%d episodes (%d frames) in %s", self.n_episodes, self.writer.n_frames, self.root)
        return self.root

    def _commit(self, episode: _RunningEpisode, episode_index: int, task: str, seed: int | None) -> None:
        if self.log is not None:
            self.log = self.log.with_rollout(Rollout(episode_index, seed, self.n_episodes))
        self.writer.append(episode.finished(task), self.log.to_json() if self.log else None)
        shutil.rmtree(episode.scratch, ignore_errors=True)

    def _log(self, rollout: Rollout) -> None:
        if self.log is not None:
            self.log = self.log.with_rollout(rollout)
            self.writer.write_log(self.log.to_json())
