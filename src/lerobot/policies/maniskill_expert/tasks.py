"""What the expert knows about each scripted ManiSkill task: the arm, the control mode its actions
are for, and where each field lies in the observation vectors.

`observation.environment_state` is ManiSkill's `obs["extra"]` flattened in its dict order; each
task's layout is the env's own table's (`lerobot.envs.maniskill.tasks.task_sizes`, written from
ManiSkill; a test checks it against a real env's `leaf_names`). `observation.state` is the agent's qpos then qvel.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lerobot.envs.maniskill.tasks import task_sizes
from lerobot.policies.maniskill_expert.arms import PANDA, SO100, Arm, ArmController, ArmKinematics
from lerobot.policies.maniskill_expert.scripts import (
    Gripper,
    PickCube,
    PushCube,
    Scene,
    StackCube,
)

PANDA_GRIPPER = Gripper(
    approach_axis=np.array([0.0, 0.0, 1.0]),
    closing_axis=np.array([0.0, 1.0, 0.0]),
    grasp_depth=0.0,
    hover=0.06,
)
SO100_GRIPPER = Gripper(
    approach_axis=np.array([0.0, -1.0, 0.0]),
    closing_axis=np.array([1.0, 0.0, 0.0]),
    # The middle of what works: grasps from 12 mm above the cube's centre to 4 mm below it
    # pass 100 seeds; from 7 mm below (35/100), the moving jaw, which swings lower than its
    # tip as it closes, strikes the table.
    grasp_depth=-0.004,
    hover=0.04,
)


def extra_layout(task_name: str) -> tuple[tuple[str, int], ...]:
    """The task's `observation.environment_state` layout, as the env's table states it."""
    return task_sizes(task_name).extra


@dataclass(frozen=True)
class Task:
    arm: Arm
    control_mode: str
    extra_layout: tuple[tuple[str, int], ...]
    """(name, size) of each field of `observation.environment_state`, in order."""
    objects: tuple[str, ...]
    """The extra fields that hold object poses (position, quaternion w first)."""
    goal: str | None
    """The extra field that holds the goal position, if any."""
    new_script: Callable[[], object]
    """A fresh state machine for one episode."""


TASKS = {
    "PickCube-v1": Task(
        arm=PANDA,
        control_mode="pd_joint_delta_pos",
        extra_layout=extra_layout("PickCube-v1"),
        objects=("obj_pose",),
        goal="goal_pos",
        new_script=lambda: PickCube(PANDA_GRIPPER, "obj_pose", close_steps=3),
    ),
    "PushCube-v1": Task(
        arm=PANDA,
        control_mode="pd_joint_delta_pos",
        extra_layout=extra_layout("PushCube-v1"),
        objects=("obj_pose",),
        goal="goal_pos",
        new_script=lambda: PushCube(PANDA_GRIPPER, "obj_pose"),
    ),
    "StackCube-v1": Task(
        arm=PANDA,
        control_mode="pd_joint_delta_pos",
        extra_layout=extra_layout("StackCube-v1"),
        objects=("cubeA_pose", "cubeB_pose"),
        goal=None,
        new_script=lambda: StackCube(PANDA_GRIPPER, "cubeA_pose", "cubeB_pose", close_steps=3),
    ),
    "PickCubeSO100-v1": Task(
        arm=SO100,
        control_mode="pd_joint_pos",
        extra_layout=extra_layout("PickCubeSO100-v1"),
        objects=("obj_pose",),
        goal="goal_pos",
        new_script=lambda: PickCube(SO100_GRIPPER, "obj_pose", close_steps=6),
    ),
}
EXPERT_CONTROL_MODES = {name: task.control_mode for name, task in TASKS.items()}
"""The control mode each scripted task's actions are for (`--env.control_mode`)."""


def task_for(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"maniskill_expert: no script for task {name!r}; scripted tasks: {', '.join(TASKS)}")
    return TASKS[name]


@functools.cache
def kinematics(arm: Arm) -> ArmKinematics:
    return ArmKinematics(arm)


@functools.cache
def arm_controller(task: Task) -> ArmController:
    return ArmController(task.arm, task.control_mode)


def parse_scene(task: Task, state: np.ndarray, environment_state: np.ndarray) -> Scene:
    """One row's observation vectors as a `Scene`."""
    fields: dict[str, np.ndarray] = {}
    start = 0
    for name, size in task.extra_layout:
        fields[name] = environment_state[start : start + size]
        start += size
    if start != len(environment_state):
        raise ValueError(
            f"maniskill_expert: observation.environment_state has {len(environment_state)} numbers, "
            f"the layout of {task.extra_layout} has {start}; use obs_mode state_dict"
        )
    qpos = state[: len(state) // 2]
    tool_position, tool_rotation, _ = kinematics(task.arm).tool(qpos)
    return Scene(
        qpos=qpos,
        tool_position=tool_position,
        tool_rotation=tool_rotation,
        objects={name: fields[name] for name in task.objects},
        goal=fields[task.goal] if task.goal else None,
    )
