"""Closed-loop state machines for robomimic's Lift and Can, one per episode.

Each step a script reads one row's scene and says where the gripper should be: a position, a
heading about the vertical (the fingers always point down) and whether the fingers close.
`control.osc_action` turns that into the OSC_POSE action. A script keeps only its phase and the
points it fixed on entering it, so an episode acts the same in any batch slot.

Pick (Lift): reach the cube from above with the fingers open and lined up with its faces, close,
lift it. Pick and place (Can): the same grasp, then rise above the bins' walls, carry the can
over its compartment of bin 2, lower it, open the fingers and back away upwards, since robosuite
counts the can as placed only once the gripper is more than about 4 cm from it. A grasp that
loses its object starts again from the reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from lerobot.policies.robomimic_expert.control import wrap_angle, yaw_of

Fingers = Literal["open", "close"]


@dataclass(frozen=True)
class Scene:
    """One row's observation, parsed: positions in metres in robosuite's world frame."""

    eef_position: np.ndarray
    eef_rotation: np.ndarray
    """(3, 3) the end effector's axes as columns."""
    object_position: np.ndarray
    object_rotation: np.ndarray


@dataclass(frozen=True)
class Command:
    """Where a script wants the gripper next."""

    position: np.ndarray
    yaw: float
    """The gripper's heading about the vertical, in radians (fingers pointing down)."""
    fingers: Fingers


@dataclass(frozen=True)
class GraspGeometry:
    """How one object is taken from above."""

    grasp_height: float
    """Where the end effector's site (between the fingertips) goes, above the object's centre."""
    hover: float
    """The height above the grasp point from which the gripper comes straight down."""
    symmetric_yaw: float | None
    """The turn about the vertical that maps the object's grip onto itself (a cube's quarter
    turn); None for a round object, which any heading grips alike."""


def funnel(target: np.ndarray, current: np.ndarray, hover: float, slope: float = 1.5) -> np.ndarray:
    """`target` raised by up to `hover`: the further `current` is from it sideways, the higher,
    so that the fingers come down onto the object only once they are above it."""
    horizontal = float(np.linalg.norm(current[:2] - target[:2]))
    return target + np.array([0.0, 0.0, min(hover, slope * horizontal)])


def lined_up_yaw(geometry: GraspGeometry, scene: Scene) -> float:
    """The gripper heading nearest its current one that lines the fingers up with the object."""
    current = yaw_of(scene.eef_rotation)
    if geometry.symmetric_yaw is None:
        return current
    offset = wrap_angle(yaw_of(scene.object_rotation) - current, geometry.symmetric_yaw)
    return current + offset


class Pick:
    """Lift: grasp the object from above and lift it `lift_height` above where it was grasped.

    Phases: reach (fingers open, down through a funnel onto the grasp point, turning to line
    the fingers up), close (hold still for `close_steps` while the fingers close), lift.
    """

    reach_tolerance = 0.01
    """Metres from the grasp point at which the fingers start closing."""
    yaw_tolerance = np.deg2rad(5.0)
    dropped_distance = 0.06
    """Metres between the end effector and the object's centre that mean the grasp is lost."""

    def __init__(self, geometry: GraspGeometry, close_steps: int = 10, lift_height: float = 0.15):
        self.geometry = geometry
        self.close_steps = close_steps
        self.lift_height = lift_height
        self.phase = "reach"
        self.steps_in_phase = 0
        self.grasp_point = np.zeros(3)
        self.yaw = 0.0

    def act(self, scene: Scene) -> Command:
        command = getattr(self, f"_{self.phase}")(scene)
        self.steps_in_phase += 1
        return command

    def enter(self, phase: str, scene: Scene) -> Command:
        """Switch to `phase` and act in it at once."""
        self.phase = phase
        self.steps_in_phase = 0
        return getattr(self, f"_{phase}")(scene)

    def holds_object(self, scene: Scene) -> bool:
        return float(np.linalg.norm(scene.object_position - scene.eef_position)) < self.dropped_distance

    def _reach(self, scene: Scene) -> Command:
        self.yaw = lined_up_yaw(self.geometry, scene)
        grasp = scene.object_position + np.array([0.0, 0.0, self.geometry.grasp_height])
        yaw_error = abs(wrap_angle(self.yaw - yaw_of(scene.eef_rotation)))
        if (
            np.linalg.norm(scene.eef_position - grasp) < self.reach_tolerance
            and yaw_error < self.yaw_tolerance
        ):
            self.grasp_point = grasp
            return self.enter("close", scene)
        return Command(funnel(grasp, scene.eef_position, self.geometry.hover), self.yaw, "open")

    def _close(self, scene: Scene) -> Command:
        if self.steps_in_phase >= self.close_steps:
            return self.enter("lift", scene)
        return Command(self.grasp_point, self.yaw, "close")

    def _lift(self, scene: Scene) -> Command:
        if not self.holds_object(scene):
            return self.enter("reach", scene)
        return Command(self.grasp_point + np.array([0.0, 0.0, self.lift_height]), self.yaw, "close")


class PickAndPlace(Pick):
    """Can: grasp the object, carry it above the walls to `place` (its centre's resting point
    in the target compartment), set it down there and let go.

    Phases after the grasp: lift (straight up until the object's centre is at `carry_height`),
    carry (level, until it is above `place`), lower (until its centre is within
    `release_height` of `place`'s), release (open, hold still), retreat (straight up).
    """

    place_tolerance = 0.01
    """Metres sideways from above `place` at which the object starts coming down."""

    def __init__(
        self,
        geometry: GraspGeometry,
        place: np.ndarray,
        carry_height: float,
        release_height: float = 0.02,
        release_steps: int = 5,
        close_steps: int = 10,
    ):
        super().__init__(geometry, close_steps)
        self.place = place
        self.carry_height = carry_height
        self.release_height = release_height
        self.release_steps = release_steps
        self.release_point = np.zeros(3)

    def moving_object_to(self, scene: Scene, target: np.ndarray) -> np.ndarray:
        """The end-effector target that moves the held object's centre onto `target`, whatever
        the offset at which it was grasped."""
        return scene.eef_position + (target - scene.object_position)

    def _lift(self, scene: Scene) -> Command:
        if not self.holds_object(scene):
            return self.enter("reach", scene)
        if scene.object_position[2] > self.carry_height - self.place_tolerance:
            return self.enter("carry", scene)
        above = np.array([*scene.object_position[:2], self.carry_height])
        return Command(self.moving_object_to(scene, above), self.yaw, "close")

    def _carry(self, scene: Scene) -> Command:
        if not self.holds_object(scene):
            return self.enter("reach", scene)
        if np.linalg.norm(scene.object_position[:2] - self.place[:2]) < self.place_tolerance:
            return self.enter("lower", scene)
        above_place = np.array([*self.place[:2], self.carry_height])
        return Command(self.moving_object_to(scene, above_place), self.yaw, "close")

    def _lower(self, scene: Scene) -> Command:
        if not self.holds_object(scene):
            return self.enter("reach", scene)
        if scene.object_position[2] < self.place[2] + self.release_height:
            self.release_point = scene.eef_position
            return self.enter("release", scene)
        return Command(self.moving_object_to(scene, self.place), self.yaw, "close")

    def _release(self, scene: Scene) -> Command:
        if self.steps_in_phase >= self.release_steps:
            return self.enter("retreat", scene)
        return Command(self.release_point, self.yaw, "open")

    def _retreat(self, scene: Scene) -> Command:
        return Command(self.release_point + np.array([0.0, 0.0, 0.1]), self.yaw, "open")
