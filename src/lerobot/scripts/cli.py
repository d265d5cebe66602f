"""The start every command-line entry point shares."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TypeVar

from lerobot.configs.parser import CliError, parse_config
from lerobot.utils.gl import default_mujoco_gl
from lerobot.utils.logging_utils import init_logging

T = TypeVar("T")


def start_cli(config_class: type[T], argv: Sequence[str] | None, prog: str) -> T | None:
    """Set up logging and headless rendering, then parse `argv` into `config_class`.

    On bad input, print the one-line error and return None: the caller exits with
    USAGE_EXIT_CODE before anything starts. Logging then follows the config's `log_level`.
    """
    init_logging()
    default_mujoco_gl()
    try:
        cfg = parse_config(config_class, argv, prog=prog)
    except CliError as exc:
        sys.stderr.write(f"{exc}\n")
        return None
    init_logging(cfg.log_level)
    return cfg
