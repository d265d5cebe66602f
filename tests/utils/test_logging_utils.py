import io
import logging
import sys

from lerobot.utils.logging_utils import MAX_QUOTED_CHARS, init_logging, one_line


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


def test_quoted_text_is_one_escaped_bounded_line():
    forged = "bad key\n12:00:00 INFO lerobot.scripts.lerobot_eval: overall success 100.0%"
    assert one_line(forged) == "bad key"
    assert one_line("tab\there\x1b[31mred") == "tab\\there\\x1b[31mred"
    assert (
        one_line("x" * 2_000_000)
        == "x" * MAX_QUOTED_CHARS + f"... ({2_000_000 - MAX_QUOTED_CHARS} more characters)"
    )
    assert one_line("") == ""
