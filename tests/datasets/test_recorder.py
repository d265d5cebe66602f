"""Recording rollouts as a LeRobot v3 dataset: the files LeRobot 0.6.1 expects."""

import json

import imageio.v3 as iio
import numpy as np
import pyarrow.parquet as pq
import pytest

from lerobot.configs.record import FileLimits
from lerobot.datasets.reader import load_episodes
from lerobot.evaluation.run.rollout import RolloutHooks, RolloutSettings, run_episodes
from tests.datasets.conftest import CAMERA, FPS, grey_levels, record
from tests.evaluation.run.rollout.test_loop import RecordingPolicy, make_vec

QUANTILES = ["q01", "q10", "q50", "q90", "q99"]


def test_dataset_files_follow_the_v3_layout(tmp_path):
    root = tmp_path / "ds"
    record(root, {0: 3, 1: 4, 2: 5}, kept={0, 2})

    info = json.loads((root / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"], info["fps"]) == (2, 8, 1, FPS)
    assert (info["chunks_size"], info["data_files_size_in_mb"], info["video_files_size_in_mb"]) == (
        1000,
        100,
        200,
    )
    assert info["features"][CAMERA]["dtype"] == "video"
    assert info["features"][CAMERA]["shape"] == [16, 16, 3]
    assert info["features"]["observation.state"]["shape"] == [4]
    assert info["features"]["action"]["names"] == ["action_0", "action_1", "action_2", "action_3"]

    frames = pq.read_table(root / "data/chunk-000/file-000.parquet")
    assert frames.column_names == [
        "observation.state", "action", "timestamp", "frame_index", "episode_index", "index", "task_index"
    ]  # fmt: skip
    assert frames.column("episode_index").to_pylist() == [0, 0, 0, 1, 1, 1, 1, 1]
    assert frames.column("frame_index").to_pylist() == [0, 1, 2, 0, 1, 2, 3, 4]
    assert frames.column("index").to_pylist() == list(range(8))
    assert b"huggingface" in frames.schema.metadata  # how `datasets` types the columns

    episodes = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [e["length"] for e in episodes] == [3, 5]
    assert episodes[1]["dataset_from_index"] == 3
    assert episodes[1]["videos/observation.image/from_timestamp"] == pytest.approx(0.3)
    assert episodes[1]["videos/observation.image/to_timestamp"] == pytest.approx(0.8)
    assert episodes[1]["tasks"] == ["reach the goal"]
    assert episodes[1]["stats/action/max"] == [4.0, 0.0, 0.5, 2.0]
    image_mean = np.asarray(episodes[1]["stats/observation.image/mean"])  # grey 80..120, in [0, 1]
    np.testing.assert_allclose(image_mean, np.full((3, 1, 1), 100 / 255))
    assert episodes[1]["stats/frame_index/count"] == [5]
    # LeRobot reads meta/tasks.parquet with pandas: the task string is the frame's index.
    tasks = pq.read_table(root / "meta/tasks.parquet")
    assert tasks.to_pylist() == [{"task_index": 0, "task": "reach the goal"}]
    assert json.loads(tasks.schema.metadata[b"pandas"])["index_columns"] == ["task"]

    video = iio.imread(root / "videos/observation.image/chunk-000/file-000.mp4")
    assert len(video) == info["total_frames"]
    stats = json.loads((root / "meta/stats.json").read_text())
    assert set(stats) == set(info["features"])
    assert stats["action"]["max"] == [4.0, 0.0, 0.5, 2.0]
    assert stats["action"]["mean"] == pytest.approx([1.625, -1.625, 0.5, 1.25])  # over all 8 frames
    assert stats["action"]["count"] == [8]
    assert np.asarray(stats[CAMERA]["q50"]).shape == (3, 1, 1)
    assert set(QUANTILES) < set(stats["observation.state"])


def test_tiny_size_limits_split_files_and_chunks(tmp_path):
    root = tmp_path / "ds"
    one_episode_per_file = FileLimits(chunks_size=2, data_files_size_in_mb=1e-6, video_files_size_in_mb=1e-6)
    tasks = {0: "reach", 1: "push", 2: "reach"}
    record(root, {0: 3, 1: 4, 2: 5}, kept={0, 1, 2}, tasks=tasks, limits=one_episode_per_file)

    for folder, suffix in [
        ("data", "parquet"),
        ("meta/episodes", "parquet"),
        ("videos/observation.image", "mp4"),
    ]:
        files = sorted(str(p.relative_to(root / folder)) for p in (root / folder).glob(f"*/*.{suffix}"))
        assert files == [
            f"chunk-000/file-000.{suffix}",
            f"chunk-000/file-001.{suffix}",
            f"chunk-001/file-000.{suffix}",
        ]
    episodes = pq.read_table(root / "meta/episodes/chunk-001/file-000.parquet").to_pylist()
    assert episodes[0]["videos/observation.image/from_timestamp"] == 0.0  # first in its file

    frames = load_episodes(root, episodes=[2, 1], cache_dir=tmp_path / "cache")

    assert sorted(frames.tasks) == ["push", "reach"]
    assert [frames.tasks[t] for t in frames.task_indices] == ["push"] * 4 + ["reach"] * 5
    assert frames.vectors["action"][:, 3].tolist() == [1] * 4 + [2] * 5
    grey = frames.camera_frames(CAMERA, np.arange(frames.n_frames)).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(grey, grey_levels([(1, 4), (2, 5)]), atol=3)


def test_rollout_reports_every_action_to_on_step():
    calls = []
    hooks = RolloutHooks(
        on_step=lambda env_id, episode, obs, action, step: calls.append((episode, step, obs["agent_pos"][1])),
    )
    results = run_episodes(make_vec(2), RecordingPolicy(), range(3), RolloutSettings(), hooks=hooks)

    for result in results:
        steps = [(step, t) for episode, step, t in calls if episode == result.episode_index]
        assert steps == [(t, float(t)) for t in range(result.n_steps)]
