"""Recording rollouts as a LeRobot v3 dataset, and reading it back."""

import json

import imageio.v3 as iio
import numpy as np
import pyarrow.parquet as pq
import pytest

from lerobot.datasets.reader import DatasetError, load_episodes
from lerobot.datasets.recorder import DatasetRecorder
from lerobot.evaluation.rollout import RolloutSettings, run_episodes
from tests.evaluation.test_rollout import RecordingPolicy, make_vec

FPS = 10


def observation(episode: int, step: int) -> dict:
    """A 16x16 frame whose grey level encodes (episode, step), and a 4-d state."""
    level = 40 * episode + 10 * step
    return {
        "pixels": np.full((16, 16, 3), level, dtype=np.uint8),
        "agent_pos": np.array([episode, step, 0, 1], dtype=np.float32),
    }


def record(root, lengths: dict[int, int], kept: set[int]) -> None:
    recorder = DatasetRecorder(root, fps=FPS, task="reach the goal")
    for episode, length in lengths.items():
        for step in range(length):
            action = np.array([step, -step, 0.5, episode], dtype=np.float32)
            recorder.add_step(episode, observation(episode, step), action, step)
        recorder.end_episode(episode, keep=episode in kept)
    recorder.finish()


def test_dataset_files_follow_the_v3_layout(tmp_path):
    root = tmp_path / "ds"
    record(root, {0: 3, 1: 4, 2: 5}, kept={0, 2})

    info = json.loads((root / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert (info["total_episodes"], info["total_frames"], info["fps"]) == (2, 8, FPS)
    assert info["features"]["observation.image"]["dtype"] == "video"
    assert info["features"]["observation.image"]["shape"] == [16, 16, 3]
    assert info["features"]["observation.state"]["shape"] == [4]
    assert info["features"]["action"]["names"] == ["action_0", "action_1", "action_2", "action_3"]

    frames = pq.read_table(root / "data/chunk-000/file-000.parquet")
    assert set(frames.column_names) >= {
        "observation.state",
        "action",
        "timestamp",
        "frame_index",
        "episode_index",
        "index",
        "task_index",
    }
    assert frames.column("episode_index").to_pylist() == [0, 0, 0, 1, 1, 1, 1, 1]
    assert frames.column("frame_index").to_pylist() == [0, 1, 2, 0, 1, 2, 3, 4]
    assert frames.column("index").to_pylist() == list(range(8))

    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [e["length"] for e in episodes] == [3, 5]
    assert episodes[1]["dataset_from_index"] == 3
    assert episodes[1]["videos/observation.image/from_timestamp"] == pytest.approx(0.3)
    assert episodes[1]["tasks"] == ["reach the goal"]
    assert pq.read_table(root / "meta/tasks.parquet").to_pylist() == [
        {"task_index": 0, "task": "reach the goal"}
    ]

    video = iio.imread(root / "videos/observation.image/chunk-000/file-000.mp4")
    assert len(video) == info["total_frames"]
    stats = json.loads((root / "meta/stats.json").read_text())
    assert stats["action"]["max"] == [4.0, 0.0, 0.5, 2.0]
    assert np.asarray(stats["observation.image"]["mean"]).shape == (3, 1, 1)


def test_episodes_read_back_with_their_frames(tmp_path):
    root = tmp_path / "ds"
    record(root, {0: 3, 1: 4, 2: 5}, kept={0, 1, 2})

    frames = load_episodes(root, episodes=[2, 0])

    assert frames.episode_lengths.tolist() == [5, 3]
    assert frames.vectors["observation.state"][:, 0].tolist() == [2] * 5 + [0] * 3
    grey = frames.images["observation.image"].mean(axis=(1, 2, 3))
    expected = [40 * 2 + 10 * s for s in range(5)] + [10 * s for s in range(3)]
    np.testing.assert_allclose(grey, expected, atol=3)  # h264 is lossy, but not that lossy


def test_unknown_episodes_are_refused(tmp_path):
    root = tmp_path / "ds"
    record(root, {0: 3}, kept={0})
    with pytest.raises(DatasetError, match="holds episodes 0..0"):
        load_episodes(root, episodes=[3])


def test_rollout_reports_every_action_to_on_step():
    calls = []
    settings = RolloutSettings(
        n_episodes=3,
        on_step=lambda env_id, episode, obs, action, step: calls.append((episode, step, obs["agent_pos"][1])),
    )
    results = run_episodes(make_vec(2), RecordingPolicy(), settings)

    for result in results:
        steps = [(step, t) for episode, step, t in calls if episode == result.episode_index]
        assert steps == [(t, float(t)) for t in range(result.n_steps)]
