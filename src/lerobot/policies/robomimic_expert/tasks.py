"""What the expert knows about each scripted robomimic task: where its fields lie in the
observation vectors, how its object is grasped and where it goes.

`observation.state` is robomimic's proprioception of the one Panda: eef position (3, world
frame), eef quaternion (4, x y z w), the two finger positions. `observation.environment_state`
is robosuite's `object-state`, its observables in the order the env registers them (robosuite
1.4's `lift.py` and `pick_place.py`; tests/policies/test_robomimic_expert.py checks both layouts
against a real env).

Can's target comes from robosuite 1.4's `PickPlace` (`pick_place.py`): bin 2 stands at
`bin2_pos` = (0.1, 0.28, 0.8) and is `table_full_size` = (0.39, 0.49) across, split into four
compartments by dividers through its centre; the can's (object id 3) is the one with x in
(0.1, 0.295) and y in (0.28, 0.525) (`not_in_bin`), and `_check_success` wants the can's centre
there, between 0.8 and 0.9 m high, with the gripper more than about 4 cm away
(`1 - tanh(10 d) < 0.6`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lerobot.policies.robomimic_expert.control import quaternion_matrix
from lerobot.policies.robomimic_expert.scripts import GraspGeometry, Pick, PickAndPlace, Scene

STATE_SIZE = 9
"""robot0_eef_pos (3), robot0_eef_quat (4), robot0_gripper_qpos (2)."""

BIN2_POSITION = np.array([0.1, 0.28, 0.8])
BIN_WALL_HALF_THICKNESS = 0.01
BIN_WALL_TOP = BIN2_POSITION[2] + 0.1
"""The bins' walls and dividers rise 0.1 m above their bodies' origin (robosuite's `bins_arena.xml`)."""
CAN_RADIUS = 0.035
"""The can's `horizontal_radius_site` (robosuite's `can.xml`) lies 0.025 m along both x and y."""
CAN_BELOW_CENTRE = 0.06
"""The can's bottom lies 6 cm below its centre (`bottom_site` in `can.xml`)."""
CAN_RESTING_HEIGHT = 0.86
"""The can's centre standing on a bin's floor (its start height in bin 1; both bins stand at z = 0.8)."""
CAN_PLACE = np.array(
    [*(BIN2_POSITION[:2] + BIN_WALL_HALF_THICKNESS + CAN_RADIUS + 0.015), CAN_RESTING_HEIGHT]
)
"""(0.16, 0.34): 1.5 cm inside the dividers' corner of the can's compartment, whose low corner
is bin 2's centre. Not the compartment's middle (0.1975, 0.4025): the Panda stands at
(-0.5, -0.1), and pointing down it reaches no further than about 0.83 m sideways from its
shoulder at the carrying height, 0.86 m short of the middle."""
CUBE_GRASP = GraspGeometry(grasp_height=0.0, hover=0.06, symmetric_yaw=np.pi / 2)
CAN_GRASP = GraspGeometry(grasp_height=0.0, hover=0.08, symmetric_yaw=None)


@dataclass(frozen=True)
class Task:
    object_state_layout: tuple[tuple[str, int], ...]
    """(robosuite observable, size) of each field of `observation.environment_state`, in order."""
    object_position: str
    object_quaternion: str
    new_script: Callable[[], Pick]
    """A fresh state machine for one episode."""


TASKS = {
    "lift": Task(
        object_state_layout=(("cube_pos", 3), ("cube_quat", 4), ("gripper_to_cube_pos", 3)),
        object_position="cube_pos",
        object_quaternion="cube_quat",
        new_script=lambda: Pick(CUBE_GRASP),
    ),
    "can": Task(
        object_state_layout=(
            ("Can_pos", 3),
            ("Can_quat", 4),
            ("Can_to_robot0_eef_pos", 3),
            ("Can_to_robot0_eef_quat", 4),
        ),
        object_position="Can_pos",
        object_quaternion="Can_quat",
        new_script=lambda: PickAndPlace(
            CAN_GRASP, place=CAN_PLACE, carry_height=BIN_WALL_TOP + CAN_BELOW_CENTRE + 0.05
        ),
    ),
}


def task_for(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"robomimic_expert: no script for task {name!r}; scripted tasks: {', '.join(TASKS)}")
    return TASKS[name]


def split_fields(layout: tuple[tuple[str, int], ...], vector: np.ndarray) -> dict[str, np.ndarray]:
    """{name: its slice of `vector`}, or a one-line error when the sizes disagree."""
    total = sum(size for _, size in layout)
    if len(vector) != total:
        raise ValueError(
            f"robomimic_expert: observation.environment_state has {len(vector)} numbers, "
            f"the layout {layout} has {total}"
        )
    offsets = np.cumsum([0] + [size for _, size in layout])
    return {name: vector[offsets[i] : offsets[i + 1]] for i, (name, _) in enumerate(layout)}


def parse_scene(task: Task, state: np.ndarray, environment_state: np.ndarray) -> Scene:
    """One row's observation vectors as a `Scene`."""
    if len(state) != STATE_SIZE:
        raise ValueError(
            f"robomimic_expert: observation.state has {len(state)} numbers, one arm's has {STATE_SIZE}"
        )
    fields = split_fields(task.object_state_layout, environment_state)
    return Scene(
        eef_position=state[:3],
        eef_rotation=quaternion_matrix(state[3:7]),
        object_position=fields[task.object_position],
        object_rotation=quaternion_matrix(fields[task.object_quaternion]),
    )
