"""Write rollouts as a LeRobot v3 dataset, one episode at a time, without holding the videos.

The rollout loop reports (observation, action) pairs per env slot; the recorder buffers the
vectors of each running episode and, when an episode is kept, appends its frames to one mp4
per camera (encoded as they come) and its rows to the frame table. `finish` writes the
parquet files and the metadata.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.datasets import layout
from lerobot.evaluation.video import EpisodeVideo
from lerobot.processor.observation import STATE_KEYS
from lerobot.utils.constants import ACTION, OBS_IMAGE, OBS_IMAGES

logger = logging.getLogger(__name__)


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
class _EpisodeBuffer:
    vectors: dict[str, list[np.ndarray]] = field(default_factory=dict)
    images: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(self, vectors: Mapping[str, np.ndarray], images: Mapping[str, np.ndarray]) -> None:
        for key, value in vectors.items():
            self.vectors.setdefault(key, []).append(value)
        for key, value in images.items():
            self.images.setdefault(key, []).append(value)

    @property
    def length(self) -> int:
        return len(self.vectors.get(ACTION, []))


class _ImageStats:
    """Running per-channel min/max/mean/std of pixels in [0, 1] (LeRobot's image statistics)."""

    def __init__(self) -> None:
        self.sum = np.zeros(3)
        self.sum_sq = np.zeros(3)
        self.min = np.full(3, np.inf)
        self.max = np.full(3, -np.inf)
        self.n_pixels = 0
        self.n_frames = 0

    def add(self, frame: np.ndarray) -> None:
        pixels = frame.reshape(-1, 3).astype(np.float64) / 255.0
        self.sum += pixels.sum(0)
        self.sum_sq += (pixels**2).sum(0)
        self.min = np.minimum(self.min, pixels.min(0))
        self.max = np.maximum(self.max, pixels.max(0))
        self.n_pixels += len(pixels)
        self.n_frames += 1

    def as_json(self) -> dict[str, Any]:
        mean = self.sum / self.n_pixels
        std = np.sqrt(np.maximum(self.sum_sq / self.n_pixels - mean**2, 0.0))

        def per_channel(values: np.ndarray) -> list:
            return [[[float(v)]] for v in values]  # (3, 1, 1), as LeRobot stores image stats

        return {
            "min": per_channel(self.min),
            "max": per_channel(self.max),
            "mean": per_channel(mean),
            "std": per_channel(std),
            "count": [self.n_frames],
        }


class DatasetRecorder:
    """Collects episodes of one task and writes them as a LeRobot v3 dataset under `root`."""

    def __init__(self, root: Path, fps: int, task: str):
        self.root = Path(root)
        self.fps = fps
        self.task = task
        self.running: dict[int, _EpisodeBuffer] = {}
        self.kept: list[dict[str, np.ndarray]] = []  # per episode: key -> (T, D)
        self.videos: dict[str, EpisodeVideo] = {}
        self.image_shapes: dict[str, tuple[int, ...]] = {}
        self.image_stats: dict[str, _ImageStats] = {}
        self.video_offsets: list[dict[str, int]] = []  # per kept episode: camera -> first frame

    def add_step(
        self, episode_index: int, observation: Mapping[str, Any], action: np.ndarray, step: int
    ) -> None:
        if step == 0:  # a new episode, or one re-run from its start after a crash
            self.running[episode_index] = _EpisodeBuffer()
        vectors, images = split_observation(observation)
        vectors[ACTION] = np.asarray(action, dtype=np.float32)
        self.running[episode_index].add(vectors, images)

    def end_episode(self, episode_index: int, keep: bool) -> None:
        """Append the episode to the dataset (keep) or drop it."""
        buffer = self.running.pop(episode_index, None)
        if buffer is None or not keep or buffer.length == 0:
            return
        self.video_offsets.append(
            {key: self._video(key, frames[0]).n_frames for key, frames in buffer.images.items()}
        )
        for key, frames in buffer.images.items():
            for frame in frames:
                self.videos[key].add(frame)
                self.image_stats[key].add(frame)
        self.kept.append({key: np.stack(values) for key, values in buffer.vectors.items()})

    @property
    def n_episodes(self) -> int:
        return len(self.kept)

    def finish(self) -> Path:
        """Close the videos and write the frame table and the metadata; returns the root."""
        for video in self.videos.values():
            video.close()
        if not self.kept:
            raise ValueError(f"no episode was kept, so no dataset was written to {self.root}")
        import pyarrow.parquet as pq

        self.root.mkdir(parents=True, exist_ok=True)
        frames = self._frame_table()
        layout.data_file(self.root).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(frames, layout.data_file(self.root))
        layout.episodes_file(self.root).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self._episodes_table(), layout.episodes_file(self.root))
        pq.write_table(self._tasks_table(), self.root / layout.TASKS_PATH)
        self._write_json(layout.STATS_PATH, self._stats())
        self._write_json(layout.INFO_PATH, self._info(frames.num_rows))
        logger.info("wrote %d episodes (%d frames) to %s", self.n_episodes, frames.num_rows, self.root)
        return self.root

    def _video(self, key: str, first_frame: np.ndarray) -> EpisodeVideo:
        if key not in self.videos:
            self.videos[key] = EpisodeVideo(layout.video_file(self.root, key), self.fps)
            self.image_shapes[key] = tuple(first_frame.shape)
            self.image_stats[key] = _ImageStats()
        return self.videos[key]

    def _lengths(self) -> list[int]:
        return [len(episode[ACTION]) for episode in self.kept]

    def _frame_table(self):
        import pyarrow as pa

        lengths = self._lengths()
        columns: dict[str, Any] = {}
        for key in self.kept[0]:
            values = np.concatenate([episode[key] for episode in self.kept]).astype(np.float32)
            flat = pa.array(values.reshape(-1), type=pa.float32())
            columns[key] = pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
        frame_index = np.concatenate([np.arange(n) for n in lengths])
        columns["timestamp"] = pa.array((frame_index / self.fps).astype(np.float32))
        columns["frame_index"] = pa.array(frame_index.astype(np.int64))
        columns["episode_index"] = pa.array(np.repeat(np.arange(len(lengths)), lengths).astype(np.int64))
        columns["index"] = pa.array(np.arange(sum(lengths), dtype=np.int64))
        columns["task_index"] = pa.array(np.zeros(sum(lengths), dtype=np.int64))
        return pa.table(columns)

    def _episodes_table(self):
        import pyarrow as pa

        lengths = self._lengths()
        ends = np.cumsum(lengths)
        columns: dict[str, Any] = {
            "episode_index": pa.array(np.arange(len(lengths), dtype=np.int64)),
            "tasks": pa.array([[self.task]] * len(lengths), type=pa.list_(pa.string())),
            "length": pa.array(np.asarray(lengths, dtype=np.int64)),
            "data/chunk_index": pa.array(np.zeros(len(lengths), dtype=np.int64)),
            "data/file_index": pa.array(np.zeros(len(lengths), dtype=np.int64)),
            "dataset_from_index": pa.array((ends - lengths).astype(np.int64)),
            "dataset_to_index": pa.array(ends.astype(np.int64)),
        }
        for key in self.videos:
            starts = np.asarray([offsets[key] for offsets in self.video_offsets], dtype=np.float64)
            columns[f"videos/{key}/chunk_index"] = pa.array(np.zeros(len(lengths), dtype=np.int64))
            columns[f"videos/{key}/file_index"] = pa.array(np.zeros(len(lengths), dtype=np.int64))
            columns[f"videos/{key}/from_timestamp"] = pa.array(starts / self.fps)
            columns[f"videos/{key}/to_timestamp"] = pa.array((starts + lengths) / self.fps)
        columns["meta/episodes/chunk_index"] = pa.array(np.zeros(len(lengths), dtype=np.int64))
        columns["meta/episodes/file_index"] = pa.array(np.zeros(len(lengths), dtype=np.int64))
        return pa.table(columns)

    def _tasks_table(self):
        import pyarrow as pa

        return pa.table({"task_index": pa.array([0], type=pa.int64()), "task": pa.array([self.task])})

    def _stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {}
        for key in self.kept[0]:
            values = np.concatenate([episode[key] for episode in self.kept]).astype(np.float64)
            stats[key] = {
                "min": values.min(0).tolist(),
                "max": values.max(0).tolist(),
                "mean": values.mean(0).tolist(),
                "std": values.std(0).tolist(),
                "count": [len(values)],
            }
        for key, image_stats in self.image_stats.items():
            stats[key] = image_stats.as_json()
        return stats

    def _info(self, total_frames: int) -> dict[str, Any]:
        features: dict[str, Any] = {}
        for key, shape in self.image_shapes.items():
            features[key] = layout.video_feature(shape[0], shape[1], self.fps)
        for key in self.kept[0]:
            prefix = "action" if key == ACTION else key.rsplit(".", 1)[-1]
            features[key] = layout.vector_feature(self.kept[0][key].shape[1], prefix)
        features.update(layout.INDEX_FEATURES)
        return {
            "codebase_version": layout.CODEBASE_VERSION,
            "robot_type": None,
            "total_episodes": self.n_episodes,
            "total_frames": total_frames,
            "total_tasks": 1,
            "chunks_size": layout.CHUNKS_SIZE,
            "data_files_size_in_mb": layout.DATA_FILES_SIZE_IN_MB,
            "video_files_size_in_mb": layout.VIDEO_FILES_SIZE_IN_MB,
            "fps": self.fps,
            "splits": {"train": f"0:{self.n_episodes}"},
            "data_path": layout.DATA_PATH,
            "video_path": layout.VIDEO_PATH if self.videos else None,
            "features": features,
        }

    def _write_json(self, relative: str, payload: dict[str, Any]) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2))
