"""Closed-loop state machines for ManiSkill's cube tasks, from the observation vectors alone.

Each script reads one row's observation (`Scene`: the TCP, the cubes and the goal in the world
frame, plus the arm's joint positions) and says where the TCP should go next, how it should be
turned, and whether the gripper should close. `modeling_maniskill_expert` turns that into a
joint action with the arm's inverse kinematics. Phases advance on what the scene shows (the
TCP has reached its grasp point, the cube rides in the gripper), so a slow or slipping arm is
waited for rather than outrun, and a dropped cube is approached again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lerobot.policies.maniskill_expert.arms import Grip
from lerobot.policies.maniskill_expert.kinematics import rotation_about
from lerobot.utils.rotations import quaternion_matrix

DOWN = np.array([0.0, 0.0, -1.0])
UP = -DOWN


@dataclass(frozen=True)
class Scene:
    """One row's observation, parsed: positions in metres in the world frame."""

    qpos: np.ndarray
    tool_position: np.ndarray
    """The arm's tool point (see `arms.Arm.tool_point`), from its joint positions."""
    tool_rotation: np.ndarray
    """(3, 3) the tool frame's axes as columns (ManiSkill's TCP frame)."""
    objects: dict[str, np.ndarray] = field(default_factory=dict)
    """Each object's pose: position (3) and quaternion (4, w first)."""
    goal: np.ndarray | None = None


@dataclass(frozen=True)
class Command:
    """What a script asks of the arm for the next step."""

    position: np.ndarray
    rotation: np.ndarray
    gripper: Grip
    keep_rotation: bool = True
    """False while carrying: the orientation may then drift where that shortens the joints'
    path (a cube held in closed fingers does not care how they are turned)."""


@dataclass(frozen=True)
class Gripper:
    """A gripper's geometry in its TCP frame, for top-down grasps."""

    approach_axis: np.ndarray
    """The TCP-frame axis that points from the wrist out through the fingertips."""
    closing_axis: np.ndarray
    """The TCP-frame axis along which the fingers close."""
    grasp_depth: float
    """How far below a cube's centre the TCP goes to grasp it (negative: above)."""
    hover: float
    """Height above the grasp point from which the gripper comes down."""

    def top_down(self, closing: np.ndarray) -> np.ndarray:
        """(3, 3) the TCP rotation that points the fingers down and closes them along the
        horizontal unit vector `closing`."""
        local = np.stack(
            [self.approach_axis, self.closing_axis, np.cross(self.approach_axis, self.closing_axis)]
        )
        world = np.stack([DOWN, closing, np.cross(DOWN, closing)])
        return world.T @ local

    def closing_along(self, scene: Scene, cube_quaternion: np.ndarray) -> np.ndarray:
        """The cube face normal (horizontal) that is closest to the fingers' closing axis now,
        so that the wrist turns at most 45 degrees to line up with the cube."""
        current = scene.tool_rotation @ self.closing_axis
        cube_axes = quaternion_matrix(cube_quaternion)
        faces = [sign * cube_axes[:, i] for i in (0, 1) for sign in (1.0, -1.0)]
        faces = [np.array([f[0], f[1], 0.0]) / max(np.linalg.norm(f[:2]), 1e-9) for f in faces]
        return max(faces, key=lambda face: float(face @ current))


def funnel(target: np.ndarray, current: np.ndarray, hover: float, slope: float = 1.5) -> np.ndarray:
    """`target` raised by up to `hover`: the further `current` is from it sideways, the
    higher, so that the fingers (or a carried cube) come down onto it only once above it."""
    horizontal = float(np.linalg.norm(current[:2] - target[:2]))
    return target + np.array([0.0, 0.0, min(hover, slope * horizontal)])


def yaw_turn(degrees: float) -> np.ndarray:
    return rotation_about(UP, np.deg2rad(degrees))


class PickAndPlace:
    """Grasp cube `cube` from above, then carry it so that its centre reaches `place(scene)`.

    Phases: reach (fingers open, down through a funnel: the higher above the grasp point, the
    larger the horizontal error it tolerates), close (hold still while the fingers close for
    `close_steps` steps), carry (the fingers hold the cube; move the TCP by the cube's
    remaining error to its target; the subclass decides what happens there).
    """

    keep_rotation = True
    """Whether to hold the grasp's orientation while carrying."""

    def __init__(self, gripper: Gripper, cube: str, close_steps: int):
        self.gripper = gripper
        self.cube = cube
        self.close_steps = close_steps
        self.phase = "reach"
        self.steps_in_phase = 0
        self.closing: np.ndarray | None = None

    def act(self, scene: Scene) -> Command:
        cube = scene.objects[self.cube]
        if self.closing is None or self.phase == "reach":
            self.closing = self.gripper.closing_along(scene, cube[3:])
        rotation = self.gripper.top_down(self.closing)
        command = getattr(self, f"_{self.phase}")(scene, cube[:3], rotation)
        self.steps_in_phase += 1
        return command

    def _enter(self, phase: str) -> None:
        self.phase = phase
        self.steps_in_phase = 0

    def _reach(self, scene: Scene, cube: np.ndarray, rotation: np.ndarray) -> Command:
        grasp = cube - np.array([0.0, 0.0, self.gripper.grasp_depth])
        if np.linalg.norm(scene.tool_position - grasp) < 0.006:
            self._enter("close")
            return self._close(scene, cube, rotation)
        return Command(funnel(grasp, scene.tool_position, self.gripper.hover), rotation, gripper="open")

    def _close(self, scene: Scene, cube: np.ndarray, rotation: np.ndarray) -> Command:
        if self.steps_in_phase >= self.close_steps:
            self._enter("carry")
            return self._carry(scene, cube, rotation)
        return Command(scene.tool_position, rotation, gripper="close")

    def _carry(self, scene: Scene, cube: np.ndarray, rotation: np.ndarray) -> Command:
        if np.linalg.norm(cube - scene.tool_position) > 0.04:  # dropped: try again
            self._enter("reach")
            return self._reach(scene, cube, rotation)
        target = self.place(scene, cube)
        if self.release_at(scene, cube, target):
            self._enter("release")
            return self._release(scene, cube, rotation)
        return Command(
            scene.tool_position + (target - cube), rotation, gripper="hold", keep_rotation=self.keep_rotation
        )

    def _release(self, scene: Scene, cube: np.ndarray, rotation: np.ndarray) -> Command:
        """Open the fingers where the cube was placed, then back away upwards."""
        if self.steps_in_phase == 0:
            self.release_position = scene.tool_position
        lift = 0.0 if self.steps_in_phase < 2 else 0.05
        return Command(self.release_position + np.array([0.0, 0.0, lift]), rotation, gripper="open")

    def place(self, scene: Scene, cube: np.ndarray) -> np.ndarray:
        """Where the cube's centre should go next."""
        raise NotImplementedError

    def release_at(self, scene: Scene, cube: np.ndarray, target: np.ndarray) -> bool:
        """Whether to let go of the cube now; PickCube never does."""
        return False


class PickCube(PickAndPlace):
    """PickCube: carry the cube to the goal and hold still there (success needs a static arm)."""

    keep_rotation = False

    def place(self, scene: Scene, cube: np.ndarray) -> np.ndarray:
        return scene.goal


class StackCube(PickAndPlace):
    """StackCube: carry cube A onto cube B and let go; success needs A resting, not held.

    A is lifted straight up until it clears B's top, carried over B at that height, lowered
    until it sits on B, and released.
    """

    clearance = 0.02
    """How far A's bottom stays above B's top while it moves sideways."""

    def __init__(self, gripper: Gripper, cube: str, base: str, close_steps: int, cube_size: float = 0.04):
        super().__init__(gripper, cube, close_steps)
        self.base = base
        self.cube_size = cube_size

    def place(self, scene: Scene, cube: np.ndarray) -> np.ndarray:
        base = scene.objects[self.base][:3]
        on_top = base + np.array([0.0, 0.0, self.cube_size])
        horizontal = np.linalg.norm(cube[:2] - base[:2])
        if cube[2] < on_top[2] - 0.005 and horizontal < self.cube_size * 1.5:
            return np.array([cube[0], cube[1], on_top[2] + self.clearance])  # beside B: rise first
        return funnel(on_top, cube, self.clearance)

    def release_at(self, scene: Scene, cube: np.ndarray, target: np.ndarray) -> bool:
        base = scene.objects[self.base][:3]
        return np.linalg.norm(cube[:2] - base[:2]) < 0.01 and abs(cube[2] - base[2] - self.cube_size) < 0.004


class PushCube:
    """PushCube: put the closed fingers behind the cube, low, then push it onto the goal.

    The goal lies along +x from the cube; the fingers go to `standoff` behind the cube's centre
    (through a funnel from above, so they never land on it) and push until the cube's centre
    would be on the goal.
    """

    standoff = 0.05

    def __init__(self, gripper: Gripper, cube: str = "obj"):
        self.gripper = gripper
        self.cube = cube
        self.phase = "reach"
        self.closing: np.ndarray | None = None

    def act(self, scene: Scene) -> Command:
        cube = scene.objects[self.cube]
        if self.closing is None:
            self.closing = self.gripper.closing_along(scene, cube[3:])
        rotation = self.gripper.top_down(self.closing)
        direction = scene.goal[:2] - cube[:2]
        direction = np.append(direction / max(np.linalg.norm(direction), 1e-9), 0.0)
        behind = cube[:3] - self.standoff * direction - np.array([0.0, 0.0, self.gripper.grasp_depth])
        if self.phase == "reach":
            if np.linalg.norm(scene.tool_position - behind) < 0.01:
                self.phase = "push"
            else:
                return Command(
                    funnel(behind, scene.tool_position, self.gripper.hover), rotation, gripper="close"
                )
        goal = np.array([scene.goal[0], scene.goal[1], behind[2]])
        return Command(goal - (self.standoff - 0.01) * direction, rotation, gripper="close")
