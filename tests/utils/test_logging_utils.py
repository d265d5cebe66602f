import io
import logging
import sys

from lerobot.utils.logging_utils import init_logging


def test_records_go_to_the_stderr_of_the_moment_even_after_the_first_one_closed(monkeypatch):
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    init_logging("INFO")
    logging.getLogger("lerobot.test").info("to the first")
    first.close()  # as a test runner closes the stderr it captured a test with

    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("lerobot.test").info("to the second")

    assert "INFO lerobot.test: to the second" in second.getvalue()
