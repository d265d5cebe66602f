"""Command-line parsing that fails in one line, before anything starts.

draccus builds the config; this module turns its failures (and ours) into a single line that
names the flag and the allowed values, and exit code 2.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence
from typing import TypeVar

import draccus

from lerobot.utils.errors import ConfigError

T = TypeVar("T")
USAGE_EXIT_CODE = 2


class CliError(Exception):
    """A parse failure already reduced to one line; `main` prints it and exits with code 2."""


def parse_config(config_class: type[T], argv: Sequence[str] | None = None, prog: str = "lerobot") -> T:
    """Parse `argv` into `config_class`; raise CliError with a one-line message on bad input."""
    args = list(sys.argv[1:] if argv is None else argv)
    _reject_unsupported_flags(args)
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            return draccus.parse(config_class=config_class, args=args)
    except SystemExit as exc:
        if exc.code in (0, None):  # --help
            raise
        raise CliError(_last_argparse_error(stderr.getvalue(), prog)) from None
    except draccus.utils.DraccusException as exc:
        config_error = _find_config_error(exc)
        if config_error is not None:
            raise CliError(str(config_error)) from None
        raise CliError(_describe_draccus_error(exc)) from None
    except ConfigError as exc:
        raise CliError(str(exc)) from None


def _reject_unsupported_flags(args: Sequence[str]) -> None:
    for arg in args:
        if arg.startswith("--policy.path"):
            raise CliError(
                "--policy.path: loading checkpoints is not available in this build yet; "
                "use --policy.type=metaworld_expert or --policy.type=random"
            )


def _find_config_error(exc: BaseException) -> ConfigError | None:
    """Our own validation error, wherever draccus wrapped it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ConfigError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _describe_draccus_error(exc: BaseException) -> str:
    path = getattr(exc, "path", None) or (exc.args[0] if len(exc.args) > 1 else None)
    message = exc.args[-1] if exc.args else str(exc)
    if isinstance(path, tuple | list) and path:
        return f"--{'.'.join(path)}: {message}"
    return str(message).splitlines()[0] if str(message) else type(exc).__name__


def _last_argparse_error(text: str, prog: str) -> str:
    """argparse prints usage then 'prog: error: ...'; keep only the error."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if ": error: " in line:
            return f"{prog}: error: {line.split(': error: ', 1)[1]}"
    return lines[-1] if lines else f"{prog}: invalid arguments"
