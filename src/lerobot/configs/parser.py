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
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import draccus

from lerobot.utils.errors import EXIT_USAGE, ConfigError

T = TypeVar("T")
USAGE_EXIT_CODE = EXIT_USAGE


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
        try:
            return _parse(config_class, args, defaults, prog)
        except CliError as exc:
            raise CliError(_blame_checkpoint_config(str(exc), args, path)) from None


def _blame_checkpoint_config(message: str, args: Sequence[str], path: str) -> str:
    """A `--policy.<field>` error the user did not type came from the checkpoint's config.json."""
    flag = re.match(r"(--policy\.\w+)", message)
    if flag is None or any(arg.partition("=")[0] == flag[1] for arg in args):
        return message
    return f"{message} (the value comes from config.json of --policy.path={path})"


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


# draccus: Failed when parsing value='x' into field "<class 'pkg.Cls'>.name" of type list[str].
_PARSE_FAILURE = re.compile(
    r"Failed when parsing value=(?P<value>.*) into field .* of type (?P<type>.+?)\.?$"
)
_MISSING_FIELDS = re.compile(r"Missing required field\(s\) `(?P<fields>[^`]+)`")
EXAMPLES = {
    "dict[str, str]": """'{"observation.image": "observation.images.top"}'""",
    "list[str]": "'[a,b]'",
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
            return f"{prog}: error: {line.split(': error: ', 1)[1]}"
    return lines[-1] if lines else f"{prog}: invalid arguments"
