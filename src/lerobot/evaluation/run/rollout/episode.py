"""One running episode of a slot: its steps recorded, its video, and how it ends.

An episode ends in one of two ways. It finishes (`finish`): the env ended it, the step limit
did, or the policy's output did (a NaN action), and it is scored. Or every attempt of it
failed for the harness (a crashed env, a lost policy server) and it is abandoned (`abandon`):
unsuccessful, with the reason, and counted apart from the policy's failures.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lerobot.envs.commands import StepResult
from lerobot.evaluation.results import EpisodeResult
from lerobot.utils.logging_utils import one_line
from lerobot.utils.video import EpisodeVideo


@dataclass
class RunningEpisode:
    index: int
    seed: int
    retries: int = 0
    started_at: float = field(default_factory=time.perf_counter)
    sum_reward: float = 0.0
    max_reward: float = -math.inf
    n_steps: int = 0
    success: bool = False
    success_at_end: bool = False
    success_step: int | None = None
    init_state_index: int | None = None
    video: EpisodeVideo | None = None

    def record(self, step: StepResult) -> None:
        success_now = bool(step.info.get("is_success", False))
        self.sum_reward += step.reward
        self.max_reward = max(self.max_reward, step.reward)
        self.n_steps += 1
        if success_now and not self.success:
            self.success_step = self.n_steps
        self.success = self.success or success_now
        self.success_at_end = success_now
        if self.video is not None and step.frame is not None:
            self.video.add(step.frame)

    def finish(self, policy_error: str | None = None) -> EpisodeResult:
        """The episode's result; `policy_error`: the policy's output ended it (it is scored)."""
        video_path = None
        if self.video is not None:
            self.video.close()
            video_path = str(self.video.path)
        return EpisodeResult(
            episode_index=self.index,
            seed=self.seed,
            success=self.success,
            success_at_end=self.success_at_end,
            sum_reward=self.sum_reward,
            max_reward=self.max_reward if self.n_steps else 0.0,
            n_steps=self.n_steps,
            wall_s=time.perf_counter() - self.started_at,
            video_path=video_path,
            retries=self.retries,
            init_state_index=self.init_state_index,
            success_step=self.success_step,
            policy_error=one_line(policy_error) if policy_error is not None else None,
        )

    def abandon(self, reason: str) -> EpisodeResult:
        """The result of an episode whose every attempt failed: unsuccessful, with the reason."""
        self.discard_video()
        return EpisodeResult.failed(
            self.index,
            self.seed,
            reason,
            self.retries,
            n_steps=self.n_steps,
            wall_s=time.perf_counter() - self.started_at,
            init_state_index=self.init_state_index,
        )

    def start_video(self, videos_dir: Path, fps: int, first_frame: np.ndarray) -> None:
        """Record this episode's video from the frame after its reset on."""
        self.video = EpisodeVideo(videos_dir / f"eval_episode_{self.index}.mp4", fps)
        self.video.add(first_frame)

    def discard_video(self) -> None:
        if self.video is not None:
            self.video.close()
            self.video.path.unlink(missing_ok=True)
            self.video = None
