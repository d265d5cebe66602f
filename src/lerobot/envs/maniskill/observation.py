"""ManiSkill3's observation dicts in LeRobot's flat layout (see `lerobot.envs.maniskill`).

ManiSkill returns batched torch tensors in nested dicts (`agent`, `extra`, `sensor_data`); a
policy reads flat float vectors and images. The flattening order is the dicts' own (ManiSkill
builds them in a fixed order per task), the same order ManiSkill's `obs_mode="state"` uses, so
`observation.state` + `observation.environment_state` hold exactly ManiSkill's flat state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def as_numpy(value: Any) -> np.ndarray:
    """A tensor or array (ManiSkill's are torch, batched) as a NumPy array, on the CPU."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def flat_vector(entries: Mapping[str, Any], row: int = 0) -> np.ndarray:
    """Batch row `row` of a nested dict of (num_envs, ...) tensors as one float32 vector: every
    leaf flattened, in the dict's order, booleans as 0/1."""
    parts = [_flat_leaves(value, row) for value in entries.values()]
    return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)


def _flat_leaves(value: Any, row: int) -> np.ndarray:
    if isinstance(value, Mapping):
        return flat_vector(value, row)
    array = as_numpy(value)[row]
    return array.astype(np.float32).reshape(-1)


def leaf_names(entries: Mapping[str, Any], prefix: str = "") -> list[tuple[str, int]]:
    """(dotted key, size) of each leaf of a nested dict of (num_envs, ...) tensors, in the
    order `flat_vector` lays them out: what each slice of a flat vector holds."""
    names: list[tuple[str, int]] = []
    for key, value in entries.items():
        if isinstance(value, Mapping):
            names.extend(leaf_names(value, f"{prefix}{key}."))
        else:
            names.append((f"{prefix}{key}", int(np.prod(as_numpy(value).shape[1:], dtype=np.int64))))
    return names


def camera_image(sensor_data: Mapping[str, Any], camera: str, row: int = 0) -> np.ndarray:
    """Batch row `row` of a camera's RGB image: uint8, (height, width, 3)."""
    return np.ascontiguousarray(as_numpy(sensor_data[camera]["rgb"])[row, ..., :3], dtype=np.uint8)
