"""Read a LeRobot v3 dataset into memory: the frame table, and every camera's frames decoded.

Simulation datasets for training here are small (tens of episodes of small images), so the
whole dataset is decoded once, up front; training then samples windows from plain arrays.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.datasets import layout


class DatasetError(ValueError):
    """A dataset that is missing, malformed or asked for episodes it lacks; the message is one line."""


@dataclass
class EpisodeFrames:
    """The frames of the selected episodes, in episode order, as arrays."""

    info: dict[str, Any]
    vectors: dict[str, np.ndarray]
    """Feature key -> (N, D) float32 (observation.state, action, ...)."""
    images: dict[str, np.ndarray]
    """Camera key -> (N, H, W, 3) uint8."""
    episode_starts: np.ndarray
    """(E,) first row of each selected episode."""
    episode_lengths: np.ndarray
    """(E,) frames of each selected episode."""
    episode_indices: np.ndarray
    """(E,) the dataset's episode index of each selected episode."""

    @property
    def fps(self) -> int:
        return int(self.info["fps"])

    @property
    def n_frames(self) -> int:
        return int(self.episode_lengths.sum())


def read_info(root: Path) -> dict[str, Any]:
    path = Path(root) / layout.INFO_PATH
    if not path.is_file():
        raise DatasetError(
            f"--dataset.root={root}: no {layout.INFO_PATH}; record one with lerobot-record-sim"
        )
    info = json.loads(path.read_text())
    if info.get("codebase_version") != layout.CODEBASE_VERSION:
        raise DatasetError(
            f"--dataset.root={root}: codebase_version {info.get('codebase_version')!r}; "
            f"this build reads {layout.CODEBASE_VERSION} datasets"
        )
    return info


def load_episodes(root: Path, episodes: Sequence[int] | None = None) -> EpisodeFrames:
    """The frames of `episodes` (default all) of the dataset at `root`."""
    import pyarrow.parquet as pq

    root = Path(root)
    info = read_info(root)
    table = pq.read_table(layout.episodes_file(root)).to_pydict()
    available = list(table["episode_index"])
    selected = list(available) if episodes is None else list(episodes)
    unknown = [e for e in selected if e not in available]
    if unknown or not selected:
        raise DatasetError(
            f"--dataset.episodes={list(episodes or [])}: the dataset holds episodes 0..{len(available) - 1}"
        )
    rows = [available.index(e) for e in selected]
    frames = pq.read_table(layout.data_file(root)).to_pydict()
    starts = np.asarray([table["dataset_from_index"][r] for r in rows])
    lengths = np.asarray([table["length"][r] for r in rows])
    take = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)])
    vectors = {
        key: np.asarray(frames[key], dtype=np.float32)[take]
        for key, feature in info["features"].items()
        if feature["dtype"] == "float32" and key in frames and key != "timestamp"
    }
    images = {}
    for key, feature in info["features"].items():
        if feature["dtype"] == "video":
            decoded = decode_video(layout.video_file(root, key))
            fps = info["fps"]
            images[key] = np.concatenate([_episode_frames(decoded, table, key, r, fps) for r in rows])
    new_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return EpisodeFrames(info, vectors, images, new_starts, lengths.astype(np.int64), np.asarray(selected))


def _episode_frames(decoded: np.ndarray, table: dict, key: str, row: int, fps: int) -> np.ndarray:
    start = round(table[f"videos/{key}/from_timestamp"][row] * fps)
    length = table["length"][row]
    if start + length > len(decoded):
        raise DatasetError(
            f"{key}: episode {table['episode_index'][row]} needs frames {start}..{start + length - 1}, "
            f"the video has {len(decoded)}"
        )
    return decoded[start : start + length]


def decode_video(path: Path) -> np.ndarray:
    """Every frame of an mp4 as (N, H, W, 3) uint8."""
    import imageio

    if not Path(path).is_file():
        raise DatasetError(f"{path}: video file missing")
    reader = imageio.get_reader(path, format="ffmpeg")
    try:
        return np.stack([np.asarray(frame) for frame in reader])
    finally:
        reader.close()
