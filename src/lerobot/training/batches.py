"""Training batches: windows of observations and actions around random frames.

A policy reads observations at `obs_offsets` and predicts actions at `action_offsets`
relative to a frame, as its config's `observation_delta_indices` and `action_delta_indices`
say (ACT: obs [0], actions [0, chunk_size); Diffusion: the last n_obs_steps observations and
`horizon` actions from the first of them). Offsets past an episode's ends
repeat its first or last frame; actions past its end are marked in `action_is_pad`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from lerobot.configs.policies import CheckpointPolicyConfig
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.datasets.reader import EpisodeFrames
from lerobot.datasets.stats import QUANTILES, aggregate, vector_stats
from lerobot.utils.constants import ACTION, ACTION_IS_PAD, OBS_ENV_STATE, OBS_STATE, TASK
from lerobot.utils.errors import ConfigError

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
        dataset_stats={rename_map.get(k, k): v for k, v in frames.dataset_stats.items()},
    )


IMAGENET_STATS = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}


def use_imagenet_stats(stats: dict[str, dict[str, Tensor]], camera_keys: Sequence[str]) -> None:
    """Replace the cameras' mean and std by ImageNet's, as LeRobot's `use_imagenet_stats` does."""
    for key in camera_keys:
        for name, values in IMAGENET_STATS.items():
            stats.setdefault(key, {})[name] = torch.tensor(values, dtype=torch.float32).reshape(3, 1, 1)


def window_offsets(cfg: CheckpointPolicyConfig) -> tuple[list[int], list[int]]:
    """(observation offsets, action offsets) of one training sample: the config's LeRobot delta
    indices, the current frame where it asks for no observation window."""
    if cfg.action_delta_indices is None:
        raise ConfigError(f"--policy.type={cfg.type}: states no action window to train on")
    return list(cfg.observation_delta_indices or [0]), list(cfg.action_delta_indices)


class Windows(torch.utils.data.Dataset):
    """Training samples around frame rows, read in the data loader's worker processes.

    `windows[rows]` is a whole batch on the CPU: observations at `obs_offsets` (clamped to the
    episode), actions at `action_offsets` with `action_is_pad`, camera frames as uint8
    (B[, S], 3, H, W) so that workers hand over a quarter of the bytes; `on_device` makes
    them floats in [0, 1] where the policy runs.
    """

    def __init__(
        self,
        frames: EpisodeFrames,
        input_keys: Sequence[str],
        obs_offsets: Sequence[int],
        action_offsets: Sequence[int],
    ):
        self.frames = frames
        self.obs_offsets = np.asarray(obs_offsets)
        self.action_offsets = np.asarray(action_offsets)
        self.vector_keys = [key for key in input_keys if key in frames.vectors]
        self.image_keys = [key for key in input_keys if key in frames.images]
        episode_of_row = np.repeat(np.arange(len(frames.episode_lengths)), frames.episode_lengths)
        self.first_row = frames.episode_starts[episode_of_row]
        self.last_row = self.first_row + frames.episode_lengths[episode_of_row] - 1

    def __len__(self) -> int:
        return self.frames.n_frames

    def __getitem__(self, rows: np.ndarray) -> dict[str, Tensor | list[str]]:
        rows = np.asarray(rows)
        first, last = self.first_row[rows, None], self.last_row[rows, None]
        obs_rows = np.clip(rows[:, None] + self.obs_offsets, first, last)
        wanted = rows[:, None] + self.action_offsets
        windows = {key: torch.from_numpy(self.frames.vectors[key][obs_rows]) for key in self.vector_keys}
        for key in self.image_keys:  # (B, S, H, W, 3) -> (B, S, 3, H, W), still uint8
            pixels = torch.from_numpy(self.frames.camera_frames(key, obs_rows.reshape(-1)))
            pixels = pixels.reshape(*obs_rows.shape, *pixels.shape[1:])
            windows[key] = pixels.permute(0, 1, 4, 2, 3).contiguous()
        batch: dict[str, Tensor | list[str]] = {
            key: w[:, 0] if len(self.obs_offsets) == 1 else w for key, w in windows.items()
        }
        batch[ACTION] = torch.from_numpy(self.frames.vectors[ACTION][np.clip(wanted, first, last)])
        batch[ACTION_IS_PAD] = torch.from_numpy((wanted < first) | (wanted > last))
        if self.frames.tasks and self.frames.task_indices is not None:
            batch[TASK] = [self.frames.tasks[i] for i in self.frames.task_indices[rows]]
        return batch

    def on_device(self, batch: Mapping[str, Any], device: torch.device) -> dict[str, Any]:
        """`batch` on `device`, camera frames as float in [0, 1] (converted there: a GPU does it
        in microseconds, and the copy moves uint8)."""
        moved = {}
        for key, value in batch.items():
            if not isinstance(value, Tensor):
                moved[key] = value
            elif key in self.image_keys:
                moved[key] = value.to(device, non_blocking=True).float().div_(255.0)
            else:
                moved[key] = value.to(device, non_blocking=True)
        return moved

    def batch(self, rows: np.ndarray, device: torch.device) -> dict[str, Any]:
        """The batch at `rows`, on `device`, in this process."""
        return self.on_device(self[rows], device)


class EpochOrder:
    """The frames each training step reads, in LeRobot 0.6.1's order.

    Like LeRobot's episode-aware sampler: the usable frames (each episode without its last
    `drop_n_last_frames`) are shuffled once per epoch by `torch.randperm` seeded from
    (seed, epoch) and cut into batches in that order, the last batch of an epoch short. The
    order is a function of (seed, step) alone, so worker processes can prefetch ahead and a
    resumed run reads exactly the batches an uninterrupted one would.
    """

    def __init__(self, frames: EpisodeFrames, seed: int, drop_n_last_frames: int = 0):
        usable = np.maximum(frames.episode_lengths - drop_n_last_frames, 0)
        self.rows = np.concatenate(
            [np.arange(s, s + n) for s, n in zip(frames.episode_starts, usable, strict=True)]
        ).astype(np.int64)
        if not len(self.rows):
            raise ConfigError(
                f"--policy.drop_n_last_frames={drop_n_last_frames}: leaves no frame to train on "
                f"(the longest episode has {int(frames.episode_lengths.max())})"
            )
        self.seed = seed
        self._epoch: tuple[int, np.ndarray] | None = None

    def epoch(self, epoch: int) -> np.ndarray:
        """The rows of `epoch`, in the order its batches read them."""
        if self._epoch is None or self._epoch[0] != epoch:
            state = np.random.SeedSequence([self.seed, epoch]).generate_state(1, dtype=np.uint64)[0]
            generator = torch.Generator().manual_seed(int(state))
            self._epoch = (epoch, self.rows[torch.randperm(len(self.rows), generator=generator).numpy()])
        return self._epoch[1]

    def batch_rows(self, index: int, batch_size: int) -> np.ndarray:
        """The rows of the `index`-th batch of the run (0: the first step's)."""
        per_epoch = math.ceil(len(self.rows) / batch_size)
        epoch, within = divmod(index, per_epoch)
        return self.epoch(epoch)[within * batch_size : (within + 1) * batch_size]


class StepBatches(torch.utils.data.Sampler):
    """The rows of batches `first`..`stop - 1`, for a DataLoader with `batch_size=None`."""

    def __init__(self, order: EpochOrder, batch_size: int, first: int, stop: int):
        self.order, self.batch_size, self.first, self.stop = order, batch_size, first, stop

    def __iter__(self) -> Iterator[np.ndarray]:
        for index in range(self.first, self.stop):
            yield self.order.batch_rows(index, self.batch_size)

    def __len__(self) -> int:
        return max(0, self.stop - self.first)


class InOrder(torch.utils.data.Sampler):
    """Consecutive batches of `rows`, the last one short (held-out evaluation)."""

    def __init__(self, rows: np.ndarray, batch_size: int):
        self.rows, self.batch_size = rows, batch_size

    def __iter__(self) -> Iterator[np.ndarray]:
        for start in range(0, len(self.rows), self.batch_size):
            yield self.rows[start : start + self.batch_size]

    def __len__(self) -> int:
        return math.ceil(len(self.rows) / self.batch_size)


@dataclass(frozen=True)
class LoaderSettings:
    """How batches are prepared: LeRobot's `--num_workers`, `--prefetch_factor`,
    `--persistent_workers` and `--dataloader_multiprocessing_context`, and pinned memory for a
    CUDA device."""

    num_workers: int = 0
    prefetch_factor: int = 4
    persistent_workers: bool = True
    multiprocessing_context: str | None = "spawn"
    pin_memory: bool = False


def make_loader(
    windows: Windows, batches: torch.utils.data.Sampler, settings: LoaderSettings
) -> torch.utils.data.DataLoader:
    """A DataLoader that reads `batches` of `windows` (in worker processes when asked). It has
    its own generator: creating it leaves torch's global random state alone, which training
    (dropout, noise) and resuming depend on."""
    workers = settings.num_workers > 0
    return torch.utils.data.DataLoader(
        windows,
        batch_size=None,
        sampler=batches,
        num_workers=settings.num_workers,
        prefetch_factor=settings.prefetch_factor if workers else None,
        persistent_workers=settings.persistent_workers and workers,
        multiprocessing_context=settings.multiprocessing_context if workers else None,
        pin_memory=settings.pin_memory,
        generator=torch.Generator(),
    )


def compute_stats(frames: EpisodeFrames, max_image_frames: int = 500) -> dict[str, dict[str, Tensor]]:
    """Normalisation statistics, as LeRobot takes them: the dataset's own (meta/stats.json, all
    its episodes) where it has them; otherwise from the loaded episodes: per dimension for
    vectors (with the quantiles π0.5 normalises by, averaged over episodes as LeRobot's dataset
    statistics are), per channel (shape (3, 1, 1)) for images in [0, 1] from at most
    `max_image_frames` frames."""
    stats: dict[str, dict[str, Tensor]] = {}
    for key, values in frames.vectors.items():
        stats[key] = _stored(frames, key, values.shape[1:])
        if not stats[key]:
            v = torch.from_numpy(values).double()
            stats[key] = _summary(v, dim=0) | _episode_quantiles(frames, values)
    for key in frames.images:
        stats[key] = _stored(frames, key, (3, 1, 1))
        if not stats[key]:
            rows = np.arange(0, frames.n_frames, max(1, frames.n_frames // max_image_frames))
            pixels = torch.from_numpy(frames.camera_frames(key, rows)).double().div(255.0).reshape(-1, 3)
            stats[key] = {name: t.reshape(3, 1, 1) for name, t in _summary(pixels, dim=0).items()}
    return stats


def _stored(frames: EpisodeFrames, key: str, shape: tuple[int, ...]) -> dict[str, Tensor]:
    """The dataset's statistics of `key` (all but the count), or none when it lacks any of
    mean, std, min and max."""
    stored = frames.dataset_stats.get(key, {})
    if not {"mean", "std", "min", "max"} <= stored.keys():
        return {}
    return {name: torch.from_numpy(v).reshape(shape) for name, v in stored.items() if name != "count"}


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
