"""The two mp4 operations a dataset needs besides writing one: joining episode videos into a
file without re-encoding, and decoding a file's frames one by one."""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from lerobot.utils.video import mp4_timescale, mp4_timing_options


class VideoError(ValueError):
    """An mp4 that is missing, or that ffmpeg could not join or decode."""


def join_mp4s(parts: Sequence[Path], target: Path, fps: int) -> None:
    """Write `parts` back to back into `target` (stream copy: same codec and settings needed).

    Each part's timestamps continue where the previous part's end, so frame k of the result
    sits at k / fps when every part is an `EpisodeVideo` at `fps`.
    """
    import imageio_ffmpeg

    target.parent.mkdir(parents=True, exist_ok=True)
    if len(parts) == 1:
        Path(parts[0]).replace(target)
        return
    listing = target.with_suffix(".parts.txt")
    # The concat demuxer's list syntax: one `file '<path>'` per line, quotes escaped.
    listing.write_text(
        "".join("file '{}'\n".format(str(Path(p).resolve()).replace("'", "'\\''")) for p in parts)
    )
    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "concat", "-safe", "0"]
    done = subprocess.run(
        [*command, "-i", str(listing), "-c", "copy", *_whole_frame_times(fps), str(target)],
        capture_output=True,
        text=True,
    )
    listing.unlink()
    if done.returncode != 0:
        raise VideoError(
            f"{target}: ffmpeg could not join {len(parts)} episode videos: {done.stderr.strip()}"
        )
    for part in parts:
        Path(part).unlink()


def _whole_frame_times(fps: int) -> list[str]:
    """Output options that put every joined packet's times on whole frames.

    The concat demuxer starts each part where the previous one ends, counted in microseconds:
    at a frame rate that does not divide a second into whole microseconds (30, 15) each part
    adds up to half a microsecond of error, which over thousands of episodes would grow past
    LeRobot's 0.1 ms tolerance. Snapping to the nearest whole frame undoes it (the drift stays
    far below half a frame), and the movie timescale keeps the file's length exact.
    """
    ticks = mp4_timescale(fps) // fps
    snap = f"setts=pts=round(PTS/{ticks})*{ticks}:dts=round(DTS/{ticks})*{ticks}"
    return ["-bsf:v", snap, *mp4_timing_options(fps)]


def iter_frames(path: Path) -> Iterator[np.ndarray]:
    """The frames of an mp4 (any codec ffmpeg decodes: h264, AV1, ...) as (H, W, 3) uint8.

    Decoded by imageio-ffmpeg's ffmpeg program, or where that package is missing (an install
    without dependencies, a platform it has no wheel for) by PyAV, LeRobot's own decoder: both
    are ffmpeg's decoders and colour conversion, and give the same bytes (tests/datasets).
    """
    if not Path(path).is_file():
        raise VideoError(f"{path}: video file missing")
    return _DECODERS[frame_decoder()](Path(path))


def frame_decoder() -> str:
    """`ffmpeg` when imageio-ffmpeg is installed, else `pyav` when PyAV is."""
    for name, module in (("ffmpeg", "imageio_ffmpeg"), ("pyav", "av")):
        if importlib.util.find_spec(module) is not None:
            return name
    raise VideoError("no video decoder: install imageio-ffmpeg (this package's dependency) or av")


def _ffmpeg_frames(path: Path) -> Iterator[np.ndarray]:
    import imageio

    reader = imageio.get_reader(path, format="ffmpeg")
    try:
        for frame in reader:
            yield np.asarray(frame)
    finally:
        reader.close()


def _pyav_frames(path: Path) -> Iterator[np.ndarray]:
    import av

    with av.open(str(path)) as container:
        for frame in container.decode(container.streams.video[0]):
            yield frame.to_ndarray(format="rgb24")


_DECODERS = {"ffmpeg": _ffmpeg_frames, "pyav": _pyav_frames}
