"""A dataset on disk after every episode, whatever happens to the process: each append is a
commit, a crash between two of its renames leaves the previous dataset, and a reopened
dataset continues exactly as if nothing had happened."""

import os
import shutil
import signal
import subprocess
import textwrap

import numpy as np
import pytest

from lerobot.configs.record import FileLimits
from lerobot.datasets.reader import load_episodes
from lerobot.datasets.recorder import DatasetRecorder
from lerobot.datasets.recording_log import RecordingLog
from lerobot.datasets.writer import DatasetWriter
from lerobot.utils.signals import Interrupted, interrupts_as_exceptions
from tests.datasets.conftest import CAMERA, FPS, add_episode, dataset_files, grey_levels
from tests.lerobot_ref import NO_LEROBOT_REASON, lerobot_ref_python

LENGTHS = {0: 3, 1: 4, 2: 5}


class Killed(BaseException):
    """The process dying at a rename: nothing after it runs (not even `except Exception`)."""


def recorder_at(root, limits=None) -> DatasetRecorder:
    return DatasetRecorder(
        root, fps=FPS, task="reach the goal", limits=limits, log=RecordingLog({"seed": 100})
    )


def reopened(root) -> DatasetRecorder:
    return DatasetRecorder.resume(root, "reach the goal", {"seed": 100})


def test_every_ended_episode_is_a_dataset_at_once(tmp_path):
    root = tmp_path / "ds"
    recorder = recorder_at(root)
    for episode, length in LENGTHS.items():
        add_episode(recorder, episode, length)

        frames = load_episodes(root, cache_dir=tmp_path / f"cache{episode}")  # before finish()
        assert frames.episode_lengths.tolist() == [LENGTHS[e] for e in range(episode + 1)]
        grey = frames.camera_frames(CAMERA, np.arange(frames.n_frames)).mean(axis=(1, 2, 3))
        np.testing.assert_allclose(grey, grey_levels([(e, LENGTHS[e]) for e in range(episode + 1)]), atol=3)
    assert RecordingLog.read(root, 3).seeds() == [100, 101, 102]


def count_renames(monkeypatch, kill_at: int | None = None) -> list[int]:
    """Count os.replace calls from now on; with `kill_at`, the process 'dies' at that one."""
    calls = [0]
    real_replace = os.replace

    def replace(src, dst):
        if calls[0] == kill_at:
            raise Killed(dst)
        calls[0] += 1
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return calls


def crash_states(tmp_path, monkeypatch) -> list:
    """Two episodes recorded, then a third cut short at each of its renames in turn: one
    copy of the dataset per point it can die at."""
    base = tmp_path / "base"
    recorder = recorder_at(base)
    add_episode(recorder, 0, 3)
    add_episode(recorder, 1, 4)
    probe = tmp_path / "probe"
    shutil.copytree(base, probe)
    with monkeypatch.context() as patch:
        renames = count_renames(patch)
        add_episode(reopened(probe), 2, 5)
    states = []
    for kill_at in range(renames[0]):
        root = tmp_path / f"killed_at_{kill_at}"
        shutil.copytree(base, root)
        with monkeypatch.context() as patch, pytest.raises(Killed):
            count_renames(patch, kill_at)
            add_episode(reopened(root), 2, 5)
        (root / "data/chunk-000/.file-000.parquet.left.tmp").write_bytes(
            b"half a file"
        )  # kill -9 leaves these
        states.append(root)
    return states


def test_a_process_killed_at_any_rename_leaves_the_previous_dataset_and_resumes_exactly(
    tmp_path, monkeypatch
):
    straight = tmp_path / "straight"
    recorder = recorder_at(straight)
    for episode, length in LENGTHS.items():
        add_episode(recorder, episode, length)
    states = crash_states(tmp_path, monkeypatch)
    assert len(states) >= 6  # video, frames, episodes table, stats, log, info

    for root in states:
        frames = load_episodes(root, cache_dir=root.parent / f"{root.name}_cache")
        assert frames.episode_lengths.tolist() == [3, 4], root.name
        assert frames.vectors["action"][:, 3].tolist() == [0] * 3 + [1] * 4
        assert RecordingLog.read(root, 2).done() == {0, 1}

        resumed = reopened(root)
        add_episode(resumed, 2, 5)
        resumed.finish()
        assert dataset_files(root) == dataset_files(straight), root.name


def test_a_resumed_dataset_splits_its_files_where_a_straight_one_does(tmp_path):
    """Two episodes a file, two files a chunk: the split depends on sizes a resume must
    measure again from what it reads back."""
    limits = FileLimits(
        chunks_size=2, data_files_size_in_mb=600 / 1024**2, video_files_size_in_mb=4000 / 1024**2
    )
    lengths = {0: 3, 1: 4, 2: 5, 3: 3, 4: 4, 5: 5}  # grey levels up to 240
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    recorder = recorder_at(straight, limits)
    for episode, length in lengths.items():
        add_episode(recorder, episode, length)
    recorder = recorder_at(resumed, limits)
    for episode in range(3):
        add_episode(recorder, episode, lengths[episode])
    recorder.finish()
    for episode in range(3, 6):
        recorder = reopened(resumed)
        add_episode(recorder, episode, lengths[episode])
        recorder.finish()

    files = dataset_files(straight)
    assert (
        "data/chunk-001/file-000.parquet" in files
        and "videos/observation.image/chunk-000/file-001.mp4" in files
    )
    assert dataset_files(resumed) == files


def test_a_dropped_episode_is_logged_as_done_without_touching_the_dataset(tmp_path):
    root = tmp_path / "ds"
    recorder = recorder_at(root)
    add_episode(recorder, 0, 3)
    before = dataset_files(root)
    add_episode(recorder, 1, 4, keep=False)

    log = RecordingLog.read(root, 1)
    assert log.done() == {0, 1} and log.seeds() == [100]
    after = dataset_files(root)
    assert after.pop("meta/recording.json") != before.pop("meta/recording.json")
    assert after == before


LEROBOT_LOADS = textwrap.dedent(
    """
    import json, sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    report = {}
    for root in sys.argv[1:]:
        ds = LeRobotDataset("local/ds", root=root)
        items = [ds[i] for i in range(len(ds))]
        report[root] = {
            "episodes": ds.num_episodes,
            "episode_index": [int(item["episode_index"]) for item in items],
            "grey": [round(float(item["observation.image"].mean()) * 255) for item in items],
        }
    print(json.dumps(report))
    """
)


def lerobot_python_with_datasets() -> str:
    python = lerobot_ref_python()
    if python is None:
        pytest.skip(NO_LEROBOT_REASON)
    if subprocess.run([python, "-c", "import datasets"], capture_output=True).returncode != 0:
        pytest.skip(
            "LeRobot 0.6.1's scratch environment lacks its `dataset` extra: rebuild it with `make lerobot-ref`"
        )
    return python


def lerobot_loads(roots) -> dict:
    """What LeRobot 0.6.1's LeRobotDataset reads from each dataset, in its own environment."""
    import json

    python = lerobot_python_with_datasets()
    done = subprocess.run(
        [python, "-c", LEROBOT_LOADS, *map(str, roots)],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""},
        cwd=roots[0].parent,  # not this repository: LeRobot's own `lerobot` package must be imported
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_lerobot_loads_the_dataset_left_at_every_rename(tmp_path, monkeypatch):
    states = crash_states(tmp_path, monkeypatch)

    loaded = lerobot_loads(states)

    for root in states:
        assert loaded[str(root)]["episodes"] == 2, root.name
        assert loaded[str(root)]["episode_index"] == [0] * 3 + [1] * 4
        np.testing.assert_allclose(loaded[str(root)]["grey"], grey_levels([(0, 3), (1, 4)]), atol=3)


def test_a_stop_signal_while_an_episode_is_written_lets_the_commit_finish(tmp_path, monkeypatch):
    root = tmp_path / "ds"
    recorder = recorder_at(root)
    add_episode(recorder, 0, 3)
    real_append = DatasetWriter.append

    def append_signalled(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # handled in this thread before the append goes on
        return real_append(self, *args, **kwargs)

    monkeypatch.setattr(DatasetWriter, "append", append_signalled)
    with interrupts_as_exceptions(), pytest.raises(Interrupted):
        add_episode(recorder, 1, 4)

    assert load_episodes(root, cache_dir=tmp_path / "cache").episode_lengths.tolist() == [3, 4]
    assert RecordingLog.read(root, 2).done() == {0, 1}
