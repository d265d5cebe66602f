"""LeRobot's `init_logging` (and, where LeRobot before 0.5 kept it, `get_safe_torch_device`), for
scripts written against `lerobot.utils.utils`."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from lerobot.utils.logging_utils import init_logging as init_console_logging

__all__ = ["init_logging"]


def init_logging(
    log_file: Path | None = None,
    display_pid: bool = False,
    console_level: str = "INFO",
    file_level: str = "DEBUG",
    accelerator: Any | None = None,
) -> None:
    """Console logging at `console_level` and, with `log_file`, a file at `file_level`.

    Same parameters as LeRobot's: `display_pid` adds the process id to each line, and with an
    Accelerate `accelerator` only its main process logs to the console.
    """
    init_console_logging(console_level)
    root = logging.getLogger()
    pid = f"[PID: {os.getpid()}] " if display_pid else ""
    formatter = logging.Formatter(f"%(asctime)s %(levelname)s {pid}%(name)s: %(message)s", datefmt="%H:%M:%S")
    main_process = getattr(accelerator, "is_main_process", True)
    for handler in root.handlers:
        handler.setFormatter(formatter)
        handler.setLevel(console_level.upper() if main_process else logging.ERROR)
    if log_file is not None:
        file_handler = logging.FileHandler(log_file)
        file_handler.setFormatter(formatter)
        file_handler.setLevel(file_level.upper())
        root.addHandler(file_handler)
        root.setLevel(min(logging.getLevelName(console_level.upper()), file_handler.level))


def __getattr__(name: str) -> Any:
    """`get_safe_torch_device`, which lives in `lerobot.utils.device_utils` (LeRobot 0.6.1's place)
    and imports torch: loaded on first use, so that logging set-up stays light."""
    if name == "get_safe_torch_device":
        from lerobot.utils.device_utils import get_safe_torch_device

        return get_safe_torch_device
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
