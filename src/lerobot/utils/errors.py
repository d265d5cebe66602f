"""The exception types a user can act on or the rollout handles, and the exit codes the commands end with."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Sequence
from typing import Any

EXIT_OK = 0
EXIT_USAGE = 2
"""Bad input (a flag, a file, an output directory): one line on stderr, nothing was run."""
EXIT_INCOMPLETE = 3
"""Episodes are missing because of the harness, not the input: the run finished, but some
episodes failed for good (a crashed or hung simulator, a reset error, a lost policy server),
or it stopped part-way (`HarnessOutageError`). They are left out of every rate;
`--eval.resume=true` runs exactly those."""
# Interrupted by SIGINT / SIGTERM: 128 + the signal's number (130, 143), as shells report it.


class ConfigError(ValueError):
    """A user-facing configuration error.

    Its message is one line naming the flag, the value and what is allowed; the CLI prints
    it as is and exits with code 2, before any simulator or worker starts.
    """


def flag_value(value: Any) -> str:
    """A value as it is typed on the command line: `true`, `null`, JSON for lists and dicts."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, default=str)
    return str(value)


def require_choice(flag: str, value: Any, choices: Sequence[Any]) -> None:
    """The one-line error for a value of `flag` that is not among `choices`."""
    if value not in choices:
        raise ConfigError(f"{flag}={value!r}: must be one of {', '.join(map(str, choices))}")


def require_at_least(flag: str, value: int, low: int) -> None:
    """The one-line error for a count or size of `flag` below `low`."""
    if value < low:
        raise ConfigError(f"{flag}={value}: must be an integer >= {low}")


def require_extra(needed_by: str | Callable[[], str], extra: str, modules: Sequence[str]) -> None:
    """The one-line error for `needed_by` (a flag and its value, or a command) when a module of
    the optional dependency set `extra` (pyproject.toml's extras) is not installed.

    Called while the command line is parsed, before torch or a simulator loads: otherwise the
    user reads a ModuleNotFoundError's traceback from deep inside a run, or, where a worker
    imports the simulator, every episode failing for the harness. Looking a module up does not
    import it. `needed_by` may be a callable, asked only when a module is missing (a config
    subclass nobody registered has no `--env.type` name to give, and needs none while its
    modules are there).
    """
    missing = [module for module in modules if importlib.util.find_spec(module) is None]
    if missing:
        who = needed_by() if callable(needed_by) else needed_by
        raise ConfigError(
            f"{who}: needs {', '.join(missing)} (not installed); pip install 'lerobot[{extra}]'"
        )


class NotInThisBuildError(NotImplementedError):
    """A name of LeRobot's API this build does not provide, used: the message names it and says
    what to use instead (lerobot.utils.not_in_this_build)."""


class ResultsWriteError(OSError):
    """Results could not be written (disk full, read-only file system, ...): one line naming
    the file; what was already on disk is kept."""


class PolicyUnreachableError(ConfigError):
    """No policy server answers at the configured address when the run starts: a wrong
    `--policy.host` or `--policy.port`. The CLI prints one line and exits with code 2."""


class HarnessOutageError(RuntimeError):
    """Our side stopped the run part-way, not the input nor the policy: a policy server that
    stayed away longer than the client waits for it, no Ray worker alive. The CLI prints one
    line and exits with EXIT_INCOMPLETE; the finished episodes are kept for `--eval.resume`."""


class PolicyServerLostError(HarnessOutageError):
    """A policy server that answered earlier in the run did not come back in time."""


class HarnessError(RuntimeError):
    """Our side of an episode failed, not the policy: e.g. the connection to a policy server
    dropped mid-request.

    Raised by `select_action`, it makes the rollout treat the episodes of `rows` (batch rows,
    i.e. env slots; None for every running one) like episodes whose env crashed: each is
    re-run from its seed, counted in its retries, and never scored as a policy failure.
    """

    def __init__(self, message: str, rows: Sequence[int] | None = None):
        super().__init__(message)
        self.rows = tuple(rows) if rows is not None else None


class PolicyError(RuntimeError):
    """The policy itself failed on `rows` (None: every running one), e.g. a policy server
    answered with an error: those episodes end for good, failed, with this message as their
    `failure_reason`; the others go on."""

    def __init__(self, message: str, rows: Sequence[int] | None = None):
        super().__init__(message)
        self.rows = tuple(rows) if rows is not None else None
