"""Reading LeRobot v3 datasets back: ours and one written by LeRobot 0.6.1 itself."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from lerobot.datasets.reader import DatasetError, load_episodes
from tests.datasets.conftest import CAMERA, grey_levels, record

# Written by LeRobot 0.6.1 (LeRobotDataset.create, then add_frame / save_episode): 3 episodes
# of 5, 7 and 4 frames at 10 fps; a 32x32 AV1 camera whose grey level is 20 * episode +
# 10 * step; state [episode, step, 0.5, -1]; episode 1 switches from "open the drawer" to
# "close the drawer" at step 4; data and video files limited so each episode has its own.
LEROBOT_SAMPLE = Path(__file__).parent / "lerobot_0_6_1_sample"


def test_episodes_read_back_with_their_frames(tmp_path):
    root = tmp_path / "ds"
    record(root, {0: 3, 1: 4, 2: 5}, kept={0, 1, 2})

    frames = load_episodes(root, episodes=[2, 0, 2], cache_dir=tmp_path / "cache")

    # In stored order, each once, whatever order the list gives: LeRobot's `episodes=` filter.
    assert frames.episode_lengths.tolist() == [3, 5]
    assert frames.vectors["observation.state"][:, 0].tolist() == [0] * 3 + [2] * 5
    grey = frames.camera_frames(CAMERA, np.arange(frames.n_frames)).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(grey, grey_levels([(0, 3), (2, 5)]), atol=3)  # h264 is lossy, not that lossy


def test_frames_are_decoded_once_into_a_memory_mapped_cache(tmp_path):
    root, cache = tmp_path / "ds", tmp_path / "cache"
    record(root, {0: 3, 1: 4}, kept={0, 1})
    video = root / "videos/observation.image/chunk-000/file-000.mp4"

    first = load_episodes(root, episodes=[1], cache_dir=cache)
    decoded_at = (cache / f"{CAMERA}.npy").stat().st_mtime_ns
    again = load_episodes(root, cache_dir=cache)

    assert isinstance(again.images[CAMERA], np.memmap)  # paged from disk, not held in memory
    assert (cache / f"{CAMERA}.npy").stat().st_mtime_ns == decoded_at  # the video was not decoded again
    np.testing.assert_array_equal(first.camera_frames(CAMERA, [0]), again.camera_frames(CAMERA, [3]))
    os.utime(video, ns=(decoded_at + 10**9, decoded_at + 10**9))  # the video changed: decode it again
    load_episodes(root, cache_dir=cache)
    manifest = json.loads((cache / f"{CAMERA}.json").read_text())
    assert manifest["videos"]["videos/observation.image/chunk-000/file-000.mp4"][1] == decoded_at + 10**9


def test_unknown_episodes_are_refused(tmp_path):
    root = tmp_path / "ds"
    record(root, {0: 3}, kept={0})
    with pytest.raises(DatasetError, match="holds episodes 0..0"):
        load_episodes(root, episodes=[3])


def test_a_dataset_written_by_lerobot_reads_back(tmp_path):
    frames = load_episodes(LEROBOT_SAMPLE, cache_dir=tmp_path / "cache")

    assert frames.info["features"][CAMERA]["info"]["video.codec"] == "av1"
    assert frames.episode_lengths.tolist() == [5, 7, 4]
    states = frames.vectors["observation.state"]
    assert states[:, :2].tolist() == [[e, t] for e, n in enumerate([5, 7, 4]) for t in range(n)]
    tasks = [frames.tasks[t] for t in frames.task_indices]
    assert tasks[5:12] == ["open the drawer"] * 4 + ["close the drawer"] * 3
    assert set(tasks[:5] + tasks[12:]) == {"pick the cube"}
    grey = frames.camera_frames(CAMERA, np.arange(frames.n_frames)).mean(axis=(1, 2, 3))
    expected = [20 * e + 10 * t for e, n in enumerate([5, 7, 4]) for t in range(n)]
    np.testing.assert_allclose(grey, expected, atol=3)


def test_a_second_reader_waits_while_another_fills_the_frame_cache(tmp_path):
    import fcntl
    import threading

    root, cache = tmp_path / "ds", tmp_path / "cache"
    record(root, {0: 3, 1: 4}, kept={0, 1})
    cache.mkdir()
    loaded = []
    with open(cache / f"{CAMERA}.lock", "a") as held:  # another training is filling the cache
        fcntl.flock(held, fcntl.LOCK_EX)
        reader = threading.Thread(target=lambda: loaded.append(load_episodes(root, cache_dir=cache)))
        reader.start()
        reader.join(timeout=1.0)
        assert reader.is_alive() and not (cache / f"{CAMERA}.npy").exists()
        fcntl.flock(held, fcntl.LOCK_UN)
    reader.join(timeout=60)
    [frames] = loaded
    grey = frames.camera_frames(CAMERA, np.arange(frames.n_frames)).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(grey, grey_levels([(0, 3), (1, 4)]), atol=3)
    assert sorted(p.name for p in cache.iterdir()) == [f"{CAMERA}.json", f"{CAMERA}.lock", f"{CAMERA}.npy"]


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def randomize(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def flip_footer(path: Path) -> None:
    """Flip every bit of the parquet footer's metadata (the bytes before its length and magic)."""
    data = bytearray(path.read_bytes())
    for i in range(len(data) - 40, len(data) - 8):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def drop_action(root: Path) -> None:
    info = json.loads((root / "meta/info.json").read_text())
    del info["features"]["action"]
    (root / "meta/info.json").write_text(json.dumps(info))


@pytest.mark.parametrize(
    ("broken", "damage", "message"),
    [
        ("meta/info.json", lambda p: p.write_text("{not json"), "unreadable (Expecting property name"),
        ("meta/info.json", lambda p: drop_action(p.parents[1]), "declares no `action` feature"),
        ("meta/tasks.parquet", Path.unlink, "missing"),
        ("meta/tasks.parquet", truncate, "unreadable (Could not open Parquet"),
        ("meta/episodes/chunk-000/file-000.parquet", lambda p: p.write_bytes(os.urandom(300)), "unreadable"),
        ("data/chunk-000/file-000.parquet", truncate, "unreadable"),
        ("videos/observation.image/chunk-000/file-000.mp4", truncate, "unreadable"),
        ("videos/observation.image/chunk-000/file-000.mp4", lambda p: p.write_bytes(b""), "unreadable"),
        ("videos/observation.image/chunk-000/file-000.mp4", randomize, "unreadable"),
        ("data/chunk-000/file-000.parquet", flip_footer, "unreadable"),
    ],
    ids=[
        "info-not-json",
        "no-action",
        "no-tasks",
        "tasks-cut",
        "episodes-junk",
        "data-cut",
        "mp4-cut",
        "mp4-empty",
        "mp4-random",
        "data-footer-flipped",
    ],
)
def test_a_broken_dataset_file_is_one_line_naming_it(tmp_path, broken, damage, message):
    root = tmp_path / "ds"
    record(root, {0: 3, 1: 4}, kept={0, 1})
    damage(root / broken)
    with pytest.raises(DatasetError) as error:
        load_episodes(root, cache_dir=tmp_path / "cache")
    text = str(error.value)
    assert "\n" not in text and message in text
    assert text.startswith(str(root / broken) if message != "declares no `action` feature" else str(root))


def test_a_frame_cache_that_cannot_be_written_names_the_flag_to_move_it(tmp_path):
    """Where the dataset dir is read-only (a shared mount), decoded frames must go elsewhere."""
    root, blocked = tmp_path / "ds", tmp_path / "not_a_dir"
    record(root, {0: 3}, kept={0})
    blocked.write_text("")  # a file where the cache's folder would go: mkdir fails as on a read-only dir
    with pytest.raises(DatasetError) as error:
        load_episodes(root, cache_dir=blocked / "cache")
    assert str(error.value).startswith(f"{blocked / 'cache'}: cannot write the decoded frames there")
    assert str(error.value).endswith("pass --dataset.frame_cache_dir=<a writable directory>")
    assert load_episodes(root, cache_dir=tmp_path / "elsewhere").n_frames == 3


def test_an_episode_of_length_0_is_one_line_naming_it(tmp_path):
    import pyarrow.parquet as pq

    root = tmp_path / "ds"
    record(root, {0: 3, 1: 4}, kept={0, 1})
    path = root / "meta/episodes/chunk-000/file-000.parquet"
    table = pq.read_table(path)
    lengths = table.column("length").to_pylist()
    lengths[1] = 0
    pq.write_table(table.set_column(table.schema.get_field_index("length"), "length", [lengths]), path)
    with pytest.raises(DatasetError, match=r"episode 1 has no frames \(length 0\); leave it out"):
        load_episodes(root, cache_dir=tmp_path / "cache")
    assert load_episodes(root, episodes=[0], cache_dir=tmp_path / "cache").n_frames == 3
