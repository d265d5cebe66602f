"""Logging set-up for the command-line entry points (library modules only create loggers)."""

import logging
import sys


class CurrentStderrHandler(logging.StreamHandler):
    """Writes each record to whatever `sys.stderr` is when the record is emitted.

    A plain StreamHandler keeps the stream it was given. Test runners and notebooks swap
    `sys.stderr` and later close the swapped-in one, so a handler bound to it raises "I/O
    operation on closed file" for every later record, for instance from a policy server's thread
    that outlives the test that started it.
    """

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        """Ignored: the stream is always the current `sys.stderr`."""


def init_logging(level: str = "INFO") -> None:
    """Configure the root logger once; idempotent so tests and notebooks can call it again."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        handlers=[CurrentStderrHandler()],
        force=True,
    )
