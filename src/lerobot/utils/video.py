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


class EpisodeVideo:
    """One episode's mp4, open while the episode runs."""

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
            output_params=list(X264_SPEED),
        )

    def add(self, frame: np.ndarray) -> None:
        self._writer.append_data(np.asarray(frame, dtype=np.uint8))
        self.n_frames += 1

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
