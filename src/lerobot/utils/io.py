"""Result files that readers can trust: strict JSON, written whole or not at all."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from lerobot.utils.errors import ConfigError, ResultsWriteError


def to_strict_json(value: Any) -> Any:
    """Replace NaN and infinities by None, recursively, so the output is strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): to_strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_strict_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return to_strict_json(value.item())
    return value


OUTPUT_DIR_HINT = "free space or choose another --output_dir"


def write_json_atomic(data: Any, path: Path, hint: str = OUTPUT_DIR_HINT) -> Path:
    """Write strict JSON through a temporary file and a rename: readers never see half a file."""
    return write_text_atomic(json.dumps(to_strict_json(data), indent=2, allow_nan=False), path, hint)


def write_text_atomic(text: str, path: Path, hint: str = OUTPUT_DIR_HINT) -> Path:
    """Write `text` to a temporary file in the same folder, fsync it, then rename it over `path`.

    The file gets the permissions a plain `open` would give it (mkstemp makes it private), so
    results on a shared disk stay readable by the rest of the team. A failure is one line
    naming the file, the reason and `hint` (what the user can do about it).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise cannot_write(path, exc, hint) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_current_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise cannot_write(path, exc, hint) from None
        raise
    return path


TEMP_SUFFIX = ".tmp"
"""The suffix of the temporary file `replacing` writes: never a reader's (.json, .parquet, .mp4),
so a file left by a process killed mid-write is never read as part of the result."""


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write its new version into; when the block ends
    normally it is fsynced and renamed over `path`, so a reader (or a process killed at any
    moment) sees the old file or the new one, never half of one. On an error it is removed.

    For files written by other code (pyarrow, ffmpeg), which text helpers cannot write: the
    temporary name is `.<name>.<random>.tmp`, so writers that guess a format from the name
    must be told it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.chmod(tmp, 0o666 & ~_current_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_output_dir(out: Path, flag: str) -> None:
    """Create the directory, or say in one line why it cannot be used: checked when a run
    starts, so that nothing fails at its first write, minutes in, for a reason known at start."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{flag}={out}: is a file; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{flag}={out}: cannot create it ({exc.strerror or exc})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}={out}: not writable (read-only file system or permissions)")


def cannot_write(path: Path, exc: OSError, hint: str = OUTPUT_DIR_HINT) -> ResultsWriteError:
    """One line naming the file and the reason (disk full, read-only file system, ...)."""
    return ResultsWriteError(f"{path}: cannot write ({exc.strerror or exc}); {hint}")


def _current_umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def write_safetensors(
    tensors: Mapping[str, Any], path: Path, metadata: Mapping[str, str] | None = None
) -> None:
    """safetensors' `save_file`, whose failed writes (disk full, file too large, read-only)
    are an OSError with the system's reason, as any other file's are (weights, processor
    statistics, training state: a checkpoint that cannot be written is one line)."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    try:
        save_file(dict(tensors), path, metadata=dict(metadata) if metadata is not None else None)
    except SafetensorError as exc:
        code = re.search(r"os error (\d+)", str(exc))
        if code is None:
            raise
        raise OSError(int(code.group(1)), os.strerror(int(code.group(1))), str(path)) from exc
