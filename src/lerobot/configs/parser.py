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

import argparse
import contextlib
import difflib
import functools
import importlib
import inspect
import io
import json
import pkgutil
import re
import sys
import tempfile
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import draccus

from lerobot.configs.help import format_help, wants_help
from lerobot.utils.errors import EXIT_USAGE, ConfigError
from lerobot.utils.not_in_this_build import refused_names

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
USAGE_EXIT_CODE = EXIT_USAGE
PATH_KEY = "path"
"""`--<field>.path=<checkpoint>`: a field loaded from a saved config (LeRobot's name)."""
PLUGIN_DISCOVERY_SUFFIX = "discover_packages_path"
"""`--<field>.discover_packages_path=<package>` imports a plugin package (LeRobot's name)."""
PLUGIN_FLAG_SUFFIX = f".{PLUGIN_DISCOVERY_SUFFIX}"


class CliError(Exception):
    """A parse failure already reduced to one line; `main` prints it and exits with code 2."""


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse for the commands that take positional arguments (`lerobot-eval-report`,
    `lerobot-convert-robomimic`): a bad one fails with one line, raised as CliError, instead
    of argparse's usage block and exit."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{self.prog}: error: {message}")


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
    _check_config_file(args)
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
        try:
            return _parse(config_class, args, defaults, prog)
        except CliError as exc:
            raise CliError(_blame_checkpoint_config(str(exc), args, path)) from None


def _blame_checkpoint_config(message: str, args: Sequence[str], path: str) -> str:
    """A `--policy.<field>` error the user did not type came from the checkpoint's config.json."""
    flag = re.match(r"(--policy\.\w+)", message)
    if (
        flag is None
        or flag[1] in ("--policy.path", "--policy.revision")
        or any(arg.partition("=")[0] == flag[1] for arg in args)
    ):
        return message
    return f"{message} (the value comes from config.json of --policy.path={path})"


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
            load_plugin(value)
        except PluginLoadError as exc:
            raise CliError(f"{name}={value}: cannot import the plugin package ({exc.__cause__})") from None
    return rest


class PluginLoadError(Exception):
    """A plugin package that cannot be imported (LeRobot's name)."""


def load_plugin(plugin_path: str) -> None:
    """Import the package `plugin_path` and its submodules, which register their config types
    (LeRobot's function); PluginLoadError when any of them cannot be imported."""
    try:
        package = importlib.import_module(plugin_path)
        for module in pkgutil.iter_modules(getattr(package, "__path__", []), f"{package.__name__}."):
            importlib.import_module(module.name)
    except ImportError as exc:
        raise PluginLoadError(
            f"Failed to load plugin '{plugin_path}'. Verify the path and installation: {exc}"
        ) from exc


def parse_plugin_args(plugin_arg_suffix: str, args: Sequence[str]) -> dict[str, str]:
    """{flag without `--`: value} for the flags containing `plugin_arg_suffix`, given as
    `--flag=value` or `--flag value` (LeRobot's function)."""
    found: dict[str, str] = {}
    for index, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        key, separator, value = arg[2:].partition("=")
        if plugin_arg_suffix not in key:
            continue
        if not separator:
            if index + 1 >= len(args) or args[index + 1].startswith("--"):
                continue
            value = args[index + 1]
        found[key] = value
    return found


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


def _check_config_file(args: Sequence[str]) -> None:
    """`--config_path=<file>` (draccus's, as LeRobot uses it): a JSON file of flag values that
    the other flags override. A missing file is one line, not draccus's traceback."""
    tokens = iter(args)
    for arg in tokens:
        name, sep, value = arg.partition("=")
        if name != "--config_path":
            continue
        value = value if sep else next(tokens, "")
        if not Path(value).is_file():
            raise CliError(
                f"--config_path={value}: no such file (a JSON file of flag values; to resume a "
                "training run, pass --output_dir=<its directory> --resume=true with its flags)"
            )


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
    from lerobot.configs.checkpoint import config_fields, resolve_checkpoint
    from lerobot.configs.policies import PreTrainedConfig, read_checkpoint_config

    directory = resolve_checkpoint(path, revision)
    if BRIDGE_TYPE_FLAG in args:
        return _bridge_defaults(directory, path, revision, args, tmp)
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


BRIDGE_TYPE_FLAG = "--policy.type=lerobot_bridge"


def _bridge_defaults(
    directory: Path, path: str, revision: str | None, args: list[str], tmp: Path
) -> tuple[Path, list[str]]:
    """`--policy.type=lerobot_bridge --policy.path=X`: LeRobot loads X in the bridge's child,
    so its config.json is only checked for a type here, whatever that type is."""
    from lerobot.configs.checkpoint import read_any_policy_type

    fields = {
        "type": "lerobot_bridge",
        "pretrained_path": str(directory),
        "pretrained_revision": revision,
        "checkpoint_type": read_any_policy_type(directory, path),
    }
    defaults = tmp / "policy_defaults.json"
    defaults.write_text(json.dumps({"policy": fields}))
    return defaults, [a for a in args if a != BRIDGE_TYPE_FLAG]


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


# The patterns below match draccus's wording in the releases pyproject.toml allows (>=0.11.6,
# <0.12); tests/configs/test_parser.py fails when a release words its errors otherwise.
# draccus: Failed when parsing value='x' into field "<class 'pkg.Cls'>.name" of type list[str].
_PARSE_FAILURE = re.compile(
    r"Failed when parsing value=(?P<value>.*) into field .* of type (?P<type>.+?)\.?$"
)
_MISSING_FIELDS = re.compile(r"Missing required field\(s\) `(?P<fields>[^`]+)`")
EXAMPLES = {
    "dict[str, str]": """'{"observation.image": "observation.images.top"}'""",
    "list[str]": """'["a","b"]'""",
    "list[int]": "'[0,3]'",
}


def _describe_draccus_error(exc: BaseException) -> str:
    """One line naming the flag and what it expects, without draccus's internal class names."""
    path = getattr(exc, "path", None) or (exc.args[0] if len(exc.args) > 1 else None)
    message = str(exc.args[-1] if exc.args else exc).strip()
    first_line = message.splitlines()[0] if message else type(exc).__name__
    flag = f"--{'.'.join(path)}" if isinstance(path, tuple | list) and path else None
    failure = _PARSE_FAILURE.search(first_line)
    if failure and flag:
        expected = failure["type"]
        example = f", e.g. {flag}={EXAMPLES[expected]}" if expected in EXAMPLES else ""
        return f"{flag}={failure['value'].strip(chr(39))}: expected a value of type {expected}{example}"
    nested = _nested_union_failure(flag, message)
    if nested:
        return nested
    missing = _MISSING_FIELDS.search(first_line)
    if missing:
        return f"--{missing['fields']}: required"
    return f"{flag}: {first_line}" if flag else first_line


# A field inside a config union (`--env.*`, `--policy.*`): the sub-field in backticks, then the
# type that failed with the given value, e.g. "`task_ids`: ... list[int]: The given value='x' is ...".
_NESTED_FIELD = re.compile(r"`(?P<name>\w+)`:")
_NESTED_VALUE = re.compile(r"^\s*(?P<type>[\w\[\], |]+): .*value=(?P<value>'[^']*'|\S+)")
_NESTED_NOT_PARSED = re.compile(r"Couldn't parse (?P<value>'[^']*'|\S+) into an? (?P<type>\w+)")
_NESTED_UNKNOWN = re.compile(r"The fields? (?P<fields>.+?) (?:is|are) not valid for (?P<cls>\w+)")


def _nested_union_failure(flag: str | None, message: str) -> str | None:
    """The sub-field and value that failed inside a union (`--env.*`), as one line."""
    lines = [line for line in message.splitlines() if line.strip()]
    if not (flag and lines):
        return None
    unknown = _NESTED_UNKNOWN.search(lines[-1])
    if unknown:
        fields = ", ".join(f"{flag}.{name}" for name in re.findall(r"`(\w+)`", unknown["fields"]))
        return f"{fields}: not a setting of this {flag.lstrip('-')} type; see lerobot-eval --help"
    names = _NESTED_FIELD.findall(message)
    value = _NESTED_VALUE.search(lines[-1]) or _NESTED_NOT_PARSED.search(lines[-1])
    if not (names and value):
        return None
    expected = value["type"].strip()
    field_flag = f"{flag}.{'.'.join(names)}"
    example = f", e.g. {field_flag}={EXAMPLES[expected]}" if expected in EXAMPLES else ""
    return f"{field_flag}={value['value'].strip(chr(39))}: expected a value of type {expected}{example}"


def _last_argparse_error(text: str, prog: str) -> str:
    """argparse prints usage then 'prog: error: ...'; keep only the error."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if ": error: " in line:
            error = line.split(": error: ", 1)[1]
            return f"{prog}: error: {error}{_suggest_flags(error, text)}"
    return lines[-1] if lines else f"{prog}: invalid arguments"


def _suggest_flags(error: str, usage: str) -> str:
    """' (did you mean ...?)' for unrecognized flags close to a real one in argparse's usage:
    a misspelling, or a shortened key (`--policy.compile` for LeRobot's `compile_model`)."""
    if not error.startswith("unrecognized arguments: "):
        return ""
    known = sorted(set(re.findall(r"--[\w.]+", usage.split(": error: ", 1)[0])))
    suggestions: list[str] = []
    for given in re.findall(r"(--[\w.]+)", error.removeprefix("unrecognized arguments: ")):
        extended = [flag for flag in known if flag.startswith(f"{given}_")]
        for flag in extended or difflib.get_close_matches(given, known, n=1, cutoff=0.8):
            if flag not in suggestions:
                suggestions.append(flag)
    return f" (did you mean {' or '.join(suggestions[:3])}?)" if suggestions else ""


def parse_arg(arg_name: str, args: Sequence[str] | None = None) -> str | None:
    """The value of `--<arg_name>=value` in `args` (default the command line), or None."""
    prefix = f"--{arg_name}="
    for arg in sys.argv[1:] if args is None else args:
        if arg.startswith(prefix):
            return arg[len(prefix) :]
    return None


def get_path_arg(field_name: str, args: Sequence[str] | None = None) -> str | None:
    """The value of `--<field_name>.path=...` (LeRobot's helper)."""
    return parse_arg(f"{field_name}.{PATH_KEY}", args)


def get_type_arg(field_name: str, args: Sequence[str] | None = None) -> str | None:
    """The value of `--<field_name>.type=...` (LeRobot's helper)."""
    return parse_arg(f"{field_name}.type", args)


__getattr__ = refused_names(__name__)  # LeRobot's parser helpers this build lacks, refused on use
