"""Logging set-up for the command-line entry points (library modules only create loggers)."""

import logging


def init_logging(level: str = "INFO") -> None:
    """Configure the root logger once; idempotent so tests and notebooks can call it again."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        force=True,
    )
