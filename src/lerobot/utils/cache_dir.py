"""Where lerobot keeps what it works out on a machine and reuses across runs."""

from __future__ import annotations

import os
from pathlib import Path


def lerobot_cache_dir() -> Path:
    """$LEROBOT_CACHE_DIR, else $XDG_CACHE_HOME/lerobot, else ~/.cache/lerobot.

    Read at every call rather than once at import: a test, a job script or a container sets
    these variables after lerobot is imported.
    """
    if os.environ.get("LEROBOT_CACHE_DIR"):
        return Path(os.environ["LEROBOT_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "lerobot"
