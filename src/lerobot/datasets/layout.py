"""Where the files of a LeRobot v3 dataset live, and how its features are described.

A v3 dataset concatenates many episodes per file:
    meta/info.json                                  fps, features, totals, path templates
    meta/stats.json                                 min/max/mean/std/count per feature
    meta/tasks.parquet                              task string -> task_index
    meta/episodes/chunk-000/file-000.parquet        one row per episode: length, tasks, where
                                                    its rows and video frames are
    data/chunk-000/file-000.parquet                 one row per frame
    videos/<camera key>/chunk-000/file-000.mp4      the episodes' frames, back to back
Episode e's video frames are those between its from/to timestamps in the episodes table.
"""

from __future__ import annotations

from pathlib import Path

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_FILES_SIZE_IN_MB = 100
VIDEO_FILES_SIZE_IN_MB = 500
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"

# Bookkeeping columns every frame row carries, after the features.
INDEX_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}


def data_file(root: Path, chunk_index: int = 0, file_index: int = 0) -> Path:
    return Path(root) / DATA_PATH.format(chunk_index=chunk_index, file_index=file_index)


def video_file(root: Path, video_key: str, chunk_index: int = 0, file_index: int = 0) -> Path:
    return Path(root) / VIDEO_PATH.format(video_key=video_key, chunk_index=chunk_index, file_index=file_index)


def episodes_file(root: Path, chunk_index: int = 0, file_index: int = 0) -> Path:
    return Path(root) / EPISODES_PATH.format(chunk_index=chunk_index, file_index=file_index)


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
            "video.is_depth_map": False,
            "video.fps": fps,
            "video.channels": 3,
            "has_audio": False,
        },
    }


def vector_feature(length: int, prefix: str) -> dict:
    return {"dtype": "float32", "shape": [length], "names": [f"{prefix}_{i}" for i in range(length)]}
