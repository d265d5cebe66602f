"""When each frame of an mp4 is shown, as LeRobot's two decoders read it, for the video timing
tests: PyAV always (it is in the test extra), torchcodec where it is installed and loads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

LEROBOT_TOLERANCE_S = 1e-4
"""LeRobotDataset's default `tolerance_s`: a frame further than this from k / fps is a
FrameTimestampError in LeRobot's training."""

DECODERS = ("pyav", "torchcodec")


def moving_frames(n_frames: int, size: int = 32) -> list[np.ndarray]:
    """A grey ramp that steps left, right or stays, at random (seed 0): x264 gives such frames
    B-frames, the case in which ffmpeg writes an edit list, and with 47 of them at 80 fps the
    list's length in milliseconds rounded down, as Meta-World's frames did (587 ms for 587.5)."""
    ramp = np.tile((np.arange(size, dtype=np.uint8) * (256 // size))[None, :, None], (size, 1, 3))
    steps = np.cumsum(np.random.default_rng(0).integers(-1, 2, n_frames))
    return [np.roll(ramp, int(step), axis=1) for step in steps]


def frame_times(path: Path, decoder: str) -> list[float]:
    """Each frame's presentation time in seconds, in display order."""
    return _pyav_times(path) if decoder == "pyav" else _torchcodec_times(path)


def assert_frame_k_at_k_over_fps(times: list[float], fps: int, n_frames: int) -> None:
    assert len(times) == n_frames
    errors = np.abs(np.asarray(times) - np.arange(n_frames) / fps)
    worst = int(errors.argmax())
    assert errors[worst] < LEROBOT_TOLERANCE_S, (
        f"frame {worst} at {times[worst]:.6f} s, not {worst / fps:.6f}"
    )


def _pyav_times(path: Path) -> list[float]:
    import av

    with av.open(str(path)) as container:
        return [float(frame.pts * frame.time_base) for frame in container.decode(video=0)]


def _torchcodec_times(path: Path) -> list[float]:
    """Read as LeRobot reads them: frames by index in torchcodec's approximate seek mode, where
    an index becomes a time through the stream's average frame rate."""
    try:
        from torchcodec.decoders import VideoDecoder
    except (ImportError, OSError, RuntimeError) as exc:  # installed without FFmpeg's libraries
        pytest.skip(f"torchcodec does not load here: {type(exc).__name__}")
    decoder = VideoDecoder(str(path), seek_mode="approximate")
    return decoder.get_frames_at(indices=list(range(len(decoder)))).pts_seconds.tolist()
