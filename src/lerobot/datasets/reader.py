"""Read a LeRobot v3 dataset for training: vectors in memory, camera frames from a disk cache.

The vectors (state, action: tens of floats per frame) are read into arrays. Camera frames are
decoded once into a uint8 array file per camera under the frame cache (`np.load(mmap_mode="r")`),
so training reads frames from pages the OS keeps or drops as memory allows, instead of holding
every decoded frame of the dataset: 30 minutes of one 480x480 camera at 30 fps is 35 GiB
decoded. The cache remembers which video files it holds (size and modification time) and only
decodes new or changed ones.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.datasets import layout
from lerobot.datasets.layout import FileIndex
from lerobot.datasets.video_files import VideoError, iter_frames

logger = logging.getLogger(__name__)

FRAME_CACHE_DIR = ".cache/frames"
"""Default frame cache, relative to the dataset root."""
VECTOR_DTYPES = ("float32", "float64")


class DatasetError(ValueError):
    """A dataset that is missing, malformed or asked for episodes it lacks; the message is one line."""


@dataclass
class EpisodeFrames:
    """The frames of the selected episodes, in episode order."""

    info: dict[str, Any]
    vectors: dict[str, np.ndarray]
    """Feature key -> (N, D) float32 (observation.state, action, ...)."""
    images: dict[str, np.ndarray]
    """Camera key -> (M, H, W, 3) uint8, in memory or memory-mapped; see `camera_frames`."""
    episode_starts: np.ndarray
    """(E,) first row of each selected episode."""
    episode_lengths: np.ndarray
    """(E,) frames of each selected episode."""
    episode_indices: np.ndarray
    """(E,) the dataset's episode index of each selected episode."""
    image_rows: np.ndarray | None = None
    """(N,) the row of `images` holding each selected frame; None: row i is frame i."""
    task_indices: np.ndarray | None = None
    """(N,) each frame's task_index into `tasks`."""
    tasks: list[str] = field(default_factory=list)
    dataset_stats: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    """meta/stats.json: the whole dataset's statistics per feature, which LeRobot normalises
    with even when it trains on some of the episodes; empty when the dataset has none."""

    @property
    def fps(self) -> int:
        return int(self.info["fps"])

    @property
    def n_frames(self) -> int:
        return int(self.episode_lengths.sum())

    def camera_frames(self, key: str, rows: np.ndarray) -> np.ndarray:
        """(len(rows), H, W, 3) uint8 frames of camera `key` at the selected frames `rows`."""
        rows = np.asarray(rows)
        return np.asarray(self.images[key][rows if self.image_rows is None else self.image_rows[rows]])

    def select(self, episodes: Sequence[int]) -> EpisodeFrames:
        """The frames of these of its episodes (dataset episode indices), in its order."""
        keep = np.isin(self.episode_indices, np.asarray(episodes))
        rows = np.concatenate(
            [
                np.arange(start, start + length)
                for start, length in zip(self.episode_starts[keep], self.episode_lengths[keep], strict=True)
            ]
        ).astype(np.int64)
        lengths = self.episode_lengths[keep]
        return dataclasses.replace(
            self,
            vectors={key: values[rows] for key, values in self.vectors.items()},
            episode_starts=episode_starts(lengths),
            episode_lengths=lengths,
            episode_indices=self.episode_indices[keep],
            image_rows=rows if self.image_rows is None else self.image_rows[rows],
            task_indices=None if self.task_indices is None else self.task_indices[rows],
        )

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for data loader workers: a memory-mapped frame cache travels as its file name
        (pickling the map would copy every frame of the dataset into each worker)."""
        state = dict(self.__dict__)
        state["images"] = {
            key: _MappedFile(str(array.filename)) if isinstance(array, np.memmap) else array
            for key, array in self.images.items()
        }
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state["images"] = {
            key: np.load(array.path, mmap_mode="r") if isinstance(array, _MappedFile) else array
            for key, array in state["images"].items()
        }
        self.__dict__.update(state)


@dataclass(frozen=True)
class _MappedFile:
    path: str


def episode_starts(lengths: np.ndarray) -> np.ndarray:
    """Each episode's first row when episodes of `lengths` lie back to back."""
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Any failure to read or parse `path` (missing, truncated, not JSON, not parquet, an mp4
    that will not decode) as one line naming the file: a broken dataset is the user's input,
    not a traceback."""
    try:
        yield
    except DatasetError:
        raise
    except FileNotFoundError:
        raise DatasetError(f"{path}: missing") from None
    except (OSError, ValueError, VideoError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        lines = str(exc).strip().splitlines()
        raise DatasetError(f"{path}: unreadable ({lines[0] if lines else type(exc).__name__})") from None


def read_info(root: Path) -> dict[str, Any]:
    path = Path(root) / layout.INFO_PATH
    if not path.is_file():
        raise DatasetError(
            f"--dataset.root={root}: no {layout.INFO_PATH}; record one with lerobot-record-sim"
        )
    with reading(path):
        info = json.loads(path.read_text())
        if not isinstance(info, dict):
            raise ValueError("not a JSON object")
    if info.get("codebase_version") != layout.CODEBASE_VERSION:
        raise DatasetError(
            f"--dataset.root={root}: codebase_version {info.get('codebase_version')!r}; "
            f"this build reads {layout.CODEBASE_VERSION} datasets"
        )
    return info


def read_tasks(root: Path) -> list[str]:
    """Task strings by task_index. LeRobot stores them as the pandas index of meta/tasks.parquet."""
    import pyarrow.parquet as pq

    with reading(Path(root) / layout.TASKS_PATH):
        columns = pq.read_table(Path(root) / layout.TASKS_PATH).to_pydict()
    strings = columns.get("task", columns.get("__index_level_0__"))
    if strings is None or "task_index" not in columns:
        raise DatasetError(f"{root}/{layout.TASKS_PATH}: needs a task_index column and the task strings")
    by_index = dict(zip(columns["task_index"], strings, strict=True))
    return [by_index[i] for i in range(len(by_index))]


def read_episodes_table(root: Path, n_episodes: int | None = None) -> dict[str, list]:
    """meta/episodes/*/*.parquet, all files in order, without the per-episode statistics; with
    `n_episodes` (info.json's total_episodes), only the rows of episodes below it: a recording
    killed while it added an episode can leave that episode's row, which info.json, written
    last, does not count yet (`datasets.writer`)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    paths = sorted((Path(root) / layout.EPISODES_DIR).glob("*/*.parquet"))
    if not paths:
        raise DatasetError(f"--dataset.root={root}: no {layout.EPISODES_DIR}/chunk-*/file-*.parquet")
    tables = []
    for path in paths:
        with reading(path):
            names = pq.ParquetFile(path).schema_arrow.names
            tables.append(pq.read_table(path, columns=[n for n in names if not n.startswith("stats/")]))
    table = pa.concat_tables(tables, promote_options="default")
    if n_episodes is not None:
        table = table.filter(pc.less(table["episode_index"], n_episodes))
    return table.to_pydict()


def load_episodes(
    root: Path,
    episodes: Sequence[int] | None = None,
    cache_dir: Path | None = None,
    tolerance_s: float = layout.TIMESTAMP_TOLERANCE_S,
) -> EpisodeFrames:
    """The frames of `episodes` (default all) of the dataset at `root`; camera frames are
    decoded into `cache_dir` (default <root>/.cache/frames) unless already there. A timestamp
    more than `tolerance_s` off its frame (LeRobot's `--tolerance_s`) is an error."""
    root = Path(root)
    info = read_info(root)
    if "action" not in info.get("features", {}):
        raise DatasetError(f"{root}/{layout.INFO_PATH}: declares no `action` feature; training needs one")
    table = read_episodes_table(root, info.get("total_episodes"))
    row_of = {int(e): r for r, e in enumerate(table["episode_index"])}
    # In the dataset's order, as LeRobot reads a subset of episodes.
    selected = sorted(row_of) if episodes is None else sorted({int(e) for e in episodes})
    unknown = [e for e in selected if e not in row_of]
    if unknown or not selected:
        raise DatasetError(
            f"--dataset.episodes={list(episodes or [])}: the dataset holds episodes "
            f"{min(row_of)}..{max(row_of)}"
        )
    rows = [row_of[e] for e in selected]
    empty = [int(table["episode_index"][r]) for r in rows if int(table["length"][r]) < 1]
    if empty:
        raise DatasetError(
            f"{root}: episode {empty[0]} has no frames (length 0); leave it out with --dataset.episodes"
        )
    columns = _read_frame_rows(root, info, table, rows, tolerance_s)
    lengths = np.asarray([table["length"][r] for r in rows], dtype=np.int64)
    images = {}
    for key in _camera_keys(info):
        cache = Path(cache_dir) if cache_dir is not None else root / FRAME_CACHE_DIR
        images[key] = cached_frames(root, info, table, key, rows, cache, tolerance_s)
    index = columns.pop("index")
    starts = episode_starts(lengths)
    check_finite(root, columns["vectors"], starts, np.asarray(selected))
    return EpisodeFrames(
        info=info,
        vectors=columns["vectors"],
        images=images,
        episode_starts=starts,
        episode_lengths=lengths,
        episode_indices=np.asarray(selected),
        image_rows=index if images else None,
        task_indices=columns["task_index"],
        tasks=read_tasks(root),
        dataset_stats=read_dataset_stats(root),
    )


def check_finite(
    root: Path, vectors: dict[str, np.ndarray], starts: np.ndarray, episodes: np.ndarray
) -> None:
    """A NaN or inf in a state or action would turn the loss, then every weight, into NaN
    while training reports nothing: refused at load, naming where it is."""
    for key, values in vectors.items():
        bad_rows = np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(axis=1))
        if len(bad_rows):
            row = int(bad_rows[0])
            slot = int(np.searchsorted(starts, row, side="right")) - 1
            raise DatasetError(
                f"--dataset.root={root}: {key} is not finite in episode {int(episodes[slot])}, frame "
                f"{row - int(starts[slot])} ({len(bad_rows)} frames in all); fix or leave out those episodes "
                "(--dataset.episodes)"
            )


def read_dataset_stats(root: Path) -> dict[str, dict[str, np.ndarray]]:
    """meta/stats.json as arrays (float32, stored shapes: (D,) vectors, (3, 1, 1) cameras)."""
    path = Path(root) / layout.STATS_PATH
    if not path.is_file():
        return {}
    return {
        key: {name: np.asarray(value, dtype=np.float32) for name, value in per_feature.items()}
        for key, per_feature in json.loads(path.read_text()).items()
    }


def _camera_keys(info: dict[str, Any]) -> list[str]:
    stored_as_images = [key for key, ft in info["features"].items() if ft["dtype"] == "image"]
    if stored_as_images:
        raise DatasetError(
            f"{stored_as_images}: cameras stored as images in the frame table; "
            "this build reads cameras stored as videos (LeRobot's default)"
        )
    return [key for key, ft in info["features"].items() if ft["dtype"] == "video"]


def _read_frame_rows(
    root: Path, info: dict, table: dict, rows: list[int], tolerance_s: float
) -> dict[str, Any]:
    """The selected episodes' rows of the frame table: {"vectors": {key: (N, D)}, "index": (N,),
    "task_index": (N,)}; each data file is read once."""
    import pyarrow.parquet as pq

    vector_keys = [
        key
        for key, ft in info["features"].items()
        if ft["dtype"] in VECTOR_DTYPES and key not in layout.INDEX_FEATURES
    ]
    wanted = [*vector_keys, "timestamp", "frame_index", "episode_index", "index", "task_index"]
    files: dict[FileIndex, dict[str, np.ndarray]] = {}
    parts: list[dict[str, np.ndarray]] = []
    for r in rows:
        where = FileIndex(table["data/chunk_index"][r], table["data/file_index"][r])
        if where not in files:
            path = layout.data_file(root, where)
            if not path.is_file():
                raise DatasetError(f"{path}: data file missing (episode {table['episode_index'][r]})")
            with reading(path):
                read = pq.read_table(path, columns=wanted)
            files[where] = {name: _to_numpy(read.column(name)) for name in wanted}
        parts.append(_episode_rows(files[where], table, r, info["fps"], tolerance_s))
    return {
        "vectors": {
            key: np.concatenate([p[key] for p in parts]).astype(np.float32).reshape(-1, _width(info, key))
            for key in vector_keys
        },
        "index": np.concatenate([p["index"] for p in parts]),
        "task_index": np.concatenate([p["task_index"] for p in parts]),
    }


def _episode_rows(
    file: dict[str, np.ndarray], table: dict, r: int, fps: int, tolerance_s: float
) -> dict[str, np.ndarray]:
    episode, start, length = table["episode_index"][r], table["dataset_from_index"][r], table["length"][r]
    first = int(np.searchsorted(file["index"], start))
    take = slice(first, first + length)
    if first + length > len(file["index"]) or not np.all(file["episode_index"][take] == episode):
        raise DatasetError(
            f"episode {episode}: its rows {start}..{start + length - 1} are not in its data file"
        )
    timestamps = file["timestamp"][take]
    drift = np.abs(timestamps - file["frame_index"][take] / fps)
    if drift.max() > tolerance_s + np.spacing(timestamps).max():  # float32 rounding
        raise DatasetError(
            f"--tolerance_s={tolerance_s}: episode {episode}'s timestamps are {drift.max():.2g} s off "
            "frame_index / fps; this build reads datasets recorded at a constant frame rate"
        )
    return {key: values[take] for key, values in file.items()}


def _to_numpy(column) -> np.ndarray:
    import pyarrow as pa

    column = column.combine_chunks()
    if pa.types.is_fixed_size_list(column.type) or pa.types.is_list(column.type):
        return np.stack(column.to_numpy(zero_copy_only=False))
    return column.to_numpy(zero_copy_only=False)


def _width(info: dict, key: str) -> int:
    return int(np.prod(info["features"][key]["shape"]))


def cached_frames(
    root: Path,
    info: dict,
    table: dict,
    key: str,
    rows: list[int],
    cache: Path,
    tolerance_s: float = layout.TIMESTAMP_TOLERANCE_S,
) -> np.ndarray:
    """Camera `key`'s frames as a read-only memory map of shape (total_frames, H, W, 3), row i
    holding the frame of dataset index i; the video files of episodes `rows` are decoded into
    it first unless the cache already holds them unchanged."""
    shape = (int(info["total_frames"]), *_frame_shape(info["features"][key]))
    array_path, manifest_path = cache / f"{key}.npy", cache / f"{key}.json"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with _exclusive_lock(cache / f"{key}.lock"):
            _fill_cache(
                root, table, key, rows, shape, (array_path, manifest_path), int(info["fps"]), tolerance_s
            )
    except DatasetError:
        raise
    except OSError as exc:  # a read-only dataset dir (a shared mount), a full disk
        raise DatasetError(
            f"{cache}: cannot write the decoded frames there ({exc.strerror or exc}); "
            "pass --dataset.frame_cache_dir=<a writable directory>"
        ) from None
    return np.load(array_path, mmap_mode="r")


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """One process at a time checks and fills a frame cache: two trainings started on the same
    dataset would otherwise decode into the same file at once. No lock where fcntl is missing."""
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fill_cache(
    root: Path,
    table: dict,
    key: str,
    rows: list[int],
    shape: tuple,
    paths: tuple[Path, Path],
    fps: int,
    tolerance_s: float,
) -> None:
    """Decode into the cache the video files of `rows` that it lacks or holds stale.

    A new array file replaces the old one by rename, so a training still reading the old one
    keeps its (unlinked) file instead of seeing it truncated under its memory map.
    """
    array_path, manifest_path = paths
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if manifest.get("shape") != list(shape) or not array_path.is_file():
        fresh = array_path.with_name(array_path.name + ".tmp")
        np.lib.format.open_memmap(fresh, mode="w+", dtype=np.uint8, shape=shape).flush()
        os.replace(fresh, array_path)
        manifest = {"shape": list(shape), "videos": {}}
    stale = []
    for where in sorted({_video_file_index(table, key, r) for r in rows}, key=lambda w: (w.chunk, w.file)):
        path = layout.video_file(root, key, where)
        if not path.is_file():
            raise DatasetError(f"{path}: video file missing")
        relative = str(path.relative_to(root))
        if manifest["videos"].get(relative) != _signature(path):
            stale.append((where, path, relative))
    if stale:
        array = np.load(array_path, mmap_mode="r+")
        for where, path, relative in stale:
            logger.info("decoding %s into the frame cache %s", relative, array_path)
            _decode_into(array, path, _frame_targets(table, key, where, fps, tolerance_s))
            array.flush()
            manifest["videos"][relative] = _signature(path)
            _write_atomically(manifest_path, json.dumps(manifest, indent=2))
        del array


def _write_atomically(path: Path, text: str) -> None:
    """A reader never sees half a manifest, even if this process dies while writing."""
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(text)
    os.replace(partial, path)


def _frame_shape(feature: dict) -> tuple[int, int, int]:
    """(H, W, 3) of a video feature; LeRobot lists the shape's axes in `names`."""
    names = feature.get("names") or ["height", "width", "channels"]
    sizes = dict(zip(names, feature["shape"], strict=True))
    return int(sizes["height"]), int(sizes["width"]), 3


def _video_file_index(table: dict, key: str, r: int) -> FileIndex:
    return FileIndex(table[f"videos/{key}/chunk_index"][r], table[f"videos/{key}/file_index"][r])


def _signature(path: Path) -> list[int]:
    status = path.stat()
    return [status.st_size, status.st_mtime_ns]


def _frame_targets(table: dict, key: str, where: FileIndex, fps: int, tolerance_s: float) -> dict[int, int]:
    """Frame number in the video file -> dataset index, for every episode in that file."""
    targets = {}
    for r in range(len(table["episode_index"])):
        if _video_file_index(table, key, r) != where:
            continue
        start = table[f"videos/{key}/from_timestamp"][r] * fps
        if abs(start - round(start)) / fps > tolerance_s:
            raise DatasetError(
                f"{key}: episode {table['episode_index'][r]} starts at "
                f"{table[f'videos/{key}/from_timestamp'][r]} s, not on a frame of a {fps} fps video"
            )
        first, dataset_start = round(start), table["dataset_from_index"][r]
        targets.update({first + k: dataset_start + k for k in range(table["length"][r])})
    return targets


def _decode_into(array: np.ndarray, path: Path, targets: dict[int, int]) -> None:
    last = max(targets)
    n_decoded = 0
    with reading(path):
        for frame_number, frame in enumerate(iter_frames(path)):
            n_decoded += 1
            if frame_number in targets:
                if frame.shape != array.shape[1:]:
                    raise DatasetError(f"{path}: frames are {frame.shape}, info.json says {array.shape[1:]}")
                array[targets[frame_number]] = frame
            if frame_number == last:
                return
    raise DatasetError(f"{path}: the episodes need frames up to {last}, the video has {n_decoded}")
