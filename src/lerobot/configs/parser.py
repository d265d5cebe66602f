"""Command-line parsing that fails in one line, before anything starts.

draccus builds the config; this module turns its failures (and ours) into a single line that
names the flag and the allowed values, and exit code 2.

`--policy.path=<dir or repo id>` (with `--policy.revision=`) is resolved here, as in LeRobot:
the checkpoint's config.json becomes the defaults of `--policy`, its `type` picks the config
class, and any other `--policy.*` flag overrides a saved value (`--policy.n_action_steps=10`).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
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
    path, revision, args = _pop_checkpoint_flags(args)
    if path is None:
        if revision is not None:
            raise CliError(f"--policy.revision={revision}: only valid with --policy.path")
        return _parse(config_class, args, None, prog)
    with tempfile.TemporaryDirectory(prefix="lerobot-policy-") as tmp:
        try:
            defaults, args = _checkpoint_defaults(path, revision, args, Path(tmp))
        except ConfigError as exc:
            raise CliError(str(exc)) from None
        return _parse(config_class, args, defaults, prog)


def _parse(config_class: type[T], args: list[str], defaults: Path | None, prog: str) -> T:
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), draccus.config_type("json"):
            return draccus.parse(config_class=config_class, config_path=defaults, args=args)
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


def _pop_checkpoint_flags(args: Sequence[str]) -> tuple[str | None, str | None, list[str]]:
    """(--policy.path, --policy.revision, the other args); both `--flag=v` and `--flag v`."""
    values: dict[str, str] = {}
    rest: list[str] = []
    tokens = iter(args)
    for arg in tokens:
        name, sep, value = arg.partition("=")
        if name in ("--policy.path", "--policy.revision"):
            if not sep:
                value = next(tokens, "")
            if not value:
                raise CliError(f"{name}: needs a value")
            values[name] = value
        else:
            rest.append(arg)
    return values.get("--policy.path"), values.get("--policy.revision"), rest


def _checkpoint_defaults(
    path: str, revision: str | None, args: list[str], tmp: Path
) -> tuple[Path, list[str]]:
    """Write the checkpoint's policy config as a draccus defaults file; drop a matching --policy.type."""
    from lerobot.configs.checkpoint import config_fields, read_checkpoint_config, resolve_checkpoint
    from lerobot.configs.policies import PreTrainedConfig

    directory = resolve_checkpoint(path, revision)
    saved = read_checkpoint_config(directory, path)
    policy_type = saved["type"]
    for arg in args:
        name, _, value = arg.partition("=")
        if name == "--policy.type" and value != policy_type:
            raise CliError(
                f"--policy.type={value}: the checkpoint at --policy.path={path} is of type {policy_type!r}"
            )
    fields = config_fields(PreTrainedConfig.get_choice_class(policy_type), saved)
    fields.update(type=policy_type, pretrained_path=str(directory), pretrained_revision=revision)
    defaults = tmp / "policy_defaults.json"
    defaults.write_text(json.dumps({"policy": fields}))
    return defaults, [a for a in args if a.partition("=")[0] != "--policy.type"]


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
        return f"--{'.'.join(path)}: {str(message).strip().splitlines()[0]}"
    return str(message).splitlines()[0] if str(message) else type(exc).__name__


def _last_argparse_error(text: str, prog: str) -> str:
    """argparse prints usage then 'prog: error: ...'; keep only the error."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if ": error: " in line:
            return f"{prog}: error: {line.split(': error: ', 1)[1]}"
    return lines[-1] if lines else f"{prog}: invalid arguments"
