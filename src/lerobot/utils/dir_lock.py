"""One run per output directory at a time: an advisory lock held for the run's whole life.

Two runs writing one directory would run the same episodes twice and interleave their journal
lines. The lock is `flock` on a file in the directory, so the kernel releases it when its holder
exits, however it exits: a lock left by a killed run is never stale. The holder's pid is
written into the file so that the second run can say who holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from lerobot.utils.errors import ConfigError

LOCK_FILENAME = ".lerobot.lock"


@contextlib.contextmanager
def locked_dir(directory: Path, flag: str) -> Iterator[None]:
    """Hold the directory's lock for the duration; ConfigError naming the holder if it is taken."""
    path = Path(directory) / LOCK_FILENAME
    try:
        # Never through a link: the pid written below would overwrite whatever it points to.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise ConfigError(
                f"{flag}={directory}: {LOCK_FILENAME} there is a symbolic link; remove it (runs never follow it)"
            ) from None
        raise ConfigError(f"{flag}={directory}: cannot write there ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"{flag}={directory}: in use by another run (pid {_holder(fd)}); wait for it to end "
                "or choose another directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip() or "unknown"
    except OSError:
        return "unknown"
