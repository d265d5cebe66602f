"""LeRobot's general helpers of `lerobot.utils.utils`, for scripts written against it: logging
set-up, nested dicts, image shapes, numbers and times (and `get_safe_torch_device`, where
LeRobot kept it before it moved to `lerobot.utils.device_utils`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lerobot.utils.logging_utils import init_logging as init_console_logging
from lerobot.utils.not_in_this_build import refused_attribute

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


def inside_slurm() -> bool:
    """Whether this process was started by Slurm."""
    return "SLURM_JOB_ID" in os.environ


def format_big_number(num: float, precision: int = 0) -> str | float:
    """`1234567` -> `"1M"`: thousands, millions, ... up to quadrillions, at `precision` digits."""
    for suffix in ("", "K", "M", "B", "T", "Q"):
        if abs(num) < 1000.0:
            return f"{num:.{precision}f}{suffix}"
        num /= 1000.0
    return num


def get_channel_first_image_shape(image_shape: tuple) -> tuple:
    """(h, w, c) -> (c, h, w); a shape already channel-first is returned as it is."""
    height, width, channels = image_shape[0], image_shape[1], image_shape[2]
    if channels < height and channels < width:
        return (channels, height, width)
    if height < width and height < channels:
        return tuple(image_shape)
    raise ValueError(image_shape)


def has_method(cls: object, method_name: str) -> bool:
    return callable(getattr(cls, method_name, None))


def unwrap_scalar(value: Any) -> Any:
    """A tensor or NumPy scalar, or a one-element list of one, as a Python scalar; anything else
    as it is."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, list):
        if len(value) != 1:
            raise ValueError(f"Expected a scalar, got list of length {len(value)}: {value!r}")
        return unwrap_scalar(value[0])
    return value


def is_valid_numpy_dtype_string(dtype_str: str) -> bool:
    import numpy as np

    try:
        np.dtype(dtype_str)
    except TypeError:
        return False
    return True


def get_elapsed_time_in_days_hours_minutes_seconds(elapsed_time_s: float) -> tuple[int, int, int, float]:
    days, rest = divmod(elapsed_time_s, 24 * 3600)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return int(days), int(hours), int(minutes), seconds


def flatten_dict(d: dict, parent_key: str = "", sep: str = "/") -> dict:
    """{"a": {"b": 1}, "c": 2} -> {"a/b": 1, "c": 2}."""
    flat: dict = {}
    for key, value in d.items():
        name = f"{parent_key}{sep}{key}" if parent_key else key
        if isinstance(value, dict):
            flat.update(flatten_dict(value, name, sep))
        else:
            flat[name] = value
    return flat


def unflatten_dict(d: dict, sep: str = "/") -> dict:
    """{"a/b": 1, "c": 2} -> {"a": {"b": 1}, "c": 2}."""
    nested: dict = {}
    for key, value in d.items():
        *parents, last = key.split(sep)
        inner = nested
        for part in parents:
            inner = inner.setdefault(part, {})
        inner[last] = value
    return nested


def cycle(iterable: Iterable[Any]) -> Iterator[Any]:
    """The items of `iterable`, over and over, iterating it afresh each time (unlike
    itertools.cycle, which replays the first pass: a DataLoader reshuffles)."""
    while True:
        yield from iterable


def __getattr__(name: str) -> Any:
    """`get_safe_torch_device`, which lives in `lerobot.utils.device_utils` (LeRobot 0.6.1's place)
    and imports torch: loaded on first use, so that logging set-up stays light."""
    if name == "get_safe_torch_device":
        from lerobot.utils.device_utils import get_safe_torch_device

        return get_safe_torch_device
    return refused_attribute(__name__, name)
