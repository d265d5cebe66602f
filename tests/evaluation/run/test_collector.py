"""The collector keeps episodes.jsonl and the results it will write in step."""

import os
import signal

import pytest

from lerobot.configs.env import TaskSpec
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.run.collector import RunCollector
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.store.journal import EpisodeJournal
from lerobot.utils.signals import Interrupted, interrupts_as_exceptions

TASK = TaskSpec("reach-v3", 0, "reach-v3", "Reach a goal position", fps=80)


class JournalInterruptedWhileWriting(EpisodeJournal):
    """Ctrl-C arrives while the episode's line is being written (a real SIGINT to this process)."""

    def append(self, task, episode):
        os.kill(os.getpid(), signal.SIGINT)
        super().append(task, episode)


def test_an_interrupt_while_an_episode_is_journaled_leaves_it_in_the_results_too(tmp_path):
    collector = RunCollector(RunPlan((TASK,), n_episodes=3), JournalInterruptedWhileWriting(tmp_path))
    with interrupts_as_exceptions(), pytest.raises(Interrupted):
        collector.episode_finished(TASK, EpisodeResult(0, 100, True, True, 1.0, 1.0, 10, 0.5))
    assert len(EpisodeJournal(tmp_path).entries) == 1
    assert collector.n_episodes == 1
    assert collector.result(complete=False).overall.n_episodes == 1
