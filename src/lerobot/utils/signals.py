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


_deferral_depth = 0
_pending_signal: int | None = None


def _raise_interrupted(signum: int, frame) -> None:
    global _pending_signal
    if _deferral_depth:
        _pending_signal = signum  # raised when the critical section ends
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def interrupts_as_exceptions() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise Interrupted; handlers restored afterwards."""
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Let a short critical write finish before an interrupt is raised.

    A signal arriving inside the block is remembered and raised as Interrupted when the
    outermost block ends. (Signal masks cannot do this: the kernel hands a process signal to
    any thread that does not block it, torch's and tqdm's included.)
    """
    global _deferral_depth, _pending_signal
    _deferral_depth += 1
    try:
        yield
    finally:
        _deferral_depth -= 1
        if _deferral_depth == 0 and _pending_signal is not None:
            signum, _pending_signal = _pending_signal, None
            raise Interrupted(signum)


def stop_at_the_next_signal() -> None:
    """After a first SIGINT or SIGTERM, while the run saves what it has: a second one ends the
    process at once (the signal's default action), as a user pressing Ctrl-C twice expects."""
    import threading

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
