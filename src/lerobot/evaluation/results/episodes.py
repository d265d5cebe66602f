"""One finished episode, as the rollout makes it and as result files keep it.

Everything downstream counts episodes through `scored`: an episode the harness failed (crash,
hang, server gone) is kept and reported, but never counted against the policy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from lerobot.utils.logging_utils import one_line


@dataclass(frozen=True)
class EpisodeResult:
    """What one finished episode produced.

    Every field is set by the rollout; the optional ones are None only in an episode read
    from a file that did not record them (LeRobot's own eval_info.json).
    """

    episode_index: int
    seed: int | None
    success: bool
    """Succeeded at any step before the episode ended."""
    success_at_end: bool | None
    """Succeeded at the last step."""
    sum_reward: float
    max_reward: float
    n_steps: int | None
    wall_s: float | None
    video_path: str | None = None
    retries: int = 0
    """How many times the episode was re-run from its start after its env crashed or hung."""
    failure_reason: str | None = None
    """Set when every attempt failed; the episode then counts as unsuccessful."""
    init_state_index: int | None = None
    """Which of the task's fixed initial states the episode started from (for a benchmark that
    ships them), as the env reported it in its reset info."""
    policy_error: str | None = None
    """Set when the policy's own output ended the episode (NaN or inf actions). Unlike a
    `failure_reason`, this is the policy's doing: the episode is scored, unsuccessful from then on."""
    success_step: int | None = None
    """The step (counted as `n_steps` counts them, the first env step being 1) at which the
    episode first succeeded; None when it never did, or in a file written before it was kept.
    Two policies with the same success rate can differ by how fast they succeed; this is
    what shows it."""
    node: str | None = None
    """The Ray node (its node ID, as `ray list nodes` shows it) whose worker ran the episode;
    None on the local backend, whose machine the run's provenance names."""

    @classmethod
    def failed(
        cls,
        episode_index: int,
        seed: int,
        reason: str,
        retries: int,
        n_steps: int = 0,
        wall_s: float = 0.0,
        init_state_index: int | None = None,
    ) -> EpisodeResult:
        """An episode whose every attempt failed (crash, hang, error): unsuccessful, with the
        reason as one bounded line (a server's 20 MB error text must not fill every result file)."""
        return cls(
            episode_index=episode_index,
            seed=seed,
            success=False,
            success_at_end=False,
            sum_reward=0.0,
            max_reward=0.0,
            n_steps=n_steps,
            wall_s=wall_s,
            retries=retries,
            failure_reason=one_line(reason),
            init_state_index=init_state_index,
        )

    def to_record(self) -> dict[str, Any]:
        """The episode's fields, in declaration order (the order files keep them in)."""
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> EpisodeResult:
        """An episode from a journal line or an eval_info.json `per_episode` entry.

        A reward stored as null was not finite; LeRobot's files name the index `episode_ix`
        and lack some fields, which stay None.
        """
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in record.items() if k in known}
        values.setdefault("episode_index", record.get("episode_ix", 0))
        for key in ("sum_reward", "max_reward"):
            if values.get(key) is None:
                values[key] = math.nan
        for key in ("seed", "success_at_end", "n_steps", "wall_s"):
            values.setdefault(key, None)
        values["success"] = bool(values.get("success", False))
        return cls(**values)


def scored(episodes: Iterable[EpisodeResult]) -> list[EpisodeResult]:
    """The episodes that count for the policy: all but those the harness failed."""
    return [e for e in episodes if not e.failure_reason]
