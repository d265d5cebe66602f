"""The mp4 operations a dataset needs besides writing one: appending an episode's video to a
file without re-encoding (and cutting a file back, counting its frames), and decoding a file's
frames one by one."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from lerobot.utils.io import TEMP_SUFFIX, replacing
from lerobot.utils.video import mp4_timescale, mp4_timing_options


class VideoError(ValueError):
    """An mp4 that is missing, or that ffmpeg could not join or decode."""


def append_mp4(target: Path, part: Path, fps: int) -> None:
    """Put an episode's mp4 at the end of `target` (stream copy: same codec and settings
    needed); without a target, `part` becomes it. `part` is gone afterwards.

    The joined file replaces `target` in one rename, so a process killed meanwhile leaves the
    old file whole. Each part's timestamps continue where the previous part's end, so frame k
    of the result sits at k / fps when every part is an `EpisodeVideo` at `fps` (also after many
    appends, snapped to whole frames: tests/datasets/test_video_files.py).
    """
    target, part = Path(target), Path(part)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(part, "rb") as written:
            os.fsync(written.fileno())
        os.replace(part, target)  # the scratch folder lies inside the dataset: one file system
        return
    with replacing(target) as joined:
        listing = joined.with_name(joined.name + ".parts" + TEMP_SUFFIX)
        # The concat demuxer's list syntax: one `file '<path>'` per line, quotes escaped.
        listing.write_text(
            "".join("file '{}'\n".format(str(p.resolve()).replace("'", "'\\''")) for p in (target, part))
        )
        try:
            _ffmpeg(
                target,
                [
                    *["-f", "concat", "-safe", "0", "-i", str(listing), "-c", "copy"],
                    *_whole_frame_times(fps),
                    *["-f", "mp4", str(joined)],
                ],
            )
        finally:
            listing.unlink()
    part.unlink()


def truncate_mp4(path: Path, n_frames: int) -> None:
    """Keep the first `n_frames` frames of `path` (stream copy), replacing it in one rename.

    Exact when the cut falls where an appended episode began: each episode's video starts
    with a key frame.
    """
    first_frames = ["-map", "0:v:0", "-frames:v", str(n_frames), "-c", "copy"]
    with replacing(path) as cut:
        _ffmpeg(path, ["-i", str(path), *first_frames, "-f", "mp4", str(cut)])


def count_mp4_frames(path: Path) -> int:
    """The frames of an mp4's video stream, counted from its packets (nothing is decoded)."""
    count = ["-nostats", "-progress", "pipe:1"]  # key=value lines on stdout, `frame=N` among them
    out = _ffmpeg(path, [*count, "-i", str(path), "-map", "0:v:0", "-c", "copy", "-f", "null", "-"])
    counts = [int(line.split("=", 1)[1]) for line in out.splitlines() if line.startswith("frame=")]
    if not counts:
        raise VideoError(f"{path}: ffmpeg reported no frame count")
    return counts[-1]


def _ffmpeg(path: Path, arguments: list[str]) -> str:
    """Run imageio-ffmpeg's ffmpeg on `path`; its stdout, or VideoError naming `path` with
    ffmpeg's last complaint.

    In a session of its own: a Ctrl-C at the terminal reaches the recording, which finishes
    the file it is writing before it stops, but not this ffmpeg, which would die mid-file.
    """
    import imageio_ffmpeg

    command = [imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-nostdin", "-loglevel", "error", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, start_new_session=True)
    if done.returncode != 0:
        complaint = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise VideoError(f"{path}: ffmpeg failed ({complaint})")
    return done.stdout


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
