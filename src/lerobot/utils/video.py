"""Stream rollout frames straight into an mp4 encoder.

Frames are never accumulated: holding every frame of a batch in memory is what makes other
evaluators peak at several GB for a handful of Meta-World episodes.
"""

from __future__ import annotations

from pathlib import Path

import imageio
import numpy as np

X264_SPEED = ("-preset", "veryfast")
"""x264's medium preset spent 9 CPU ms on each 480x480 Meta-World frame here, veryfast 4, for
files no bigger (233 against 203 kB for 120 frames): once unread renders are skipped, the
encoder is a visible share of a filmed step."""

MIN_MP4_TIMESCALE = 10_000
"""ffmpeg's mp4 muxer doubles a video track's timescale until it reaches this many ticks a
second; `mp4_timescale` keeps that choice and writes it down."""


def mp4_timescale(fps: int) -> int:
    """Ticks a second of a recorded mp4's track and movie: `fps` doubled until it reaches
    MIN_MP4_TIMESCALE, so that one frame lasts a whole number of ticks at any frame rate and
    frame k starts exactly at k / fps."""
    if fps <= 0:
        raise ValueError(f"fps={fps}: a video needs a positive frame rate")
    timescale = fps
    while timescale < MIN_MP4_TIMESCALE:
        timescale *= 2
    return timescale


def mp4_timing_options(fps: int) -> list[str]:
    """ffmpeg output options that keep every time in an mp4 a whole number of frame ticks.

    The track's timescale alone is not enough: ffmpeg writes the edit list (the track's
    length as players and decoders read it) in the movie's timescale, 1000 by default. An
    episode of 47 frames at 80 fps (587.5 ms) was then 587 ms long: joining episodes moved
    every later frame 0.5 ms early, past LeRobot's 0.1 ms tolerance (FrameTimestampError in
    its training), and the stream's average frame rate, from which torchcodec finds frames by
    index, was off too.
    """
    timescale = str(mp4_timescale(fps))
    return ["-video_track_timescale", timescale, "-movie_timescale", timescale]


class EpisodeVideo:
    """One episode's mp4, open while the episode runs; frame k is shown at k / fps exactly."""

    def __init__(self, path: Path, fps: int):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.n_frames = 0
        self._writer = imageio.get_writer(
            self.path,
            fps=fps,
            codec="libx264",
            quality=7,
            macro_block_size=2,
            ffmpeg_log_level="error",
            output_params=[*X264_SPEED, *mp4_timing_options(fps)],
        )

    def add(self, frame: np.ndarray) -> None:
        self._writer.append_data(np.asarray(frame, dtype=np.uint8))
        self.n_frames += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
