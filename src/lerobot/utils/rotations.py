"""Rotations the scripted experts compute with (NumPy only)."""

from __future__ import annotations

import numpy as np


def quaternion_matrix(quaternion_wxyz: np.ndarray) -> np.ndarray:
    """(3, 3) rotation of a quaternion, scalar first (w, x, y, z: SAPIEN's order), normalised."""
    w, x, y, z = quaternion_wxyz / np.linalg.norm(quaternion_wxyz)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
