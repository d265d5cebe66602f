"""Command-line parsing that fails in one line, before anything starts.

draccus builds the config; this module turns its failures (and ours) into a single line that
names the flag and the allowed values, and exit code 2.

`--policy.path=<dir or repo id>` (with `--policy.revision=`) is resolved here, as in LeRobot:
the checkpoint's config.json becomes the defaults of `--policy`, its `type` picks the config
class, and any other `--policy.*` flag overrides a saved value (`--policy.n_action_steps=10`).
`--help` prints every flag (`lerobot.configs.help`); `--<field>.discover_packages_path=<pkg>`
imports a plugin package before parsing, as LeRobot does; `wrap` is LeRobot's decorator for a
`main(cfg)` function.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import io
import json
import pkgutil
import sys
import tempfile
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import draccus

from lerobot.configs.help import format_help, wants_help
from lerobot.utils.errors import ConfigError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
USAGE_EXIT_CODE = 2
PLUGIN_FLAG_SUFFIX = ".discover_packages_path"


class CliError(Exception):
    """A parse failure already reduced to one line; `main` prints it and exits with code 2."""


class HelpRequested(Exception):  # noqa: N818  (a request, not an error; like SystemExit)
    """`--help` was given; carries the help text, which the CLI prints before exiting with 0."""


def parse_config(
    config_class: type[T],
    argv: Sequence[str] | None = None,
    prog: str = "lerobot",
    description: str = "",
    config_path: Path | None = None,
) -> T:
    """Parse `argv` into `config_class`; raise CliError with a one-line message on bad input
    and HelpRequested for `--help`."""
    args = _load_plugins(list(sys.argv[1:] if argv is None else argv))
    if wants_help(args):
        raise HelpRequested(format_help(config_class, args, prog, description))
    path, revision, args = _pop_checkpoint_flags(args)
    if path is None:
        if revision is not None:
            raise CliError(f"--policy.revision={revision}: only valid with --policy.path")
        return _parse(config_class, args, config_path, prog)
    with tempfile.TemporaryDirectory(prefix="lerobot-policy-") as tmp:
        try:
            defaults, args = _checkpoint_defaults(path, revision, args, Path(tmp))
        except ConfigError as exc:
            raise CliError(str(exc)) from None
        return _parse(config_class, args, defaults, prog)


def wrap(config_path: Path | None = None) -> Callable[[F], F]:
    """LeRobot's `@parser.wrap()`: `main(cfg)` called with a config runs on it; called without
    one, it parses `sys.argv` first (bad input: one line on stderr, exit 2; `--help`: exit 0)."""

    def decorator(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            config_class = _config_class_of(fn)
            if args and isinstance(args[0], config_class):
                return fn(*args, **kwargs)
            prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "lerobot"
            try:
                cfg = parse_config(config_class, sys.argv[1:], prog, fn.__doc__ or "", config_path)
            except HelpRequested as help_text:
                sys.stdout.write(str(help_text))
                sys.exit(0)
            except CliError as exc:
                sys.stderr.write(f"{exc}\n")
                sys.exit(USAGE_EXIT_CODE)
            return fn(cfg, *args, **kwargs)

        return typing.cast(F, wrapper)

    return decorator


def _config_class_of(fn: Callable[..., Any]) -> type:
    """The annotated type of `fn`'s first parameter (the config it parses into); only that
    annotation is evaluated (others may name types imported for type checkers only)."""
    parameters = list(inspect.signature(fn).parameters.values())
    annotation = parameters[0].annotation if parameters else inspect.Parameter.empty
    if annotation is inspect.Parameter.empty:
        raise TypeError(f"{fn.__name__}: @wrap needs the config type annotated on the first parameter")
    return eval(annotation, fn.__globals__) if isinstance(annotation, str) else annotation  # noqa: S307


def _load_plugins(args: list[str]) -> list[str]:
    """Import the packages named by `--<field>.discover_packages_path=<pkg>` (and their
    submodules), so the config types they register can be chosen; the other args."""
    rest: list[str] = []
    tokens = iter(args)
    for arg in tokens:
        name, sep, value = arg.partition("=")
        if not (name.startswith("--") and name.endswith(PLUGIN_FLAG_SUFFIX)):
            rest.append(arg)
            continue
        value = value if sep else next(tokens, "")
        try:
            _import_package(value)
        except ImportError as exc:
            raise CliError(f"{name}={value}: cannot import the plugin package ({exc})") from None
    return rest


def _import_package(name: str) -> None:
    package = importlib.import_module(name)
    for module in pkgutil.iter_modules(getattr(package, "__path__", []), f"{package.__name__}."):
        importlib.import_module(module.name)


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
