"""From a target gripper pose to robosuite's OSC_POSE action.

robomimic's datasets drive the Panda with robosuite 1.4's default OSC_POSE controller at 20 Hz
(`robosuite/controllers/config/osc_pose.json`): each step's input in [-1, 1] is scaled to a
position change of up to 5 cm and a turn of up to 0.5 rad, added to the end effector's current
pose to give the controller's goal; the turn is an axis-angle vector in the world frame,
applied on the left of the current rotation. The gripper's entry is -1 open, +1 closed.

The expert commands, every step, a fixed share of the pose error that remains and re-reads the
pose the next step: a proportional controller closed on the observed state. All in NumPy,
float64, one row at a time.
"""

from __future__ import annotations

import numpy as np

from lerobot.utils import rotations

POSITION_SCALE = 0.05
"""Metres of end-effector motion that an input of 1 asks for (OSC_POSE's `output_max`)."""
ROTATION_SCALE = 0.5
"""Radians of turn that an input of 1 asks for."""
POINTING_DOWN = np.diag([1.0, -1.0, -1.0])
"""The end effector's rotation with the fingers pointing straight down at yaw 0 (half a turn
about x): robosuite's Panda starts each episode close to it."""
GRIPPER_OPEN = -1.0
GRIPPER_CLOSED = 1.0


def quaternion_matrix(quaternion_xyzw: np.ndarray) -> np.ndarray:
    """(3, 3) rotation of a quaternion in robosuite's order (x, y, z, w)."""
    return rotations.quaternion_matrix(np.roll(quaternion_xyzw, 1))


def yaw_of(rotation: np.ndarray) -> float:
    """The heading (radians about the world's z axis) of a frame's x axis."""
    return float(np.arctan2(rotation[1, 0], rotation[0, 0]))


def about_z(angle: float) -> np.ndarray:
    cos, sin = np.cos(angle), np.sin(angle)
    return np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]])


def pointing_down(yaw: float) -> np.ndarray:
    """The gripper's rotation pointing straight down, turned by `yaw` about the vertical."""
    return about_z(yaw) @ POINTING_DOWN


def rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The turn (world-frame axis times angle) that takes rotation `current` to `target`:
    OSC_POSE's rotation input, before scaling."""
    turn = target @ current.T
    angle = float(np.arccos(np.clip((np.trace(turn) - 1.0) / 2.0, -1.0, 1.0)))
    axis = np.array([turn[2, 1] - turn[1, 2], turn[0, 2] - turn[2, 0], turn[1, 0] - turn[0, 1]])
    norm = float(np.linalg.norm(axis))
    if norm < 1e-9:
        return np.zeros(3)  # no turn; half a turn never comes up (the gripper stays near down)
    return axis / norm * angle


def wrap_angle(angle: float, period: float = 2 * np.pi) -> float:
    """`angle` shifted by whole periods into [-period / 2, period / 2)."""
    return float((angle + period / 2) % period - period / 2)


def scaled_within_range(command: np.ndarray) -> np.ndarray:
    """`command` shrunk, all entries alike, until each lies in [-1, 1]: clipping each entry on
    its own would bend the path the gripper takes."""
    return command / max(1.0, float(np.abs(command).max()))


def osc_action(
    position: np.ndarray,
    rotation: np.ndarray,
    target_position: np.ndarray,
    target_rotation: np.ndarray,
    gripper: float,
    position_gain: float = 1.0,
    rotation_gain: float = 1.0,
) -> np.ndarray:
    """(7,) the OSC_POSE action that moves the end effector from (`position`, `rotation`)
    towards the target pose by `position_gain` and `rotation_gain` times the remaining error,
    within the controller's range, and sets the gripper (-1 open, +1 closed)."""
    move = scaled_within_range(position_gain * (target_position - position) / POSITION_SCALE)
    turn = scaled_within_range(rotation_gain * rotation_error(target_rotation, rotation) / ROTATION_SCALE)
    return np.concatenate([move, turn, [gripper]])
