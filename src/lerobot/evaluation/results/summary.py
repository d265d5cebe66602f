"""The aggregate numbers of a set of episodes, with the interval of its success rate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lerobot.evaluation.intervals import pc_wilson_interval
from lerobot.evaluation.results.episodes import EpisodeResult, scored


@dataclass(frozen=True)
class Summary:
    """The aggregate numbers of a set of episodes: a task, a suite or a whole run.

    `pc_success_ci95` is the 95% Wilson interval of the success rate, in percent. Averages are
    None where there is nothing to average (no episodes, or a file that did not record them).
    """

    n_episodes: int
    """Episodes the rates are computed over: those that ran to their end (not `n_episodes_failed`)."""
    n_successes: int | None
    pc_success: float | None
    pc_success_ci95: tuple[float, float] | None
    pc_success_at_end: float | None
    avg_sum_reward: float | None
    avg_max_reward: float | None
    avg_episode_length: float | None
    eval_s: float | None
    video_paths: tuple[str, ...] = ()
    n_episodes_failed: int = 0
    """Episodes that failed for good because of the harness (crash, hang, reset error, server
    gone): not the policy's failures, so left out of every rate and average."""

    @classmethod
    def of(cls, all_episodes: Sequence[EpisodeResult], eval_s: float) -> Summary:
        episodes = scored(all_episodes)
        n_successes = sum(1 for e in episodes if e.success)
        interval = pc_wilson_interval(n_successes, len(episodes))
        return cls(
            n_episodes=len(episodes),
            n_successes=n_successes,
            pc_success=_mean([100.0 * e.success for e in episodes]),
            pc_success_ci95=tuple(interval) if interval else None,
            pc_success_at_end=_mean([100.0 * bool(e.success_at_end) for e in episodes]),
            avg_sum_reward=_mean([e.sum_reward for e in episodes]),
            avg_max_reward=_mean([e.max_reward for e in episodes]),
            avg_episode_length=_mean([e.n_steps or 0 for e in episodes]),
            eval_s=eval_s,
            video_paths=tuple(e.video_path for e in episodes if e.video_path),
            n_episodes_failed=len(all_episodes) - len(episodes),
        )

    @property
    def eval_ep_s(self) -> float | None:
        if self.eval_s is None or not self.n_episodes:
            return None
        return self.eval_s / self.n_episodes

    @property
    def success_rate(self) -> float:
        """The success rate as a fraction (0 when no episode ran)."""
        return (self.pc_success or 0.0) / 100.0

    def to_json(self) -> dict[str, Any]:
        """LeRobot's aggregate keys plus the success count and its interval, in file order;
        `n_episodes_failed` only when some episode failed for good."""
        block = {
            "pc_success": self.pc_success,
            "pc_success_ci95": list(self.pc_success_ci95) if self.pc_success_ci95 else None,
            "n_successes": self.n_successes,
            "pc_success_at_end": self.pc_success_at_end,
            "n_episodes": self.n_episodes,
            "avg_sum_reward": self.avg_sum_reward,
            "avg_max_reward": self.avg_max_reward,
            "avg_episode_length": self.avg_episode_length,
            "eval_s": self.eval_s,
            "eval_ep_s": self.eval_ep_s,
            "video_paths": list(self.video_paths),
        }
        if self.n_episodes_failed:
            block["n_episodes_failed"] = self.n_episodes_failed
        return block

    @classmethod
    def from_json(cls, metrics: Mapping[str, Any]) -> Summary:
        """A summary from an aggregate block, computing the interval when an older file lacks it."""
        n = int(metrics.get("n_episodes") or 0)
        pc_success = metrics.get("pc_success")
        n_successes = metrics.get("n_successes")
        if n_successes is None and pc_success is not None:
            n_successes = round(pc_success * n / 100)
        interval = metrics.get("pc_success_ci95")
        if interval is None and n_successes is not None and n:
            interval = pc_wilson_interval(int(n_successes), n)
        return cls(
            n_episodes=n,
            n_successes=n_successes,
            pc_success=pc_success,
            pc_success_ci95=tuple(interval) if interval else None,
            pc_success_at_end=metrics.get("pc_success_at_end"),
            avg_sum_reward=metrics.get("avg_sum_reward"),
            avg_max_reward=metrics.get("avg_max_reward"),
            avg_episode_length=metrics.get("avg_episode_length"),
            eval_s=metrics.get("eval_s"),
            video_paths=tuple(metrics.get("video_paths") or ()),
            n_episodes_failed=int(metrics.get("n_episodes_failed") or 0),
        )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
