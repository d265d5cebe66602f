"""Joining episode mp4s into a dataset's video file with frame k still at k / fps; decoding a
dataset's mp4s: imageio-ffmpeg's ffmpeg program, or PyAV where it is missing."""

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from lerobot.datasets import video_files
from lerobot.datasets.reader import DatasetError, load_episodes
from tests.datasets.conftest import CAMERA, record
from tests.utils.test_video import FRAME_RATES, write_episode
from tests.utils.video_times import DECODERS, assert_frame_k_at_k_over_fps, frame_times

LEROBOT_SAMPLE = Path(__file__).parent / "lerobot_0_6_1_sample"  # AV1, written by LeRobot 0.6.1


def decoded(path: Path) -> np.ndarray:
    return np.stack(list(video_files.iter_frames(path)))


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("fps", FRAME_RATES)
def test_joined_episodes_show_frame_k_at_k_over_fps(tmp_path, fps, decoder):
    lengths = (47, 53, 9)
    parts = [write_episode(tmp_path / f"{e}.mp4", fps, n) for e, n in enumerate(lengths)]
    for part in parts:
        video_files.append_mp4(tmp_path / "file.mp4", part, fps)
    assert_frame_k_at_k_over_fps(frame_times(tmp_path / "file.mp4", decoder), fps, sum(lengths))
    assert not any(part.exists() for part in parts)


@pytest.mark.slow
def test_hundreds_of_episodes_at_30_fps_do_not_drift(tmp_path):
    """The concat demuxer counts where each part starts in whole microseconds: a third of a
    microsecond short per 10-frame part at 30 fps, 0.1 ms after 300 parts without the snap to
    whole frames."""
    episode = write_episode(tmp_path / "episode.mp4", 30, 10)
    for e in range(300):
        video_files.append_mp4(tmp_path / "file.mp4", shutil.copy(episode, tmp_path / f"{e}.mp4"), 30)
    assert_frame_k_at_k_over_fps(frame_times(tmp_path / "file.mp4", "pyav"), 30, 3000)


@pytest.mark.parametrize(
    "video",
    [LEROBOT_SAMPLE / "videos/observation.image/chunk-000/file-001.mp4", "recorded"],
    ids=["av1-by-lerobot", "h264-by-us"],
)
def test_pyav_decodes_the_same_bytes_as_ffmpeg(tmp_path, monkeypatch, video):
    if video == "recorded":
        record(tmp_path / "ds", {0: 6}, kept={0})
        video = tmp_path / "ds/videos/observation.image/chunk-000/file-000.mp4"
    assert video_files.frame_decoder() == "ffmpeg"
    by_ffmpeg = decoded(video)

    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    assert video_files.frame_decoder() == "pyav"
    by_pyav = decoded(video)

    assert by_pyav.dtype == np.uint8 and by_pyav.shape == by_ffmpeg.shape and len(by_pyav) > 1
    np.testing.assert_array_equal(by_pyav, by_ffmpeg)


def test_a_dataset_reads_back_the_same_with_pyav(tmp_path, monkeypatch):
    by_ffmpeg = load_episodes(LEROBOT_SAMPLE, cache_dir=tmp_path / "ffmpeg")
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    by_pyav = load_episodes(LEROBOT_SAMPLE, cache_dir=tmp_path / "pyav")

    rows = np.arange(by_ffmpeg.n_frames)
    np.testing.assert_array_equal(by_pyav.camera_frames(CAMERA, rows), by_ffmpeg.camera_frames(CAMERA, rows))


@pytest.mark.parametrize("damage", ["cut", "random"])
def test_a_broken_mp4_is_one_line_naming_it_with_pyav(tmp_path, monkeypatch, damage):
    root = tmp_path / "ds"
    record(root, {0: 3, 1: 4}, kept={0, 1})
    video = root / "videos/observation.image/chunk-000/file-000.mp4"
    data = video.read_bytes()
    video.write_bytes(
        data[: len(data) // 2] if damage == "cut" else np.random.default_rng(0).bytes(len(data))
    )

    with pytest.raises(DatasetError) as error:
        load_episodes(root, cache_dir=tmp_path / "cache")
    assert str(error.value).startswith(f"{video}: unreadable") and "\n" not in str(error.value)


def test_no_decoder_at_all_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(video_files.VideoError, match="install imageio-ffmpeg .* or av"):
        video_files.frame_decoder()


def episode_mp4(path: Path, first_level: int, n_frames: int) -> Path:
    from lerobot.utils.video import EpisodeVideo

    video = EpisodeVideo(path, fps=80)
    for k in range(n_frames):
        video.add(np.full((16, 16, 3), first_level + 10 * k, np.uint8))
    video.close()
    return path


def test_appended_episodes_keep_frame_k_at_k_over_fps_and_cut_back_exactly(tmp_path):
    """A dataset's video file grows by one episode per commit, each append a stream copy of the
    file so far plus the episode: timestamps must stay on the frame grid however many appends."""
    import av

    target = tmp_path / "file-000.mp4"
    lengths = [7, 5, 9, 3]
    for e, n in enumerate(lengths):
        video_files.append_mp4(target, episode_mp4(tmp_path / f"episode_{e}.mp4", 40 * e, n), 80)
        assert not (tmp_path / f"episode_{e}.mp4").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file-000.mp4"]  # no temporary left

    with av.open(str(target)) as container:
        stream = container.streams.video[0]
        frame_numbers = [float(frame.pts * stream.time_base) * 80 for frame in container.decode(stream)]
    assert frame_numbers == list(range(sum(lengths)))
    assert video_files.count_mp4_frames(target) == sum(lengths)

    video_files.truncate_mp4(target, 12)  # the first two episodes
    grey = decoded(target).mean(axis=(1, 2, 3))
    np.testing.assert_allclose(grey, [10 * k for k in range(7)] + [40 + 10 * k for k in range(5)], atol=3)
