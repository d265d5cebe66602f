"""LIBERO's raw robosuite observation -> the observation LeRobot-format LIBERO data holds.

Policies trained on LeRobot's LIBERO datasets saw upright camera images and an 8-d state:
end-effector position (3), end-effector orientation as an axis-angle vector (3) and the two
gripper finger joint positions (2). robosuite gives none of these directly: its images come
out upside down (OpenGL's origin is the bottom-left corner) and its orientation is a
quaternion. The env applies `format_observation` to every raw observation, so the policy
side needs no LIBERO-specific step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from lerobot.envs.libero.tasks import STATE_DIM

__all__ = ["STATE_DIM", "agent_state", "format_observation", "quaternion_to_axis_angle", "upright_image"]
# robosuite's names for the parts of the state (the Panda arm is robot 0).
EEF_POS_KEY = "robot0_eef_pos"
EEF_QUAT_KEY = "robot0_eef_quat"
GRIPPER_QPOS_KEY = "robot0_gripper_qpos"


def upright_image(image: np.ndarray) -> np.ndarray:
    """Rotate an H x W x C image by 180 degrees (a copy, so it outlives the renderer's buffer)."""
    return np.ascontiguousarray(image[::-1, ::-1])


def quaternion_to_axis_angle(quat_xyzw: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w), robosuite's order -> axis * angle, angle in [0, 2 pi].

    Same convention as robosuite's `quat2axisangle`, which LeRobot's LIBERO processor step
    uses: w is not flipped to be non-negative, so q and -q give different vectors. The zero
    rotation (w = +-1), which has no axis, gives the zero vector.
    """
    quat = np.asarray(quat_xyzw, dtype=np.float64)
    w = float(np.clip(quat[3], -1.0, 1.0))
    sin_half = np.sqrt(1.0 - w * w)
    if sin_half == 0.0:
        return np.zeros(3)
    return quat[:3] * (2.0 * np.arccos(w) / sin_half)


def agent_state(raw_obs: Mapping[str, Any]) -> np.ndarray:
    """The 8-d float32 state: eef position, eef axis-angle, gripper finger positions."""
    return np.concatenate(
        [
            np.asarray(raw_obs[EEF_POS_KEY], dtype=np.float64),
            quaternion_to_axis_angle(raw_obs[EEF_QUAT_KEY]),
            np.asarray(raw_obs[GRIPPER_QPOS_KEY], dtype=np.float64),
        ]
    ).astype(np.float32)


def format_observation(
    raw_obs: Mapping[str, Any],
    cameras: Sequence[str],
    camera_keys: Mapping[str, str],
    with_state: bool = True,
) -> dict[str, Any]:
    """`{"pixels": {camera key: upright image}, "agent_pos": 8-d state}` from a raw observation.

    `cameras` are robosuite observation names (`agentview_image`, ...); `camera_keys` maps each
    to the name the policy sees it under (`observation.images.<key>`).
    """
    obs: dict[str, Any] = {"pixels": {camera_keys[cam]: upright_image(raw_obs[cam]) for cam in cameras}}
    if with_state:
        obs["agent_pos"] = agent_state(raw_obs)
    return obs
