"""A LeRobot v3 dataset on disk that grows one whole episode at a time: after every `append`
the files are a dataset that LeRobot and our reader load, and a process killed at any moment
leaves the dataset of the appends that returned.

An append replaces files one by one, each through a temporary file and a rename
(`utils.io.replacing`), in this order:
  1. each camera's current video file, the episode's frames added at its end;
  2. the current frame-table file, the episode's rows added at its end;
  3. meta/tasks.parquet, when the episode brings a new task;
  4. the current episodes-table file, the episode's row added at its end;
  5. meta/stats.json;
  6. meta/recording.json, the recorder's log, when it keeps one;
  7. meta/info.json, whose totals are the commit.
Readers take total_episodes and total_frames from info.json and never reach past them
(LeRobot indexes frames below total_frames; ours reads the episodes below total_episodes), and
files 1-4 only grow at their end: a process killed between two renames leaves the previous
dataset whole, plus rows and frames past its totals that nobody reads (stats.json alone may
then count the lost episode). `reopen`, for a resume, cuts those leftovers away first.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.configs.record import FileLimits
from lerobot.datasets import layout, meta_files, stats
from lerobot.datasets.file_sequences import EpisodeFiles, FrameFiles, VideoFiles, remove_partial_files
from lerobot.datasets.reader import read_info, read_tasks
from lerobot.utils.constants import ACTION

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FinishedEpisode:
    """A kept episode as the recorder hands it over: its vectors, its cameras' own mp4s (moved
    into the dataset's video files) and their pixel statistics."""

    task: str
    vectors: Mapping[str, np.ndarray]
    """Feature key -> (length, D) float32, `action` among them."""
    videos: Mapping[str, Path]
    image_shapes: Mapping[str, tuple[int, ...]]
    image_stats: Mapping[str, stats.Stats]

    @property
    def length(self) -> int:
        return len(self.vectors[ACTION])


class DatasetWriter:
    """The files of a dataset under `root`, appended to by whole episodes."""

    def __init__(self, root: Path, fps: int, limits: FileLimits | None = None):
        self.root = Path(root)
        self.fps = fps
        self.limits = limits or FileLimits()
        self.features: dict[str, dict] = {}
        self.tasks: dict[str, int] = {}
        self.rows: list[dict[str, Any]] = []
        """The episodes table, statistics included."""
        self.episode_stats: list[dict[str, stats.Stats]] = []
        self.n_frames = 0
        self.frame_files = FrameFiles(self.root, self.limits)
        self.episode_files = EpisodeFiles(self.root, self.limits)
        self.video_files: dict[str, VideoFiles] = {}

    @property
    def n_episodes(self) -> int:
        return len(self.rows)

    @classmethod
    def reopen(cls, root: Path) -> DatasetWriter:
        """The dataset at `root`, to append more episodes to (a resume). What an append cut
        short left past info.json's totals is removed first, so the next append continues
        the files exactly where the dataset's last episode ends."""
        info = read_info(root)
        limits = FileLimits(
            info["chunks_size"], info["data_files_size_in_mb"], info["video_files_size_in_mb"]
        )
        writer = cls(root, int(info["fps"]), limits)
        writer.features = info["features"]
        writer.tasks = {task: index for index, task in enumerate(read_tasks(root))}
        writer.rows = meta_files.read_episode_rows(root, int(info["total_episodes"]))
        writer.episode_stats = [meta_files.row_stats(row, list(writer.features)) for row in writer.rows]
        writer.n_frames = int(info["total_frames"])
        remove_partial_files(writer.root)
        writer.frame_files.reopen(writer.rows, writer.n_frames, frame_row_bytes(writer.features))
        writer.episode_files.reopen(writer.rows)
        for key in layout.video_keys(writer.features):
            writer.video_files[key] = VideoFiles(writer.root, key, limits, writer.fps)
            writer.video_files[key].reopen(writer.rows)
        return writer

    def append(self, episode: FinishedEpisode, log: Mapping[str, Any] | None = None) -> int:
        """Add `episode` as the dataset's next one (in the order of the module docstring);
        `log` becomes meta/recording.json in the same commit. Returns its episode index.

        An append that raises (a full disk) leaves the files as the last one left them, and
        this writer unusable.
        """
        self._check_features(episode)
        index = self.n_episodes
        new_task = episode.task not in self.tasks
        task_index = self.tasks.setdefault(episode.task, len(self.tasks))
        columns = self._frame_columns(episode, index, task_index)
        placed_videos = {
            key: self.video_files[key].append(mp4, episode.length) for key, mp4 in episode.videos.items()
        }
        data_file = self.frame_files.append(self._frame_table(columns), frame_row_bytes(self.features))
        if new_task:
            meta_files.write_tasks(self.root, self.tasks)
        row = self._episode_row(episode, index, data_file, placed_videos)
        episode_stats = {key: stats.vector_stats(values) for key, values in columns.items()}
        episode_stats.update(episode.image_stats)
        for key, feature_stats in episode_stats.items():
            row.update({f"stats/{key}/{name}": value.tolist() for name, value in feature_stats.items()})
        self.episode_files.append(row)
        self.rows.append(row)
        self.episode_stats.append(episode_stats)
        self.n_frames += episode.length
        dataset_stats = {key: stats.aggregate([s[key] for s in self.episode_stats]) for key in self.features}
        meta_files.write_json(self.root, layout.STATS_PATH, stats.as_json(dataset_stats))
        if log is not None:
            self.write_log(log)
        meta_files.write_json(self.root, layout.INFO_PATH, self._info())
        return index

    def write_log(self, log: Mapping[str, Any]) -> None:
        """meta/recording.json alone (a dropped episode changes nothing else)."""
        meta_files.write_json(self.root, layout.RECORDING_LOG_PATH, log)

    def _check_features(self, episode: FinishedEpisode) -> None:
        """The first episode fixes the features; later ones must have the same."""
        features: dict[str, dict] = {}
        for key, shape in episode.image_shapes.items():
            features[key] = layout.video_feature(shape[0], shape[1], self.fps)
        for key, values in episode.vectors.items():
            prefix = "action" if key == ACTION else key.rsplit(".", 1)[-1]
            features[key] = layout.vector_feature(np.shape(values)[1], prefix)
        features.update(layout.INDEX_FEATURES)
        if not self.features:
            self.features = features
            self.video_files = {
                key: VideoFiles(self.root, key, self.limits, self.fps) for key in episode.image_shapes
            }
        elif features != self.features:
            raise ValueError(
                f"episode {self.n_episodes}: features {sorted(features)} differ from the dataset's "
                f"{sorted(self.features)} (or their shapes do); a dataset has one set of features"
            )

    def _frame_columns(self, episode: FinishedEpisode, index: int, task_index: int) -> dict[str, np.ndarray]:
        n = episode.length
        columns = {key: np.asarray(values, dtype=np.float32) for key, values in episode.vectors.items()}
        frame_index = np.arange(n, dtype=np.int64)
        columns["timestamp"] = (frame_index / self.fps).astype(np.float32)
        columns["frame_index"] = frame_index
        columns["episode_index"] = np.full(n, index, dtype=np.int64)
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

    def _episode_row(
        self, episode: FinishedEpisode, index: int, data_file: layout.FileIndex, videos: Mapping[str, tuple]
    ) -> dict[str, Any]:
        row: dict[str, Any] = {
            "episode_index": index,
            "tasks": [episode.task],
            "length": episode.length,
            "data/chunk_index": data_file.chunk,
            "data/file_index": data_file.file,
            "dataset_from_index": self.n_frames,
            "dataset_to_index": self.n_frames + episode.length,
        }
        for key, (where, first) in videos.items():
            row[f"videos/{key}/chunk_index"] = where.chunk
            row[f"videos/{key}/file_index"] = where.file
            row[f"videos/{key}/from_timestamp"] = first / self.fps
            row[f"videos/{key}/to_timestamp"] = (first + episode.length) / self.fps
        return row

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
            "video_path": layout.VIDEO_PATH if self.video_files else None,
            "robot_type": None,
            "splits": {"train": f"0:{self.n_episodes}"},
        }


def frame_row_bytes(features: Mapping[str, Mapping[str, Any]]) -> int:
    """One frame-table row's size in memory, uncompressed (what the data file limit counts):
    computed from the features, so a resume measures the rows it reads back as they were
    measured when written."""
    sizes = {"float32": 4, "float64": 8, "int64": 8}
    return sum(
        int(np.prod(feature["shape"])) * sizes[feature["dtype"]]
        for feature in features.values()
        if feature["dtype"] in sizes
    )
