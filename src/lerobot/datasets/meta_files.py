"""The meta/ files of a dataset being written, each replaced whole (a temporary file renamed
over the old one, `utils.io.replacing`), and the episodes table read back for a resume.

The episodes table holds one row per episode: where its frames and video frames are, its
task, and its own statistics (`stats/<feature>/<name>`), from which meta/stats.json is
computed again after every episode; a resumed recording reads them back from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.datasets import layout
from lerobot.datasets.layout import FileIndex
from lerobot.datasets.stats import Stats
from lerobot.utils.io import replacing, write_text_atomic

ROOT_HINT = "free space or choose another --root"
EPISODES_FILE_COLUMNS = ("meta/episodes/chunk_index", "meta/episodes/file_index")
"""The columns that say which episodes-table file holds a row (appended after the others)."""


def write_json(root: Path, relative: str, payload: Mapping[str, Any]) -> None:
    write_text_atomic(json.dumps(payload, indent=4), Path(root) / relative, hint=ROOT_HINT)


def write_tasks(root: Path, tasks: Mapping[str, int]) -> None:
    """meta/tasks.parquet as LeRobot reads it: a pandas frame indexed by the task string,
    with one `task_index` column (pandas keeps the index in the `pandas` schema metadata)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {"task_index": pa.array(list(tasks.values()), pa.int64()), "task": pa.array(list(tasks))}
    )
    table = table.replace_schema_metadata({b"pandas": json.dumps(_TASKS_PANDAS_METADATA).encode()})
    with replacing(Path(root) / layout.TASKS_PATH) as path:
        pq.write_table(table, path)


def write_episodes_file(root: Path, where: FileIndex, rows: Sequence[Mapping[str, Any]]) -> None:
    """One file of the episodes table: `rows` (their own placement columns included), whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with replacing(layout.episodes_file(root, where)) as path:
        pq.write_table(pa.Table.from_pylist(list(rows)), path)


def episode_row_bytes(row: Mapping[str, Any]) -> int:
    """A row's size as the episodes table's file limit counts it: in memory, uncompressed,
    without its placement columns (so a resume measures read-back rows as they were measured)."""
    import pyarrow as pa

    return pa.Table.from_pylist([{k: v for k, v in row.items() if k not in EPISODES_FILE_COLUMNS}]).nbytes


def read_episode_rows(root: Path, n_episodes: int) -> list[dict[str, Any]]:
    """The first `n_episodes` rows of the episodes table, every column, in episode order.
    Rows past them are those of an append cut short before info.json counted it."""
    import pyarrow.parquet as pq

    rows = []
    for path in sorted((Path(root) / layout.EPISODES_DIR).glob("*/*.parquet")):
        rows += pq.read_table(path).to_pylist()
    rows = sorted(
        (row for row in rows if row["episode_index"] < n_episodes), key=lambda r: r["episode_index"]
    )
    if [row["episode_index"] for row in rows] != list(range(n_episodes)):
        raise ValueError(
            f"{root}: the episodes table lacks some of the {n_episodes} episodes info.json counts"
        )
    return rows


def row_stats(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Stats]:
    """An episode's statistics per feature, from its `stats/<feature>/<name>` columns."""
    stats: dict[str, Stats] = {key: {} for key in keys}
    for column, value in row.items():
        if column.startswith("stats/"):
            key, name = column[len("stats/") :].rsplit("/", 1)
            if key in stats:
                stats[key][name] = np.asarray(value)
    return stats


_TASKS_PANDAS_METADATA = {
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
