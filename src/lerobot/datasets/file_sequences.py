"""The chunk-XXX/file-YYY sequences a dataset's frame table, episodes table and videos are split
into, each grown at its end one episode at a time: which file an episode goes to, and that
file written again with the episode at its end (whole, through a rename: `utils.io.replacing`).

A file takes episodes until the next would take it past its size limit (a file always takes
one); a chunk folder holds `chunks_size` files. Sizes are measured so that a resumed recording
measures what it reads back exactly as the first run measured it: frame rows by their width,
episodes-table rows in memory, video files on disk.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lerobot.configs.record import FileLimits
from lerobot.datasets import layout, meta_files
from lerobot.datasets.layout import FileIndex
from lerobot.datasets.video_files import VideoError, append_mp4, count_mp4_frames, truncate_mp4
from lerobot.utils.io import TEMP_SUFFIX, replacing

MIB = 1024**2
_FILE_NAME = re.compile(r"chunk-(\d+)/file-(\d+)\.\w+$")


class FileSplitter:
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


class FrameFiles:
    """data/chunk-XXX/file-YYY.parquet: the frame table, its current file kept in memory."""

    def __init__(self, root: Path, limits: FileLimits):
        self.root = root
        self.splitter = FileSplitter(limits.data_files_size_in_mb * MIB, limits.chunks_size)
        self.current = None  # pyarrow.Table: the rows of the current file

    def append(self, table, row_bytes: int) -> FileIndex:
        import pyarrow as pa
        import pyarrow.parquet as pq

        previous = self.splitter.where
        where = self.splitter.place(table.num_rows * row_bytes)
        if where == previous:
            table = pa.concat_tables([self.current.cast(table.schema), table])
        with replacing(layout.data_file(self.root, where)) as path:
            pq.write_table(table, path)
        self.current = table
        return where

    def reopen(self, rows: Sequence[Mapping[str, Any]], n_frames: int, row_bytes: int) -> None:
        """Continue the file of the last episode of `rows`, cut back to the dataset's
        `n_frames` rows; later files (an append cut short) are removed."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        where = FileIndex(rows[-1]["data/chunk_index"], rows[-1]["data/file_index"])
        path = layout.data_file(self.root, where)
        table = pq.read_table(path)
        kept = table.filter(pc.less(table["index"], n_frames))
        if kept.num_rows < table.num_rows:
            with replacing(path) as partial:
                pq.write_table(kept, partial)
        self.current = kept
        self.splitter.where, self.splitter.bytes_in_file = where, kept.num_rows * row_bytes
        remove_files_after(self.root / "data", where)


class EpisodeFiles:
    """meta/episodes/chunk-XXX/file-YYY.parquet: the episodes table, one row per episode."""

    def __init__(self, root: Path, limits: FileLimits):
        self.root = root
        self.splitter = FileSplitter(limits.data_files_size_in_mb * MIB, limits.chunks_size)
        self.current: list[dict[str, Any]] = []

    def append(self, row: dict[str, Any]) -> None:
        """Write `row` at the end of its file; its placement columns are added to it."""
        previous = self.splitter.where
        where = self.splitter.place(meta_files.episode_row_bytes(row))
        if where != previous:
            self.current = []
        row.update(zip(meta_files.EPISODES_FILE_COLUMNS, (where.chunk, where.file), strict=True))
        self.current.append(row)
        meta_files.write_episodes_file(self.root, where, self.current)

    def reopen(self, rows: Sequence[dict[str, Any]]) -> None:
        """Continue the file of the last of `rows` (the dataset's episodes), without the rows
        an append cut short left in it or after it."""
        import pyarrow.parquet as pq

        where = FileIndex(*(rows[-1][column] for column in meta_files.EPISODES_FILE_COLUMNS))
        self.current = [row for row in rows if _episodes_file_of(row) == where]
        if pq.read_metadata(layout.episodes_file(self.root, where)).num_rows != len(self.current):
            meta_files.write_episodes_file(self.root, where, self.current)
        self.splitter.where = where
        self.splitter.bytes_in_file = sum(meta_files.episode_row_bytes(row) for row in self.current)
        remove_files_after(self.root / layout.EPISODES_DIR, where)


class VideoFiles:
    """videos/<camera>/chunk-XXX/file-YYY.mp4: one camera's episodes, back to back."""

    def __init__(self, root: Path, key: str, limits: FileLimits, fps: int):
        self.root, self.key, self.fps = root, key, fps
        self.splitter = FileSplitter(limits.video_files_size_in_mb * MIB, limits.chunks_size)
        self.frames_in_file = 0

    def append(self, episode_mp4: Path, n_frames: int) -> tuple[FileIndex, int]:
        """Move an episode's mp4 to the end of its file; returns (the file, its first frame there)."""
        previous = self.splitter.where
        where = self.splitter.place(episode_mp4.stat().st_size)
        if where != previous:
            self.frames_in_file = 0
        target = layout.video_file(self.root, self.key, where)
        append_mp4(target, episode_mp4, self.fps)
        self.splitter.bytes_in_file = target.stat().st_size
        first, self.frames_in_file = self.frames_in_file, self.frames_in_file + n_frames
        return where, first

    def reopen(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Continue the file of the last of `rows`, cut back to the frames of its episodes."""
        last = rows[-1]
        where = FileIndex(last[f"videos/{self.key}/chunk_index"], last[f"videos/{self.key}/file_index"])
        path = layout.video_file(self.root, self.key, where)
        frames = round(last[f"videos/{self.key}/to_timestamp"] * self.fps)
        held = count_mp4_frames(path)
        if held < frames:
            raise VideoError(f"{path}: holds {held} frames, its episodes need {frames}")
        if held > frames:
            truncate_mp4(path, frames)
        self.frames_in_file = frames
        self.splitter.where, self.splitter.bytes_in_file = where, path.stat().st_size
        remove_files_after(self.root / "videos" / self.key, where)


def _episodes_file_of(row: Mapping[str, Any]) -> FileIndex:
    return FileIndex(*(row[column] for column in meta_files.EPISODES_FILE_COLUMNS))


def remove_files_after(folder: Path, where: FileIndex) -> None:
    """Remove the files of the sequence in `folder` that come after `where`."""
    for path in folder.glob("chunk-*/file-*.*"):
        found = _FILE_NAME.search(path.as_posix())
        if found and FileIndex(int(found[1]), int(found[2])) > where:
            path.unlink()


def remove_partial_files(root: Path) -> None:
    """Remove the temporary files of a write that a killed process never renamed."""
    for folder in ("data", "meta", "videos"):
        for path in (Path(root) / folder).rglob(f".*{TEMP_SUFFIX}"):
            path.unlink()
