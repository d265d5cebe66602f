"""Training batches: windows of observations and actions around random frames.

A policy reads observations at `obs_offsets` and predicts actions at `action_offsets`
relative to a frame (ACT: obs [0], actions [0, chunk_size); Diffusion: the last n_obs_steps
observations and `horizon` actions from the first of them). Offsets past an episode's ends
repeat its first or last frame; actions past its end are marked in `action_is_pad`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from lerobot.configs.policies import CheckpointPolicyConfig
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.datasets.reader import EpisodeFrames
from lerobot.datasets.stats import QUANTILES, aggregate, vector_stats
from lerobot.utils.constants import ACTION, ACTION_IS_PAD, OBS_ENV_STATE, OBS_STATE, TASK

VECTOR_TYPES = {OBS_STATE: FeatureType.STATE, OBS_ENV_STATE: FeatureType.ENV}


def dataset_features(frames: EpisodeFrames) -> tuple[dict[str, PolicyFeature], dict[str, PolicyFeature]]:
    """(input features, output features) a policy trained on `frames` has."""
    inputs: dict[str, PolicyFeature] = {}
    for key, images in frames.images.items():
        height, width = images.shape[1:3]
        inputs[key] = PolicyFeature(FeatureType.VISUAL, (3, height, width))
    for key, values in frames.vectors.items():
        if key in VECTOR_TYPES:
            inputs[key] = PolicyFeature(VECTOR_TYPES[key], (values.shape[1],))
    outputs = {ACTION: PolicyFeature(FeatureType.ACTION, (frames.vectors[ACTION].shape[1],))}
    return inputs, outputs


def rename_frames(frames: EpisodeFrames, rename_map: Mapping[str, str]) -> EpisodeFrames:
    """The same frames with feature keys renamed (`--rename_map`: dataset key -> policy key)."""
    if not rename_map:
        return frames
    return dataclasses.replace(
        frames,
        vectors={rename_map.get(k, k): v for k, v in frames.vectors.items()},
        images={rename_map.get(k, k): v for k, v in frames.images.items()},
    )


IMAGENET_STATS = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}


def use_imagenet_stats(stats: dict[str, dict[str, Tensor]], camera_keys: Sequence[str]) -> None:
    """Replace the cameras' mean and std by ImageNet's, as LeRobot's `use_imagenet_stats` does."""
    for key in camera_keys:
        for name, values in IMAGENET_STATS.items():
            stats.setdefault(key, {})[name] = torch.tensor(values, dtype=torch.float32).reshape(3, 1, 1)


def window_offsets(cfg: CheckpointPolicyConfig) -> tuple[list[int], list[int]]:
    """(observation offsets, action offsets) of one training sample, as LeRobot's delta indices."""
    if cfg.type == "diffusion":
        first = 1 - cfg.n_obs_steps
        return list(range(first, 1)), list(range(first, first + cfg.horizon))
    return [0], list(range(cfg.chunk_size))


class WindowSampler:
    """Draws batches of windows from the selected episodes, on `device`."""

    def __init__(
        self,
        frames: EpisodeFrames,
        input_keys: Sequence[str],
        obs_offsets: Sequence[int],
        action_offsets: Sequence[int],
        generator: torch.Generator,
    ):
        self.obs_offsets = np.asarray(obs_offsets)
        self.action_offsets = np.asarray(action_offsets)
        self.generator = generator
        self.frames = frames
        self.tensors = {
            key: torch.from_numpy(frames.vectors[key]) for key in input_keys if key in frames.vectors
        }
        self.actions = torch.from_numpy(frames.vectors[ACTION])
        self.image_keys = [key for key in input_keys if key in frames.images]
        episode_of_row = np.repeat(np.arange(len(frames.episode_lengths)), frames.episode_lengths)
        self.first_row = frames.episode_starts[episode_of_row]
        self.last_row = self.first_row + frames.episode_lengths[episode_of_row] - 1
        self.n_rows = len(episode_of_row)

    def sample(self, batch_size: int, device: torch.device) -> dict[str, Tensor]:
        rows = torch.randint(0, self.n_rows, (batch_size,), generator=self.generator).numpy()
        return self.gather(rows, device)

    def gather(self, rows: np.ndarray, device: torch.device) -> dict[str, Tensor]:
        """The windows around `rows`; observations squeezed to (B, ...) when one step is read."""
        first, last = self.first_row[rows, None], self.last_row[rows, None]
        obs_rows = np.clip(rows[:, None] + self.obs_offsets, first, last)
        wanted = rows[:, None] + self.action_offsets
        windows = {key: values[torch.from_numpy(obs_rows)] for key, values in self.tensors.items()}
        for key in self.image_keys:  # uint8 (B, S, H, W, 3) -> float (B, S, 3, H, W) in [0, 1]
            pixels = torch.from_numpy(self.frames.camera_frames(key, obs_rows.reshape(-1)))
            pixels = pixels.reshape(*obs_rows.shape, *pixels.shape[1:])
            windows[key] = pixels.permute(0, 1, 4, 2, 3).float().div_(255.0)
        batch = {key: w[:, 0] if len(self.obs_offsets) == 1 else w for key, w in windows.items()}
        batch[ACTION] = self.actions[torch.from_numpy(np.clip(wanted, first, last))]
        batch[ACTION_IS_PAD] = torch.from_numpy((wanted < first) | (wanted > last))
        moved: dict[str, Tensor | list[str]] = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        if self.frames.tasks and self.frames.task_indices is not None:
            moved[TASK] = [self.frames.tasks[i] for i in self.frames.task_indices[rows]]
        return moved


def compute_stats(frames: EpisodeFrames, max_image_frames: int = 500) -> dict[str, dict[str, Tensor]]:
    """Normalisation statistics of the training episodes: per dimension for vectors (with the
    quantiles π0.5 normalises by, averaged over episodes as LeRobot's dataset statistics are),
    per channel (shape (3, 1, 1)) for images in [0, 1] from at most `max_image_frames` frames."""
    stats: dict[str, dict[str, Tensor]] = {}
    for key, values in frames.vectors.items():
        v = torch.from_numpy(values).double()
        stats[key] = _summary(v, dim=0) | _episode_quantiles(frames, values)
    for key in frames.images:
        rows = np.arange(0, frames.n_frames, max(1, frames.n_frames // max_image_frames))
        pixels = torch.from_numpy(frames.camera_frames(key, rows)).double().div(255.0).reshape(-1, 3)
        stats[key] = {name: t.reshape(3, 1, 1) for name, t in _summary(pixels, dim=0).items()}
    return stats


def _episode_quantiles(frames: EpisodeFrames, values: np.ndarray) -> dict[str, Tensor]:
    per_episode = [
        vector_stats(values[start : start + length])
        for start, length in zip(frames.episode_starts, frames.episode_lengths, strict=True)
    ]
    combined = aggregate(per_episode)
    shape = values.shape[1:]
    return {name: torch.from_numpy(combined[name]).float().reshape(shape) for name in QUANTILES}


def _summary(values: Tensor, dim: int) -> dict[str, Tensor]:
    return {
        "mean": values.mean(dim).float(),
        "std": values.std(dim, unbiased=False).float(),
        "min": values.amin(dim).float(),
        "max": values.amax(dim).float(),
    }
