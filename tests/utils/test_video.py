"""An episode's mp4 shows frame k at k / fps, to LeRobot's tolerance, at every benchmark's frame
rate and for both of LeRobot's decoders."""

import av
import pytest

import lerobot.envs  # noqa: F401  (registers the benchmarks' configs)
from lerobot.configs.env import EnvConfig
from lerobot.utils.video import EpisodeVideo, mp4_timescale
from tests.utils.video_times import DECODERS, assert_frame_k_at_k_over_fps, frame_times, moving_frames

BENCHMARK_FPS = sorted(
    {EnvConfig.get_choice_class(name).tiny_config().fps for name in EnvConfig.get_known_choices()}
)
# 15 and 30 fps do not divide a second into whole microseconds, ffmpeg's unit for durations.
FRAME_RATES = sorted({*BENCHMARK_FPS, 15, 30})
ODD_LENGTH = 47  # 587.5 ms at 80 fps: a length a millisecond timescale cannot hold


def write_episode(path, fps: int, n_frames: int = ODD_LENGTH):
    video = EpisodeVideo(path, fps)
    for frame in moving_frames(n_frames):
        video.add(frame)
    video.close()
    return path


def test_every_benchmark_frame_rate_is_covered():
    assert {10, 20, 50, 80} <= set(BENCHMARK_FPS)


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("fps", FRAME_RATES)
def test_frame_k_is_shown_at_k_over_fps(tmp_path, fps, decoder):
    path = write_episode(tmp_path / "episode.mp4", fps)
    assert_frame_k_at_k_over_fps(frame_times(path, decoder), fps, ODD_LENGTH)


@pytest.mark.parametrize("fps", FRAME_RATES)
def test_the_mp4_lasts_exactly_its_frames(tmp_path, fps):
    """The length decoders read (and the average frame rate torchcodec finds frames by) comes
    from the edit list, whose timescale is the movie's: it must hold whole frames too."""
    with av.open(str(write_episode(tmp_path / "episode.mp4", fps))) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.has_b_frames  # the case with an edit list
        assert stream.time_base.denominator == mp4_timescale(fps)
        assert stream.duration == ODD_LENGTH * mp4_timescale(fps) // fps
        assert container.duration == round(ODD_LENGTH / fps * 1e6)  # microseconds


@pytest.mark.parametrize("fps", [0, -80])
def test_a_frame_rate_that_is_not_positive_is_one_line(fps):
    with pytest.raises(ValueError, match=f"fps={fps}: a video needs a positive frame rate"):
        mp4_timescale(fps)
