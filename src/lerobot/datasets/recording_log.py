"""meta/recording.json: which rollouts a recording has done, and the settings it ran with.

A dataset says which episodes it holds, not which rollouts produced them: with
`--only_successful=true` dataset episode k may be rollout 7, and a failed rollout leaves no
episode at all. A resumed recording needs both to run exactly the rollouts still missing, with
the seeds they would have had, and the settings to refuse a resume that would mix recordings.
LeRobot ignores the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lerobot.datasets import layout


@dataclass(frozen=True)
class Rollout:
    """One finished rollout of a recording."""

    rollout: int
    """The recording's episode number e (it starts from seed + e)."""
    seed: int | None
    episode_index: int | None
    """Its episode in the dataset; None when it was not kept."""


@dataclass(frozen=True)
class RecordingLog:
    settings: Mapping[str, Any]
    """The recording command's resolved flags, as draccus encodes them."""
    rollouts: tuple[Rollout, ...] = field(default=())

    def with_rollout(self, rollout: Rollout) -> RecordingLog:
        return RecordingLog(self.settings, (*self.rollouts, rollout))

    def done(self) -> set[int]:
        return {r.rollout for r in self.rollouts}

    def seeds(self) -> list[int | None]:
        """The seed of each dataset episode, in episode order."""
        kept = sorted(
            (r for r in self.rollouts if r.episode_index is not None), key=lambda r: r.episode_index
        )
        return [r.seed for r in kept]

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": dict(self.settings),
            "rollouts": [
                {"rollout": r.rollout, "seed": r.seed, "episode_index": r.episode_index}
                for r in self.rollouts
            ],
        }

    @classmethod
    def read(cls, root: Path, n_episodes: int) -> RecordingLog:
        """The log of the dataset at `root` holding `n_episodes` (info.json's count). The
        log is written just before info.json: a kept rollout whose episode info.json does not
        count yet was cut short, so it is left out and runs again."""
        payload = json.loads((Path(root) / layout.RECORDING_LOG_PATH).read_text())
        rollouts = tuple(
            Rollout(r["rollout"], r["seed"], r["episode_index"])
            for r in payload["rollouts"]
            if r["episode_index"] is None or r["episode_index"] < n_episodes
        )
        return cls(payload["settings"], rollouts)
