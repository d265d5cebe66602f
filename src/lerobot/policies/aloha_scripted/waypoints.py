"""End-effector plans for ALOHA's two simulated tasks, in the manner of ACT's scripted demonstrations.

ACT (Zhao et al., 2023, Sec. 5 and its appendix) scripts both simulated tasks in end-effector
space: a few waypoints per gripper (a time step, a position, an orientation and a gripper
opening), chosen from the objects' initial poses, with linear interpolation in between. Here,
per task:

- transfer-cube: the right gripper, tilted down, closes on the cube, lifts it and carries it to
  a meeting point above the table's centre; the left gripper, rolled a quarter turn so that its
  fingers close vertically, comes in from the other side, closes on the cube, and the right
  gripper lets go and backs away.
- insertion: each gripper, tilted down, closes on its object (left: the socket, right: the
  peg), both lift them and carry them to facing points above the table's centre, then move
  towards each other until the peg goes into the socket.

Positions are metres in the world frame (x to the right arm, y away from the robots, z up);
quaternions are (w, x, y, z); openings are gym-aloha's normalised gripper positions, 1 open and
0 closed. A plan covers the whole episode; past its last waypoint a gripper holds still.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

OPEN, CLOSED = 1.0, 0.0
# The grasp points (between the finger pads) in ALOHA's start pose (gym-aloha's START_ARM_POSE),
# from MuJoCo's forward kinematics of gym-aloha's model; the arms face each other along x.
LEFT_START = np.array([-0.2227, 0.5, 0.3048])
RIGHT_START = np.array([0.2227, 0.5, 0.3048])
CUBE_HALF_SIZE = 0.02
"""Half the cube's edge: its centre's height once it rests on the table (at z = 0)."""
# Orientations are turns from the start orientation, in the world frame (gym-aloha welds each
# gripper to a mocap body whose identity orientation is the gripper's start orientation).
START = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass(frozen=True)
class Waypoint:
    """Where one gripper's grasp point should be at step `t`, and how it is turned."""

    t: int
    position: np.ndarray
    quaternion: np.ndarray
    opening: float


@dataclass(frozen=True)
class Plan:
    """Both grippers' waypoints for one episode, in time order.

    A hand-over cannot be placed from the initial poses alone: where the cube ends up in the
    right hand depends on the grasp. So a plan may say that at step `revise_at` it is to be
    replaced by `revise(object_positions)`, given the objects' positions at that step.
    """

    left: tuple[Waypoint, ...]
    right: tuple[Waypoint, ...]
    revise_at: int | None = None
    revise: Callable[[np.ndarray], Plan] | None = field(default=None, compare=False)


def quaternion(axis: tuple[float, float, float], degrees: float) -> np.ndarray:
    """The rotation of `degrees` about `axis`, as a unit quaternion (w, x, y, z)."""
    half = np.deg2rad(degrees) / 2
    axis_unit = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(half)], np.sin(half) * axis_unit])


def multiply(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Hamilton product q1 * q2: rotate by q2, then by q1."""
    w1, x1, y1, z1 = q1
    w2, x2, y2, z2 = q2
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )


def rotate(q: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """`vector` rotated by the unit quaternion `q`."""
    rotated = multiply(multiply(q, np.concatenate([[0.0], vector])), q * np.array([1, -1, -1, -1]))
    return rotated[1:]


def interpolate(waypoints: tuple[Waypoint, ...], t: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(position, quaternion, opening) at step `t`: linear between the waypoints around it,
    the quaternion renormalised (the turns between waypoints are small)."""
    if t <= waypoints[0].t:
        first = waypoints[0]
        return first.position, first.quaternion, first.opening
    for before, after in zip(waypoints, waypoints[1:], strict=False):
        if t <= after.t:
            f = (t - before.t) / (after.t - before.t)
            position = (1 - f) * before.position + f * after.position
            q_after = (
                after.quaternion if np.dot(before.quaternion, after.quaternion) >= 0 else -after.quaternion
            )
            q = (1 - f) * before.quaternion + f * q_after
            return position, q / np.linalg.norm(q), (1 - f) * before.opening + f * after.opening
    last = waypoints[-1]
    return last.position, last.quaternion, last.opening


def transfer_cube_plan(cube_xyz: np.ndarray) -> Plan:
    """Right gripper picks the cube and carries it to a meeting point; once there, the left
    gripper closes on wherever the cube is, and the right one lets go."""
    cube = np.asarray(cube_xyz, dtype=float)
    pick = quaternion((0, 1, 0), -30)  # fingers tilted down towards the table
    carry = pick
    roll = quaternion((1, 0, 0), -90)  # left fingers close vertically, across the right ones
    meet = np.array([0.0, 0.5, 0.25])
    ready = meet + [-0.12, 0.0, 0.0]
    # gym-aloha places the cube 3 cm above the table; it drops onto it before the grasp.
    grasp = np.array([cube[0], cube[1], CUBE_HALF_SIZE])
    above = grasp + [0.0, 0.0, 0.1]
    carried = (
        Waypoint(0, RIGHT_START, START, OPEN),
        Waypoint(90, above, pick, OPEN),
        Waypoint(130, grasp, pick, OPEN),
        Waypoint(160, grasp, pick, CLOSED),
        Waypoint(230, meet, carry, CLOSED),
    )
    waiting = (Waypoint(0, LEFT_START, START, OPEN), Waypoint(120, ready, roll, OPEN))

    def hand_over(objects: np.ndarray) -> Plan:
        # The left fingers close on the cube's far half: the right fingers hold the near one.
        held = objects[:3] + [-0.012, 0.0, 0.0]
        right = (
            *carried,
            Waypoint(335, meet, carry, CLOSED),
            Waypoint(350, meet, carry, OPEN),
            Waypoint(390, meet + [0.1, 0.0, 0.0], carry, OPEN),
        )
        # Line up with the cube first, then move in along x only: the left arm lags behind
        # its target while it moves, and a lagging finger would knock the cube out.
        left = (
            *waiting,
            Waypoint(240, ready, roll, OPEN),
            Waypoint(270, held + [-0.1, 0.0, 0.0], roll, OPEN),
            Waypoint(285, held + [-0.1, 0.0, 0.0], roll, OPEN),
            Waypoint(310, held, roll, OPEN),
            Waypoint(330, held, roll, CLOSED),
            Waypoint(390, held + [-0.05, 0.0, 0.02], roll, CLOSED),
        )
        return Plan(left=left, right=right)

    return Plan(left=waiting, right=carried, revise_at=240, revise=hand_over)


def insertion_plan(peg_xyz: np.ndarray, socket_xyz: np.ndarray) -> Plan:
    """Each gripper picks its object; the two meet above the table and the peg goes in."""
    peg, socket = np.asarray(peg_xyz, dtype=float), np.asarray(socket_xyz, dtype=float)
    right_pick = quaternion((0, 1, 0), -60)
    left_pick = quaternion((0, 1, 0), 60)
    lift = np.array([0.0, 0.0, 0.08])
    meet = np.array([0.0, 0.5, 0.2])
    right = (
        Waypoint(0, RIGHT_START, START, OPEN),
        Waypoint(100, peg + lift, right_pick, OPEN),
        Waypoint(140, peg, right_pick, OPEN),
        Waypoint(170, peg, right_pick, CLOSED),
        Waypoint(220, meet + [0.1, 0.0, 0.0], right_pick, CLOSED),
        Waypoint(310, meet + [0.05, 0.0, 0.0], right_pick, CLOSED),
        Waypoint(400, meet, right_pick, CLOSED),
    )
    left = (
        Waypoint(0, LEFT_START, START, OPEN),
        Waypoint(100, socket + lift, left_pick, OPEN),
        Waypoint(140, socket, left_pick, OPEN),
        Waypoint(170, socket, left_pick, CLOSED),
        Waypoint(220, meet + [-0.1, 0.0, 0.0], left_pick, CLOSED),
        Waypoint(310, meet + [-0.05, 0.0, 0.0], left_pick, CLOSED),
        Waypoint(400, meet, left_pick, CLOSED),
    )
    return Plan(left=left, right=right)
