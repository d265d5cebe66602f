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


MAX_QUOTED_CHARS = 500
"""The most characters of another party's text (a server's error, a failure reason) that a log
line or a result file quotes."""


def one_line(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """`text`'s first line, its control characters escaped, cut to `limit` characters with how
    many were left out: what a log line or result file may quote of text it did not write, so a
    peer can neither forge log lines nor fill disks."""
    lines = str(text).splitlines()
    first = lines[0] if lines else ""
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in first[:limit])
    left_out = len(first) - limit
    return escaped if left_out <= 0 else f"{escaped}... ({left_out} more characters)"
