"""Write rollouts as a LeRobot v3 dataset, episode by episode, without holding frames in memory.

The rollout loop reports (observation, action) pairs per env slot. While an episode runs, its
camera frames stream into one scratch mp4 per camera and its vectors into small lists. When it
ends and is kept, its rows go to the current frame-table file and its mp4s join the current
video file of each camera; a file that would pass its size limit is closed first (see
`layout`). `finish` writes the episodes table, tasks, statistics and info.json.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.configs.record import FileLimits
from lerobot.datasets import layout, stats
from lerobot.datasets.layout import FileIndex
from lerobot.datasets.video_files import join_mp4s
from lerobot.processor.observation import STATE_KEYS
from lerobot.utils.constants import ACTION, OBS_IMAGE, OBS_IMAGES
from lerobot.utils.video import EpisodeVideo

logger = logging.getLogger(__name__)

MIB = 1024**2
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
        self.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


class _FileSplitter:
    """Places items of known size into chunk-XXX/file-YYY slots: an item goes to the current
    file unless it would take that file past `max_bytes`; a file always takes one item."""

    def __init__(self, max_bytes: float, chunks_size: int):
        self.max_bytes = max_bytes
        self.chunks_size = chunks_size
        self.where: FileIndex | None = None
        self.bytes_in_file = 0

    def place(self, n_bytes: int) -> FileIndex:
        if self.where is None:
            self.where = FileIndex()
        elif self.bytes_in_file + n_bytes > self.max_bytes:
            self.where, self.bytes_in_file = self.where.next(self.chunks_size), 0
        self.bytes_in_file += n_bytes
        return self.where


class _ParquetFiles:
    """A sequence of parquet files under one path template; one row group per write."""

    def __init__(self, root: Path, path_of, limits: FileLimits):
        self.root = root
        self.path_of = path_of  # (root, FileIndex) -> Path
        self.splitter = _FileSplitter(limits.data_files_size_in_mb * MIB, limits.chunks_size)
        self.writer = None
        self.writing: FileIndex | None = None

    def append(self, table) -> FileIndex:
        where = self.splitter.place(table.nbytes)
        self.write(where, table)
        return where

    def write(self, where: FileIndex, table) -> None:
        import pyarrow.parquet as pq

        if where != self.writing:
            self.close()
            path = self.path_of(self.root, where)
            path.parent.mkdir(parents=True, exist_ok=True)
            self.writer, self.writing = pq.ParquetWriter(path, table.schema), where
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class _VideoFiles:
    """One camera's video files. Kept episodes' mp4s wait in `pending` until the file they
    belong to is complete, then are joined into it in one pass."""

    def __init__(self, root: Path, key: str, limits: FileLimits, fps: int):
        self.root, self.key, self.fps = root, key, fps
        self.queue = root / SCRATCH_DIR / "queued" / key
        self.n_queued = 0
        self.splitter = _FileSplitter(limits.video_files_size_in_mb * MIB, limits.chunks_size)
        self.pending: list[Path] = []
        self.pending_at: FileIndex | None = None
        self.frames_in_file = 0

    def append(self, episode_mp4: Path, n_frames: int) -> tuple[FileIndex, int]:
        """Queue an episode's mp4; returns (its file, its first frame in that file)."""
        where = self.splitter.place(episode_mp4.stat().st_size)
        if where != self.pending_at:
            self.close()
            self.pending_at, self.frames_in_file = where, 0
        queued = self.queue / f"{self.n_queued}.mp4"
        queued.parent.mkdir(parents=True, exist_ok=True)
        episode_mp4.replace(queued)
        self.n_queued += 1
        self.pending.append(queued)
        first, self.frames_in_file = self.frames_in_file, self.frames_in_file + n_frames
        return where, first

    def close(self) -> None:
        if self.pending:
            join_mp4s(self.pending, layout.video_file(self.root, self.key, self.pending_at), self.fps)
            self.pending = []


class DatasetRecorder:
    """Collects episodes and writes them as a LeRobot v3 dataset under `root`."""

    def __init__(self, root: Path, fps: int, task: str, limits: FileLimits | None = None):
        self.root = Path(root)
        self.fps = fps
        self.task = task
        self.limits = limits or FileLimits()
        self.scratch = self.root / SCRATCH_DIR
        self.running: dict[int, _RunningEpisode] = {}
        self.frames = _ParquetFiles(self.root, layout.data_file, self.limits)
        self.videos: dict[str, _VideoFiles] = {}
        self.features: dict[str, dict] = {}
        self.tasks: dict[str, int] = {}
        self.episode_rows: list[dict[str, Any]] = []
        self.episode_stats: list[dict[str, stats.Stats]] = []
        self.n_frames = 0

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

    def end_episode(self, episode_index: int, keep: bool, task: str | None = None) -> None:
        """Append the episode to the dataset (keep) or drop it; `task` defaults to the recorder's."""
        episode = self.running.pop(episode_index, None)
        if episode is None:
            return
        if not keep or episode.length == 0:
            episode.discard()
            return
        episode.close()
        task = task or self.task
        self._describe_features(episode)
        columns = self._frame_columns(episode, self.tasks.setdefault(task, len(self.tasks)))
        where = self.frames.append(self._frame_table(columns))
        row: dict[str, Any] = {
            "episode_index": self.n_episodes,
            "tasks": [task],
            "length": episode.length,
            "data/chunk_index": where.chunk,
            "data/file_index": where.file,
            "dataset_from_index": self.n_frames,
            "dataset_to_index": self.n_frames + episode.length,
        }
        for key, video in episode.videos.items():
            where, first = self.videos[key].append(video.path, episode.length)
            row[f"videos/{key}/chunk_index"] = where.chunk
            row[f"videos/{key}/file_index"] = where.file
            row[f"videos/{key}/from_timestamp"] = first / self.fps
            row[f"videos/{key}/to_timestamp"] = (first + episode.length) / self.fps
        shutil.rmtree(episode.scratch, ignore_errors=True)
        episode_stats = {key: stats.vector_stats(values) for key, values in columns.items()}
        episode_stats.update({key: histogram.stats() for key, histogram in episode.pixels.items()})
        for key, feature_stats in episode_stats.items():
            row.update({f"stats/{key}/{name}": value.tolist() for name, value in feature_stats.items()})
        self.episode_rows.append(row)
        self.episode_stats.append(episode_stats)
        self.n_frames += episode.length

    @property
    def n_episodes(self) -> int:
        return len(self.episode_rows)

    def finish(self) -> Path:
        """Complete the frame and video files and write the metadata; returns the root."""
        for episode in self.running.values():
            episode.discard()
        self.frames.close()
        for videos in self.videos.values():
            videos.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if not self.episode_rows:
            if self.root.is_dir() and not any(self.root.iterdir()):
                self.root.rmdir()
            raise ValueError(f"no episode was kept, so no dataset was written to {self.root}")
        self._write_episodes_table()
        self._write_tasks()
        dataset_stats = {key: stats.aggregate([s[key] for s in self.episode_stats]) for key in self.features}
        self._write_json(layout.STATS_PATH, stats.as_json(dataset_stats))
        self._write_json(layout.INFO_PATH, self._info())
        logger.info("wrote %d episodes (%d frames) to %s", self.n_episodes, self.n_frames, self.root)
        return self.root

    def _describe_features(self, episode: _RunningEpisode) -> None:
        """Fix the features on the first kept episode; later ones must have the same."""
        features: dict[str, dict] = {}
        for key, shape in episode.image_shapes.items():
            features[key] = layout.video_feature(shape[0], shape[1], self.fps)
        for key, values in episode.vectors.items():
            prefix = "action" if key == ACTION else key.rsplit(".", 1)[-1]
            features[key] = layout.vector_feature(len(values[0]), prefix)
        features.update(layout.INDEX_FEATURES)
        if not self.features:
            self.features = features
            self.videos = {
                key: _VideoFiles(self.root, key, self.limits, self.fps) for key in episode.image_shapes
            }
        elif features != self.features:
            raise ValueError(
                f"episode {self.n_episodes}: features {sorted(features)} differ from the first "
                f"episode's {sorted(self.features)}; a dataset has one set of features"
            )

    def _frame_columns(self, episode: _RunningEpisode, task_index: int) -> dict[str, np.ndarray]:
        n = episode.length
        columns = {key: np.stack(values).astype(np.float32) for key, values in episode.vectors.items()}
        frame_index = np.arange(n, dtype=np.int64)
        columns["timestamp"] = (frame_index / self.fps).astype(np.float32)
        columns["frame_index"] = frame_index
        columns["episode_index"] = np.full(n, self.n_episodes, dtype=np.int64)
        columns["index"] = self.n_frames + frame_index
        columns["task_index"] = np.full(n, task_index, dtype=np.int64)
        return columns

    def _frame_table(self, columns: Mapping[str, np.ndarray]):
        import pyarrow as pa

        arrays = {}
        for key, values in columns.items():
            if values.ndim == 2:
                flat = pa.array(values.reshape(-1), type=pa.float32())
                arrays[key] = pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
            else:
                arrays[key] = pa.array(values)
        table = pa.table(arrays)
        return table.replace_schema_metadata(layout.huggingface_schema_metadata(self.features))

    def _write_episodes_table(self) -> None:
        """One row per episode, split into files like the frame table."""
        import pyarrow as pa

        table = pa.Table.from_pylist(self.episode_rows)
        splitter = _FileSplitter(self.limits.data_files_size_in_mb * MIB, self.limits.chunks_size)
        where = [splitter.place(table.slice(i, 1).nbytes) for i in range(table.num_rows)]
        table = table.append_column(
            "meta/episodes/chunk_index", pa.array([w.chunk for w in where], pa.int64())
        )
        table = table.append_column("meta/episodes/file_index", pa.array([w.file for w in where], pa.int64()))
        files = _ParquetFiles(self.root, layout.episodes_file, self.limits)
        for i, place in enumerate(where):
            files.write(place, table.slice(i, 1))
        files.close()

    def _write_tasks(self) -> None:
        """meta/tasks.parquet as LeRobot reads it: a pandas frame indexed by the task string,
        with one `task_index` column (pandas keeps the index in the `pandas` schema metadata)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table(
            {
                "task_index": pa.array(list(self.tasks.values()), pa.int64()),
                "task": pa.array(list(self.tasks)),
            }
        )
        pandas_metadata = {
            "index_columns": ["task"],
            "column_indexes": [
                {
                    "name": None,
                    "field_name": None,
                    "pandas_type": "unicode",
                    "numpy_type": "object",
                    "metadata": {"encoding": "UTF-8"},
                },
            ],
            "columns": [
                {
                    "name": "task_index",
                    "field_name": "task_index",
                    "pandas_type": "int64",
                    "numpy_type": "int64",
                    "metadata": None,
                },
                {
                    "name": "task",
                    "field_name": "task",
                    "pandas_type": "unicode",
                    "numpy_type": "object",
                    "metadata": None,
                },
            ],
        }
        table = table.replace_schema_metadata({b"pandas": json.dumps(pandas_metadata).encode()})
        pq.write_table(table, self.root / layout.TASKS_PATH)

    def _info(self) -> dict[str, Any]:
        return {
            "codebase_version": layout.CODEBASE_VERSION,
            "fps": self.fps,
            "features": self.features,
            "total_episodes": self.n_episodes,
            "total_frames": self.n_frames,
            "total_tasks": len(self.tasks),
            "chunks_size": self.limits.chunks_size,
            "data_files_size_in_mb": self.limits.data_files_size_in_mb,
            "video_files_size_in_mb": self.limits.video_files_size_in_mb,
            "data_path": layout.DATA_PATH,
            "video_path": layout.VIDEO_PATH if self.videos else None,
            "robot_type": None,
            "splits": {"train": f"0:{self.n_episodes}"},
        }

    def _write_json(self, relative: str, payload: dict[str, Any]) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=4))
