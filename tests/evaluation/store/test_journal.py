"""episodes.jsonl read back: damaged lines are named, set aside, and their episodes run again."""

import json
import logging

from lerobot.configs.env import TaskSpec
from lerobot.evaluation.results import EpisodeResult
from lerobot.evaluation.store.journal import EpisodeJournal

TASK = TaskSpec("reach-v3", 0, "reach-v3", "Reach a goal position", fps=80)


def episode(index: int, failure: str | None = None) -> EpisodeResult:
    if failure:
        return EpisodeResult.failed(index, 100 + index, failure, retries=2)
    return EpisodeResult(index, 100 + index, True, True, 1.0, 1.0, 10, 0.5)


def test_a_corrupt_line_in_the_middle_is_named_and_set_aside(tmp_path, caplog):
    journal = EpisodeJournal(tmp_path)
    for index in range(3):
        journal.append(TASK, episode(index))
    lines = journal.path.read_text().splitlines()
    lines[1] = lines[1][: len(lines[1]) // 2]  # damaged, yet newline-terminated
    journal.path.write_text("".join(line + "\n" for line in lines))

    with caplog.at_level(logging.WARNING):
        reread = EpisodeJournal(tmp_path)
    assert sorted(reread.done_episodes(TASK.key)) == [0, 2]  # episode 1 runs again on resume
    assert "line 2 is not a readable episode record" in caplog.text
    assert len(journal.path.read_text().splitlines()) == 2
    assert (tmp_path / "episodes.jsonl.corrupt").read_text() == lines[1] + "\n"


def test_an_episode_failed_by_the_harness_is_not_done_and_its_rerun_replaces_it(tmp_path):
    journal = EpisodeJournal(tmp_path)
    journal.append(TASK, episode(0))
    journal.append(TASK, episode(1, failure="env 0 failed during step (died)"))
    assert sorted(EpisodeJournal(tmp_path).done_episodes(TASK.key)) == [0]
    journal.append(TASK, episode(1))
    reread = EpisodeJournal(tmp_path)
    assert sorted(reread.done_episodes(TASK.key)) == [0, 1]
    assert [e.episode.failure_reason for e in reread.entries] == [None, None]
    assert len(json.loads(journal.path.read_text().splitlines()[-1])) > 5
