"""From end-effector waypoints to joint commands, the way ACT made its scripted demonstrations.

ACT rolls its scripted policy out in a copy of the scene whose grippers are welded to motion
capture ("mocap") bodies, so that moving a mocap body drags its arm along (MuJoCo solves the
inverse kinematics); it records the arms' joint positions and replays them as joint commands in
the joint-controlled scene that is evaluated. This module does the first half, with gym-aloha's
end-effector scene files, without rendering: about 4000 physics steps, a fraction of a second.
"""

from __future__ import annotations

import functools

import numpy as np

from lerobot.policies.aloha_scripted.waypoints import Plan, interpolate, rotate

ARM_JOINTS = 6
# Joint positions (per arm: six joints, then both fingers) of ALOHA's start pose, as gym-aloha
# starts every episode.
START_QPOS = np.array([0, -0.96, 1.16, 0, -0.3, 0, 0.02239, -0.02239] * 2)
# gym-aloha's normalised gripper opening (0 closed, 1 open) -> finger position in metres.
FINGER_CLOSED, FINGER_OPEN = 0.01844, 0.05800
# The grasp point lies between the finger pads, this far along the gripper frame's x axis (the
# direction the fingers point in).
GRASP_DEPTH = 0.095
# The welds are soft, and the arms sag under their weight and lag behind a moving target by a few
# centimetres, which is a cube's width: each step, this fraction of the remaining error of each
# grasp point is added to its mocap target (an integral correction, about 20 steps to settle).
CORRECTION_GAIN = 0.05
CONTROL_STEP_S = 0.02
"""The env's control period (50 Hz); the physics runs at the model's own time step under it."""


@functools.cache
def load_model(sim_task: str):
    """gym-aloha's end-effector scene for `sim_task` ("transfer_cube" or "insertion")."""
    import mujoco
    from gym_aloha.constants import ASSETS_DIR

    return mujoco.MjModel.from_xml_path(str(ASSETS_DIR / f"bimanual_viperx_end_effector_{sim_task}.xml"))


def finger_position(opening: float) -> float:
    return FINGER_CLOSED + opening * (FINGER_OPEN - FINGER_CLOSED)


def joint_commands(sim_task: str, object_poses: np.ndarray, plan: Plan, n_steps: int) -> np.ndarray:
    """(n_steps, 14) joint commands in the env's action layout that follow `plan`.

    `object_poses` is the env's `environment_state` at the episode's start (each object's
    position and quaternion). Row t is the arms' joint positions after step t of the
    end-effector rollout, with the gripper openings the plan asks for at step t.
    """
    import mujoco

    model = load_model(sim_task)
    data = mujoco.MjData(model)
    n_objects_q = model.nq - len(START_QPOS)
    data.qpos[: len(START_QPOS)] = START_QPOS
    data.qpos[len(START_QPOS) :] = object_poses[:n_objects_q]
    arms = Arms(model)
    arms.follow(data, plan, 0)
    mujoco.mj_forward(model, data)
    n_substeps = round(CONTROL_STEP_S / model.opt.timestep)
    commands = np.empty((n_steps, 14))
    for t in range(n_steps):
        if t == plan.revise_at:
            plan = plan.revise(object_positions(data.qpos[len(START_QPOS) :]))
        left_opening, right_opening = arms.follow(data, plan, t)
        data.ctrl[:] = _finger_controls(left_opening, right_opening)
        mujoco.mj_step(model, data, nstep=n_substeps)
        arms.correct(data)
        commands[t] = _action(data.qpos, left_opening, right_opening)
    return commands


def object_positions(object_qpos: np.ndarray) -> np.ndarray:
    """The objects' positions (x, y, z each) from their free joints' positions (7 each)."""
    return np.concatenate([object_qpos[i : i + 3] for i in range(0, len(object_qpos), 7)])


def grasp_offsets(model) -> tuple[np.ndarray, np.ndarray]:
    """The left and right grasp points in their mocap bodies' frames.

    Each weld holds a gripper at a fixed pose relative to its mocap body (the model's
    `relpose`: position, then orientation); the grasp point is `GRASP_DEPTH` along that
    gripper's x axis.
    """
    offsets = []
    for weld in range(2):
        relative_position, relative_quaternion = model.eq_data[weld, 3:6], model.eq_data[weld, 6:10]
        offsets.append(relative_position + rotate(relative_quaternion, np.array([GRASP_DEPTH, 0.0, 0.0])))
    return offsets[0], offsets[1]


class Arms:
    """Moves both mocap bodies so that the grippers' grasp points follow a plan."""

    def __init__(self, model):
        self.offsets = grasp_offsets(model)
        self.grippers = [model.body(f"vx300s_{side}/gripper_link").id for side in ("left", "right")]
        self.targets = np.zeros((2, 3))
        self.corrections = np.zeros((2, 3))

    def follow(self, data, plan: Plan, t: int) -> tuple[float, float]:
        """Set the mocap poses for step t of `plan`; returns the grippers' openings at t."""
        openings = []
        for index, waypoints in enumerate((plan.left, plan.right)):
            position, quaternion, opening = interpolate(waypoints, t)
            self.targets[index] = position
            aim = position + self.corrections[index]
            data.mocap_pos[index] = aim - rotate(quaternion, self.offsets[index])
            data.mocap_quat[index] = quaternion
            openings.append(opening)
        return openings[0], openings[1]

    def correct(self, data) -> None:
        """Integrate the grasp points' remaining errors into the next targets."""
        for index, body in enumerate(self.grippers):
            grasp_point = data.xpos[body] + data.xmat[body].reshape(3, 3)[:, 0] * GRASP_DEPTH
            self.corrections[index] += CORRECTION_GAIN * (self.targets[index] - grasp_point)


def _finger_controls(left_opening: float, right_opening: float) -> np.ndarray:
    left, right = finger_position(left_opening), finger_position(right_opening)
    return np.array([left, -left, right, -right])


def _action(qpos: np.ndarray, left_opening: float, right_opening: float) -> np.ndarray:
    left_arm, right_arm = qpos[:ARM_JOINTS], qpos[8 : 8 + ARM_JOINTS]
    return np.concatenate([left_arm, [left_opening], right_arm, [right_opening]])
