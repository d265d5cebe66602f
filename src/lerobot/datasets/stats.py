"""Feature statistics as LeRobot stores them: per episode in the episodes table, and for the
whole dataset in meta/stats.json.

Each feature gets min, max, mean, std (population), count and the quantiles q01, q10, q50,
q90, q99: per dimension for vectors; per channel, shaped (3, 1, 1), for camera frames
scaled to [0, 1]. Count is the number of frames. The dataset's statistics combine the
episodes' ones weighted by count (pooled variance; quantiles averaged), as LeRobot does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}

Stats = dict[str, np.ndarray]


def vector_stats(values: np.ndarray) -> Stats:
    """Statistics of (T, D) values, per dimension; (T,) values count as D = 1."""
    values = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    stats = {
        "min": values.min(0),
        "max": values.max(0),
        "mean": values.mean(0),
        "std": values.std(0),
        "count": np.array([len(values)]),
    }
    for name, q in QUANTILES.items():
        stats[name] = np.quantile(values, q, axis=0)
    return stats


class PixelHistogram:
    """Counts of each 8-bit level per channel: exact image statistics for any number of frames
    in 3 x 256 counters, so a recorder never keeps the frames."""

    def __init__(self) -> None:
        self.counts = np.zeros((3, 256), dtype=np.int64)
        self.n_frames = 0

    def add(self, frame: np.ndarray) -> None:
        pixels = np.asarray(frame, dtype=np.uint8).reshape(-1, 3)
        for channel in range(3):
            self.counts[channel] += np.bincount(pixels[:, channel], minlength=256)
        self.n_frames += 1

    def stats(self) -> Stats:
        levels = np.arange(256) / 255.0
        total = self.counts.sum(1)
        mean = self.counts @ levels / total
        variance = self.counts @ levels**2 / total - mean**2
        cumulative = np.cumsum(self.counts, axis=1)
        seen = self.counts > 0

        def per_channel(values: np.ndarray) -> np.ndarray:
            return np.asarray(values, dtype=np.float64).reshape(3, 1, 1)

        stats = {
            "min": per_channel(levels[seen.argmax(1)]),
            "max": per_channel(levels[255 - seen[:, ::-1].argmax(1)]),
            "mean": per_channel(mean),
            "std": per_channel(np.sqrt(np.maximum(variance, 0.0))),
            "count": np.array([self.n_frames]),
        }
        for name, q in QUANTILES.items():
            level = [np.searchsorted(cumulative[c], q * total[c]) for c in range(3)]
            stats[name] = per_channel(levels[level])
        return stats


def aggregate(per_episode: Sequence[Stats]) -> Stats:
    """One feature's statistics over several episodes, from each episode's."""
    counts = np.array([float(s["count"][0]) for s in per_episode])
    total = counts.sum()

    def weighted(values: list[np.ndarray]) -> np.ndarray:
        stacked = np.stack(values)
        weights = counts.reshape((-1,) + (1,) * (stacked.ndim - 1))
        return (stacked * weights).sum(0) / total

    mean = weighted([s["mean"] for s in per_episode])
    variance = weighted([s["std"] ** 2 + (s["mean"] - mean) ** 2 for s in per_episode])
    stats = {
        "min": np.min([s["min"] for s in per_episode], axis=0),
        "max": np.max([s["max"] for s in per_episode], axis=0),
        "mean": mean,
        "std": np.sqrt(variance),
        "count": np.array([int(total)]),
    }
    for name in QUANTILES:
        stats[name] = weighted([s[name] for s in per_episode])
    return stats


def as_json(stats: Mapping[str, Stats]) -> dict[str, dict[str, Any]]:
    """{feature: {stat: nested lists}}, the shape of meta/stats.json."""
    return {key: {name: value.tolist() for name, value in s.items()} for key, s in stats.items()}
