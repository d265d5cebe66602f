"""Held-out episodes (--dataset.eval_split): which ones LeRobot holds out, and the loss on them
the run logs every --eval_steps."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lerobot.configs.train import TrainPipelineConfig
from lerobot.datasets.reader import EpisodeFrames
from lerobot.training.batches import InOrder, LoaderSettings, Windows, make_loader, window_offsets
from lerobot.training.trainee import Trainee
from lerobot.utils.errors import ConfigError

logger = logging.getLogger(__name__)


def split_held_out(frames: EpisodeFrames, eval_split: float) -> tuple[EpisodeFrames, EpisodeFrames | None]:
    """(training episodes, held-out episodes) as LeRobot splits them with --dataset.eval_split:
    the last ceil(n x eval_split) of each task's n episodes are held out (an episode's task is
    its first frame's)."""
    if eval_split <= 0:
        return frames, None
    by_task: dict[int, list[int]] = {}
    task_of_episode = (
        frames.task_indices[frames.episode_starts]
        if frames.task_indices is not None
        else np.zeros(len(frames.episode_starts), dtype=np.int64)
    )
    for episode, task in zip(frames.episode_indices, task_of_episode, strict=True):
        by_task.setdefault(int(task), []).append(int(episode))
    held_out = [
        e
        for episodes in by_task.values()
        for e in episodes[len(episodes) - math.ceil(len(episodes) * eval_split) :]
    ]
    kept = [int(e) for e in frames.episode_indices if int(e) not in set(held_out)]
    if not kept:
        raise ConfigError(
            f"--dataset.eval_split={eval_split}: holds out all {len(frames.episode_indices)} episodes; "
            "nothing is left to train on"
        )
    return frames.select(kept), frames.select(held_out)


@dataclass
class HeldOutLoss:
    """The loss on held-out episodes (--dataset.eval_split), every --eval_steps, as LeRobot
    computes it: the mean over consecutive batches of the held-out frames (with
    --max_eval_samples, the first max_eval_samples / n_tasks frames of each task), without
    gradients, in eval mode."""

    windows: Windows
    loader: torch.utils.data.DataLoader

    @classmethod
    def of(cls, cfg: TrainPipelineConfig, frames: EpisodeFrames, settings: LoaderSettings) -> HeldOutLoss:
        windows = Windows(frames, list(cfg.policy.input_features), *window_offsets(cfg.policy))
        rows = held_out_rows(frames, cfg.max_eval_samples)
        return cls(windows, make_loader(windows, InOrder(rows, cfg.batch_size), settings))

    def log(self, trainee: Trainee, device: torch.device, step: int, wandb_run: Any) -> float:
        # Its own copy of the random states (diffusion noise): training goes on as without it.
        trainee.policy.eval()
        losses = []
        try:
            with torch.no_grad(), torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                for rows_batch in self.loader:
                    loss, _ = trainee.loss(self.windows.on_device(rows_batch, device))
                    losses.append(float(loss))
        finally:
            trainee.policy.train()
        value = sum(losses) / max(len(losses), 1)
        logger.info("step %d: eval_loss=%.4f over %d held-out batches", step, value, len(losses))
        if wandb_run is not None:
            wandb_run.log({"eval/eval_loss": value}, step=step)
        return value


def held_out_rows(frames: EpisodeFrames, max_samples: int) -> np.ndarray:
    """Every held-out row in order; with `max_samples` > 0, the first max_samples // n_tasks
    rows of each task (at least one), task by task, as LeRobot's --max_eval_samples picks them."""
    rows = np.arange(frames.n_frames)
    if max_samples <= 0 or frames.task_indices is None:
        return rows
    tasks = np.unique(frames.task_indices)
    per_task = max(1, max_samples // len(tasks))
    return np.concatenate([rows[frames.task_indices == t][:per_task] for t in tasks])
