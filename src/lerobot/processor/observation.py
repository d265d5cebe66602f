"""Env observations (numpy, env keys) -> policy batch (torch, LeRobot keys)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from lerobot.utils.constants import OBS_ENV_STATE, OBS_IMAGE, OBS_IMAGES, OBS_STATE

# Env-side names (gymnasium dict keys) and the policy-side names LeRobot checkpoints expect.
STATE_KEYS = {"agent_pos": OBS_STATE, "environment_state": OBS_ENV_STATE}


def observation_to_batch(
    observation: Mapping[str, Any],
    device: torch.device | str = "cpu",
    rename_map: Mapping[str, str] | None = None,
) -> dict[str, torch.Tensor]:
    """Turn a batched env observation into policy inputs.

    Images (uint8, B x H x W x C) become float32 B x C x H x W in [0, 1]; one camera is
    `observation.image`, several `observation.images.<camera>`. Everything is built on the
    CPU and moved to `device` in one transfer per tensor, non-blocking.
    """
    batch: dict[str, torch.Tensor] = {}
    pixels = observation.get("pixels")
    if isinstance(pixels, Mapping):
        for camera, images in pixels.items():
            batch[f"{OBS_IMAGES}.{camera}"] = images_to_tensor(images)
    elif pixels is not None:
        batch[OBS_IMAGE] = images_to_tensor(pixels)
    for env_key, policy_key in STATE_KEYS.items():
        if env_key in observation:
            batch[policy_key] = torch.from_numpy(np.asarray(observation[env_key], dtype=np.float32))
    if rename_map:
        batch = {rename_map.get(key, key): value for key, value in batch.items()}
    if (device.type if isinstance(device, torch.device) else torch.device(device).type) == "cpu":
        return batch
    return {key: value.to(device, non_blocking=True) for key, value in batch.items()}


def images_to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 (B, H, W, C) -> float32 (B, C, H, W) in [0, 1]."""
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise ValueError(f"expected uint8 images of shape (B, H, W, 3), got {images.dtype} {images.shape}")
    return torch.from_numpy(images).permute(0, 3, 1, 2).float().div_(255.0)
