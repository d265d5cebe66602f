"""Forward kinematics and Jacobians of a robot arm, read from its URDF.

A serial chain is the list of joints from the URDF's root link to one link. Each joint moves its
child by a fixed transform (the joint's `origin`) followed by a turn about its axis (revolute)
or a slide along it (prismatic); fixed joints only carry the origin. The geometric Jacobian of a
point rigidly attached to the chain's last link has, for each revolute joint with world axis a
through point o, the column [a x (p - o); a]: the point's velocity and the link's angular
velocity per unit joint speed.

Everything is float64 NumPy in the robot's base frame; a few 4x4 products per joint cost
microseconds, less than a call into a batched tensor library for one row.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Joint:
    name: str
    kind: str
    """URDF joint type: "revolute", "prismatic" or "fixed"."""
    origin: np.ndarray
    """(4, 4) the child's frame in the parent's at zero joint position."""
    axis: np.ndarray
    """(3,) unit axis in the child's frame."""


@dataclass(frozen=True)
class Chain:
    """The joints from the URDF's root link to `link`, root first."""

    link: str
    joints: tuple[Joint, ...]

    @property
    def movable(self) -> list[str]:
        return [joint.name for joint in self.joints if joint.kind != "fixed"]


def rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    """(3, 3) the right-handed turn of `angle` radians about the unit `axis` (Rodrigues)."""
    x, y, z = axis
    skew = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * skew + (1.0 - np.cos(angle)) * skew @ skew


def rotation_from_rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: about x, then y, then z."""
    return (
        rotation_about(np.array([0.0, 0.0, 1.0]), yaw)
        @ rotation_about(np.array([0.0, 1.0, 0.0]), pitch)
        @ rotation_about(np.array([1.0, 0.0, 0.0]), roll)
    )


def transform(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, :3] = rotation
    matrix[:3, 3] = translation
    return matrix


def load_chain(urdf: Path, link: str) -> Chain:
    """The serial chain from `urdf`'s root to `link`."""
    by_child = {
        element.find("child").get("link"): element for element in ET.parse(urdf).getroot().iter("joint")
    }
    joints: list[Joint] = []
    child = link
    while child in by_child:
        element = by_child[child]
        joints.append(_parse_joint(element))
        child = element.find("parent").get("link")
    if not joints:
        raise ValueError(f"{urdf}: no joint leads to link {link!r}")
    return Chain(link, tuple(reversed(joints)))


def _parse_joint(element: ET.Element) -> Joint:
    origin = element.find("origin")
    xyz = np.fromstring(origin.get("xyz", "0 0 0"), sep=" ") if origin is not None else np.zeros(3)
    rpy = np.fromstring(origin.get("rpy", "0 0 0"), sep=" ") if origin is not None else np.zeros(3)
    axis = element.find("axis")
    direction = np.fromstring(axis.get("xyz"), sep=" ") if axis is not None else np.array([1.0, 0.0, 0.0])
    return Joint(
        name=element.get("name"),
        kind=element.get("type"),
        origin=transform(rotation_from_rpy(*rpy), xyz),
        axis=direction / np.linalg.norm(direction),
    )


def link_pose(
    chain: Chain, positions: dict[str, float]
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The chain's last link pose (4, 4) in the base frame, and each revolute joint's (point,
    axis) in the base frame, root first, for the joint positions `positions` (by name)."""
    pose = np.eye(4)
    axes: list[tuple[np.ndarray, np.ndarray]] = []
    for joint in chain.joints:
        pose = pose @ joint.origin
        if joint.kind == "revolute":
            axes.append((pose[:3, 3].copy(), pose[:3, :3] @ joint.axis))
            pose = pose @ transform(rotation_about(joint.axis, positions[joint.name]), np.zeros(3))
        elif joint.kind == "prismatic":
            pose = pose @ transform(np.eye(3), joint.axis * positions[joint.name])
    return pose, axes


def jacobian(axes: list[tuple[np.ndarray, np.ndarray]], point: np.ndarray) -> np.ndarray:
    """(6, n) geometric Jacobian of `point`, rigidly attached past the n revolute joints `axes`:
    rows 0-2 its linear velocity, rows 3-5 the angular velocity, per unit joint speed."""
    columns = [np.concatenate([np.cross(axis, point - origin), axis]) for origin, axis in axes]
    return np.stack(columns, axis=1)
