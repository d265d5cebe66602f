"""The two arms the expert drives, and the inverse kinematics step that moves their grippers.

Each arm is described by facts from ManiSkill's agent definitions: its URDF, where the table
scene places its base, which links define its tool centre point (TCP) and how far one action
moves a joint. `ArmKinematics` turns joint positions into the TCP pose and Jacobian in the world
frame; `joint_step` asks for the joint change that moves the TCP towards a target pose.

ManiSkill's `pd_joint_delta_pos` sets each joint's PD target to its current position plus the
action times the joint's limit; the drives (stiffness 1e3, damping 1e2) are damping-bound, so a
joint covers about 40% of its commanded change within a step. The expert therefore commands the
whole remaining change every step, scaled down to the action's range, and re-reads the joint
positions the next step: a closed loop on the observed state.

`pd_joint_pos` (the SO-100's mode here, and what LeRobot's real SO-100 takes) sets the PD
targets to the action itself: the expert asks for the joint positions one inverse kinematics
step away from the current ones, with no limit per step, and re-reads them the next step.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from lerobot.policies.maniskill_expert.kinematics import (
    Chain,
    jacobian,
    link_pose,
    load_chain,
    rotation_about,
)

Grip = Literal["open", "close", "hold"]
"""What a script asks of the gripper: open, close on a cube, or hold one it has closed on."""


@dataclass(frozen=True)
class Arm:
    """One robot arm as ManiSkill's tabletop scenes build it."""

    urdf: str
    """Path of the URDF under mani_skill's asset directory."""
    base_position: tuple[float, float, float]
    """The robot's root link in the world, as the table scene places it."""
    base_yaw: float
    """The root link's turn about the world's z axis, in radians."""
    n_arm_joints: int
    """The first entries of qpos, in URDF chain order; the gripper's joints follow."""
    tool_link: str
    """The link that carries the fingers (the fixed one, if one finger moves)."""
    tool_point: tuple[float, float, float]
    """The point the scripts steer, in `tool_link`'s frame: where a grasped cube's centre
    sits between the fingertips. Its frame is `tool_link`'s, as ManiSkill's TCP frame is."""
    max_joint_step: float
    """Radians per step that an arm action of 1 asks for (pd_joint_delta_pos's limit)."""
    gripper_open: float
    gripper_closed: float
    """The gripper's targets, as its action: Panda, normalised to [-1, 1]; SO-100, the joint
    position in radians. Closed is past the fingers' stop on a cube, so that they squeeze it."""
    gripper_holding: float
    """The gripper's target while it carries a cube it has closed on."""


PANDA = Arm(
    urdf="robots/panda/panda_v2.urdf",
    base_position=(-0.615, 0.0, 0.0),
    base_yaw=0.0,
    n_arm_joints=7,
    tool_link="panda_hand_tcp",
    tool_point=(0.0, 0.0, 0.0),  # ManiSkill's TCP, midway between the fingertips
    max_joint_step=0.1,
    gripper_open=1.0,
    gripper_closed=-1.0,
    gripper_holding=-1.0,
)
SO100 = Arm(
    urdf="robots/so100/so100.urdf",
    base_position=(-0.725, 0.0, 0.0),
    base_yaw=np.pi / 2,
    n_arm_joints=5,
    tool_link="Fixed_Jaw",
    # ManiSkill's TCP lies midway between the jaw tips, so it moves as the jaw opens. This
    # point stays put: 2 cm from the fixed jaw's tip (at x = 0.01, y = -0.097) towards the
    # moving jaw, where the moving jaw, closing, presses a 2.5 cm cube against the fixed one.
    tool_point=(-0.01, -0.095, 0.0),
    max_joint_step=0.05,
    gripper_open=-0.45,
    gripper_closed=-0.8,
    # The jaws stop on a 2.5 cm cube near -0.8 rad. Squeezed there, PhysX reports the wrist
    # joints moving at 0.2-0.5 rad/s while they stand still, and `is_robot_static` (every arm
    # joint below 0.2 rad/s) fails; 0.02 rad less closed still carries the cube and shows the
    # joints at rest. Holding targets from -0.775 to -0.785 all pass 100 seeds; -0.77 drops cubes.
    gripper_holding=-0.78,
)


@functools.cache
def _chain(urdf: str, link: str) -> Chain:
    from mani_skill import PACKAGE_ASSET_DIR  # only where an arm is driven: the URDFs ship with it

    return load_chain(Path(PACKAGE_ASSET_DIR) / urdf, link)


class ArmKinematics:
    """The tool point's pose and Jacobian in the world frame, from an arm's joint positions."""

    def __init__(self, arm: Arm):
        self.arm = arm
        self.chain = _chain(arm.urdf, arm.tool_link)
        if len(self.chain.movable) != arm.n_arm_joints:
            raise ValueError(f"{arm.urdf}: {arm.tool_link} moves with {self.chain.movable}")
        self.base_rotation = rotation_about(np.array([0.0, 0.0, 1.0]), arm.base_yaw)
        self.base_position = np.array(arm.base_position)

    def tool(self, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position (3,), rotation (3, 3), Jacobian (6, n_arm_joints)) of the tool point in
        the world; `qpos` starts with the arm's joints, in chain order."""
        positions = {name: float(q) for name, q in zip(self.chain.movable, qpos, strict=False)}
        pose, axes = link_pose(self.chain, positions)
        point = pose[:3, :3] @ np.array(self.arm.tool_point) + pose[:3, 3]
        jac = jacobian(axes, point)
        rotate = self.base_rotation
        world_jac = np.concatenate([rotate @ jac[:3], rotate @ jac[3:]])
        return rotate @ point + self.base_position, rotate @ pose[:3, :3], world_jac


def rotation_error(target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The turn (axis times angle, world frame) that takes rotation `current` to `target`."""
    turn = target @ current.T
    cos_angle = np.clip((np.trace(turn) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos_angle)
    axis = np.array([turn[2, 1] - turn[1, 2], turn[0, 2] - turn[2, 0], turn[1, 0] - turn[0, 1]])
    norm = np.linalg.norm(axis)
    if norm < 1e-9:
        return np.zeros(3)  # no turn (or exactly half a turn, which the scripts never ask for)
    return axis / norm * angle


def joint_step(
    jac: np.ndarray,
    position_error: np.ndarray,
    rotation_error_: np.ndarray,
    rotation_weight: float,
    damping: float = 0.02,
) -> np.ndarray:
    """The joint change that best moves the TCP by `position_error` (metres) and turns it by
    `rotation_error_` (radians), a radian of error weighing `rotation_weight` metres'.

    Damped least squares, min |W (J dq - e)|^2 + damping^2 |dq|^2, stays finite near
    singular poses and gives a five-joint arm the best compromise for a six-number target.
    """
    weights = np.concatenate([np.ones(3), np.full(3, rotation_weight)])
    weighted = jac * weights[:, None]
    error = np.concatenate([position_error, rotation_error_]) * weights
    normal = weighted.T @ weighted + damping**2 * np.eye(jac.shape[1])
    return np.linalg.solve(normal, weighted.T @ error)


class ArmController:
    """Joint actions that move an arm's tool point towards target poses.

    `pd_joint_delta_pos` adds each action to the joints' current positions: the controller
    commands `gain` times the joint change that remains. `pd_joint_pos` takes the joint
    positions themselves: the controller asks for the current ones plus the change. Either way
    an action depends on the current observation only.
    """

    gain = 2.0
    """pd_joint_delta_pos: the joint change commanded per step, in units of the remaining one.
    The drives cover about 40% of a command within a step, so twice the rest settles in a few
    steps without overshooting."""
    rotation_weight = 0.1
    """Metres of position error that weigh as much as a radian of orientation error."""
    loose_rotation_weight = 0.0
    """The same, where the script lets the orientation drift."""

    def __init__(self, arm: Arm, control_mode: str):
        if control_mode not in ("pd_joint_delta_pos", "pd_joint_pos"):
            raise ValueError(f"maniskill_expert: no arm controller for control mode {control_mode!r}")
        self.arm = arm
        self.kinematics = ArmKinematics(arm)
        self.absolute = control_mode == "pd_joint_pos"

    def action(
        self,
        qpos: np.ndarray,
        position: np.ndarray,
        rotation: np.ndarray,
        gripper: Grip,
        keep_rotation: bool = True,
    ) -> np.ndarray:
        """The action that moves the tool point towards `position` and turns it towards
        `rotation` (world frame), and sets the gripper."""
        tool_position, tool_rotation, jac = self.kinematics.tool(qpos)
        weight = self.rotation_weight if keep_rotation else self.loose_rotation_weight
        change = joint_step(jac, position - tool_position, rotation_error(rotation, tool_rotation), weight)
        n = self.arm.n_arm_joints
        gripper_target = {
            "open": self.arm.gripper_open,
            "close": self.arm.gripper_closed,
            "hold": self.arm.gripper_holding,
        }[gripper]
        if self.absolute:
            return np.append(qpos[:n] + change, gripper_target)
        arm = self.gain * change / self.arm.max_joint_step
        arm = arm / max(1.0, float(np.abs(arm).max()))  # slow every joint alike: keep the direction
        return np.append(arm, gripper_target)
