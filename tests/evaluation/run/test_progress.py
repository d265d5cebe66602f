import io

import pytest

from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.progress import TaskProgress, progress_enabled


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def result(index: int, success: bool) -> EpisodeResult:
    return EpisodeResult(index, 1000 + index, success, success, 1.0, 1.0, 10, 0.1)


def test_bars_only_on_a_terminal_outside_slurm(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert progress_enabled(FakeTerminal())
    assert not progress_enabled(io.StringIO())  # a log file or a pipe
    monkeypatch.setenv("SLURM_JOB_ID", "1234")
    assert not progress_enabled(FakeTerminal())


def test_bar_counts_resumed_episodes_and_shows_the_running_success_rate(monkeypatch):
    shown = FakeTerminal()
    monkeypatch.setattr("sys.stderr", shown)  # tqdm writes to stderr
    progress = TaskProgress("push-v3", total=4, done=[result(0, True)], enabled=True)
    progress.update(result(1, False))
    progress.update(result(2, True))
    progress.close()
    assert progress.n_done == 3 and progress.success_rate == pytest.approx(2 / 3)
    last_frame = shown.getvalue().split("\r")[-1]
    assert "push-v3" in last_frame and "3/4" in last_frame and "success 67%" in last_frame


def test_disabled_bar_writes_nothing(monkeypatch):
    shown = FakeTerminal()
    monkeypatch.setattr("sys.stderr", shown)
    progress = TaskProgress("push-v3", total=2, done=[], enabled=False)
    progress.update(result(0, True))
    progress.close()
    assert shown.getvalue() == "" and progress.success_rate == 1.0
