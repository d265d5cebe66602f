"""Where the files of a LeRobot v3 dataset live, and how its features are described.

A v3 dataset concatenates many episodes per file:
    meta/info.json                                  fps, features, totals, size limits, path templates
    meta/stats.json                                 min/max/mean/std/count/quantiles per feature
    meta/tasks.parquet                              task string (the pandas index) -> task_index
    meta/recording.json                             ours, lerobot-record-sim's: the settings and the
                                                    rollouts done (a resume reads it; LeRobot ignores it)
    meta/episodes/chunk-000/file-000.parquet        one row per episode: length, tasks, where its
                                                    rows and video frames are, its own statistics
    data/chunk-000/file-000.parquet                 one row per frame
    videos/<camera key>/chunk-000/file-000.mp4      the episodes' frames, back to back
A file holds whole episodes; a new file starts once the current one would pass its size limit
(`data_files_size_in_mb`, also for the episodes files, or `video_files_size_in_mb`), and a
chunk folder holds at most `chunks_size` files. Episode e's video frames are those between its
from/to timestamps in its video file: frame k of an episode is the file's frame at
from_timestamp + k / fps (LeRobot matches it to within 1e-4 s).
Checked against LeRobot 0.6.1, which reads datasets written here and writes ones read here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

CODEBASE_VERSION = "v3.0"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_DIR = "meta/episodes"
EPISODES_PATH = EPISODES_DIR + "/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
RECORDING_LOG_PATH = "meta/recording.json"
TIMESTAMP_TOLERANCE_S = 1e-4
"""How far a frame's time may be from a multiple of 1 / fps (LeRobot's default `tolerance_s`)."""

# Bookkeeping columns every frame row carries, after the features.
INDEX_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}


@dataclass(frozen=True, order=True)
class FileIndex:
    """Which file of a sequence: chunk-<chunk>/file-<file>."""

    chunk: int = 0
    file: int = 0

    def next(self, chunks_size: int) -> FileIndex:
        if self.file + 1 == chunks_size:
            return FileIndex(self.chunk + 1, 0)
        return FileIndex(self.chunk, self.file + 1)


def data_file(root: Path, where: FileIndex = FileIndex()) -> Path:
    return Path(root) / DATA_PATH.format(chunk_index=where.chunk, file_index=where.file)


def video_file(root: Path, video_key: str, where: FileIndex = FileIndex()) -> Path:
    return Path(root) / VIDEO_PATH.format(video_key=video_key, chunk_index=where.chunk, file_index=where.file)


def episodes_file(root: Path, where: FileIndex = FileIndex()) -> Path:
    return Path(root) / EPISODES_PATH.format(chunk_index=where.chunk, file_index=where.file)


def video_feature(height: int, width: int, fps: int) -> dict:
    """The info.json entry of one camera stream (channel-last frames, h264 mp4)."""
    return {
        "dtype": "video",
        "shape": [height, width, 3],
        "names": ["height", "width", "channels"],
        "info": {
            "video.height": height,
            "video.width": width,
            "video.codec": "h264",
            "video.pix_fmt": "yuv420p",
            "video.fps": fps,
            "video.channels": 3,
            "has_audio": False,
            "is_depth_map": False,
        },
    }


def vector_feature(length: int, prefix: str) -> dict:
    return {"dtype": "float32", "shape": [length], "names": [f"{prefix}_{i}" for i in range(length)]}


def video_keys(features: dict) -> list[str]:
    """The camera streams among a dataset's features."""
    return [key for key, feature in features.items() if feature["dtype"] == "video"]


def huggingface_schema_metadata(features: dict) -> dict[bytes, bytes]:
    """The parquet schema metadata with which Hugging Face `datasets` (hence LeRobot) types the
    frame table's columns: fixed-length float lists for vectors, scalars for shape [1]."""
    typed = {}
    for key, feature in features.items():
        if feature["dtype"] in ("video", "image"):
            continue
        value = {"dtype": feature["dtype"], "_type": "Value"}
        if list(feature["shape"]) == [1]:
            typed[key] = value
        else:
            typed[key] = {"feature": value, "length": feature["shape"][0], "_type": "List"}
    return {b"huggingface": json.dumps({"info": {"features": typed}}).encode()}
