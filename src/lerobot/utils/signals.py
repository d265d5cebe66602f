"""Turn SIGINT and SIGTERM into one exception, so a stopped run cleans up and reports.

Both signals must end the same way: stop stepping, close the workers, write what finished.
Python raises KeyboardInterrupt for SIGINT only; a scheduler pre-empting a job sends SIGTERM,
whose default action would kill the process with no clean-up at all.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGINT or SIGTERM."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """The shell convention for death by a signal: 128 + its number."""
        return 128 + self.signum


@contextlib.contextmanager
def interrupts_as_exceptions() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise Interrupted; handlers restored afterwards."""

    def handler(signum, frame):
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
