"""ManiSkill3's tasks and constants: names, groups, instructions, assets (see `lerobot.envs.maniskill`).

Read by the benchmark's config, its env (`.env`) and the scripted expert; imports neither
gymnasium, NumPy nor ManiSkill, so a command line is checked before any of them loads. The
facts (step limits, robots, control modes, cameras, asset ids) are ManiSkill 3.0.1's, as its
registry and task classes state them; tests/envs/test_maniskill.py checks them against it.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

from lerobot.utils.errors import ConfigError

PANDA_CONTROL_MODES = (
    "pd_joint_delta_pos",
    "pd_joint_pos",
    "pd_ee_delta_pos",
    "pd_ee_delta_pose",
    "pd_ee_pose",
    "pd_joint_target_delta_pos",
    "pd_ee_target_delta_pos",
    "pd_ee_target_delta_pose",
    "pd_joint_vel",
    "pd_joint_pos_vel",
    "pd_joint_delta_pos_vel",
)
"""The Panda's controllers (ManiSkill's `Panda._controller_configs`), the first its default."""
STICK_CONTROL_MODES = (*PANDA_CONTROL_MODES[:4], "pd_ee_delta_pose_align", *PANDA_CONTROL_MODES[4:])
"""The Panda with a stick instead of a gripper (PushT, DrawTriangle)."""
SO100_CONTROL_MODES = ("pd_joint_delta_pos", "pd_joint_pos", "pd_joint_target_delta_pos")
"""LeRobot's SO-100 arm (ManiSkill's `SO100`): joint controllers only."""


@dataclass(frozen=True)
class Task:
    """One offline ManiSkill task: what it is and what its env declares."""

    name: str
    description: str
    """The instruction a VLA reads (ManiSkill's tasks have none of their own: ours, from each
    task's documented goal)."""
    max_steps: int
    """ManiSkill's registered step limit (`max_episode_steps`)."""
    control_modes: tuple[str, ...]
    default_control_mode: str
    cameras: tuple[str, ...]
    """The task's sensor cameras, each `observation.images.<camera>`."""
    robot: str


def _panda(name, description, max_steps, cameras=("base_camera",), modes=PANDA_CONTROL_MODES, robot="panda"):
    return Task(name, description, max_steps, modes, "pd_joint_delta_pos", cameras, robot)


WRIST = ("base_camera", "hand_camera")
TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        _panda("PickCube-v1", "Pick up the red cube and move it to the goal position.", 50),
        _panda("PushCube-v1", "Push the cube onto the red and white target on the table.", 50),
        _panda("StackCube-v1", "Pick up the red cube and stack it on top of the green cube.", 50, WRIST),
        _panda("PullCube-v1", "Pull the cube back onto the red and white target on the table.", 50),
        _panda("PokeCube-v1", "Grasp the peg and use it to poke the cube onto the goal region.", 50),
        _panda("PlaceSphere-v1", "Pick up the ball and place it in the bin.", 50),
        _panda("RollBall-v1", "Push the ball so that it rolls into the goal region.", 80),
        _panda("LiftPegUpright-v1", "Lift the peg lying on the table and stand it upright.", 50),
        _panda("PegInsertionSide-v1", "Pick up the peg and insert it into the hole in the box.", 100, WRIST),
        _panda(
            "PlugCharger-v1", "Pick up the charger and plug it into the receptacle on the wall.", 200, WRIST
        ),
        _panda(
            "PushT-v1",
            "Push the T-shaped block to match the T-shaped target on the table.",
            100,
            modes=STICK_CONTROL_MODES,
            robot="panda_stick",
        ),
        _panda("PullCubeTool-v1", "Grasp the L-shaped tool and use it to pull the cube closer.", 100),
        _panda("StackPyramid-v1", "Stack the three cubes into a pyramid.", 250, WRIST),
        _panda(
            "DrawTriangle-v1",
            "Draw the triangle shown on the canvas with the brush.",
            300,
            modes=STICK_CONTROL_MODES,
            robot="panda_stick",
        ),
        _panda(
            "TwoRobotPickCube-v1",
            "Use both arms to bring the red cube to the goal position, out of one arm's reach.",
            100,
            ("base_camera", "panda_wristcam-0-hand_camera", "panda_wristcam-1-hand_camera"),
            robot="panda_wristcam x2",
        ),
        Task(
            "PickCubeSO100-v1",
            "Pick up the red cube and move it to the goal position.",
            50,
            SO100_CONTROL_MODES,
            "pd_joint_delta_pos",
            ("base_camera",),
            "so100",
        ),
        Task(
            "SO100GraspCube-v1",
            "Grasp the cube, lift it and bring the arm back to its rest pose.",
            64,
            SO100_CONTROL_MODES,
            "pd_joint_target_delta_pos",
            ("base_camera",),
            "so100",
        ),
    )
}
"""The tasks that build, reset and step with no download (ManiSkill 3.0.1, measured here)."""

GROUPS: dict[str, tuple[str, ...]] = {
    "offline": tuple(TASKS),
    "so100": ("PickCubeSO100-v1", "SO100GraspCube-v1"),
    "panda": tuple(name for name, task in TASKS.items() if task.robot == "panda"),
}
"""`--env.task` names that stand for several tasks, evaluated as one group each."""


@dataclass(frozen=True)
class Asset:
    """A ManiSkill download (`python -m mani_skill.utils.download_asset <uid>`) and where it
    lands under ManiSkill's asset directory (`MS_ASSET_DIR`, by default ~/.maniskill/data)."""

    uid: str
    target: str

    @property
    def command(self) -> str:
        return f"python -m mani_skill.utils.download_asset {self.uid}"


YCB = Asset("ycb", "assets/mani_skill2_ycb")
BRIDGE = Asset("bridge_v2_real2sim", "tasks/bridge_v2_real2sim_dataset")
PARTNET_CABINET = Asset("partnet_mobility_cabinet", "partnet_mobility")
NEEDS_ASSETS: dict[str, tuple[Asset, ...]] = {
    "PickSingleYCB-v1": (YCB,),
    "PickClutterYCB-v1": (YCB, Asset("pick_clutter_ycb_configs", "tasks/pick_clutter")),
    "RotateSingleObjectInHandLevel2-v1": (YCB,),
    "RotateSingleObjectInHandLevel3-v1": (YCB,),
    "TurnFaucet-v1": (Asset("partnet_mobility_faucet", "partnet_mobility"),),
    "OpenCabinetDrawer-v1": (PARTNET_CABINET,),
    "AssemblingKits-v1": (Asset("assembling_kits", "tasks/assembling_kits"),),
    "PutCarrotOnPlateInScene-v1": (BRIDGE,),
    "PutEggplantInBasketScene-v1": (BRIDGE,),
    "PutSpoonOnTableClothInScene-v1": (BRIDGE,),
    "StackGreenCubeOnYellowCubeBakedTexInScene-v1": (BRIDGE,),
    "RoboCasaKitchen-v1": (Asset("RoboCasa", "scene_datasets/robocasa_dataset"),),
    "ReplicaCAD_SceneManipulation-v1": (Asset("ReplicaCAD", "scene_datasets/replica_cad_dataset"),),
    "InsertFlower-v1": (Asset("oakink-v2", "tasks/oakink-v2"),),
    "PickCubeWidowXAI-v1": (Asset("widowxai", "robots/widowxai"),),
}
"""ManiSkill tasks that need a download (they fail offline), with what to download: named in
the error a run of one of them gives before anything starts."""

OBS_TYPES: tuple[str, ...] = ("pixels_agent_pos", "state")
SIM_BACKENDS: tuple[str, ...] = ("auto", "physx_cpu", "physx_cuda")
FPS = 20
"""ManiSkill's control frequency for every task here (100 Hz physics, 5 substeps)."""


def asset_dir() -> Path:
    """ManiSkill's asset directory, as ManiSkill computes it (`MS_ASSET_DIR`, else ~/.maniskill)."""
    return Path(os.environ.get("MS_ASSET_DIR", Path.home() / ".maniskill")) / "data"


def resolve_tasks(task_arg: str) -> dict[str, list[str]]:
    """`--env.task` (a task, a group, or a comma list of either) -> {group: [task, ...]}.

    A group is evaluated under its own name; tasks named one by one form one group each, named
    after the task (Meta-World's convention for task lists).
    """
    groups: dict[str, list[str]] = {}
    for token in (t.strip() for t in task_arg.split(",")):
        if token in GROUPS:
            groups.setdefault(token, list(GROUPS[token]))
        else:
            name = check_task(token)
            groups.setdefault(name, [name])
    return groups


def check_task(token: str) -> str:
    """The task `token` names, or a one-line error: the asset and the download command for a
    task that needs one (unless downloaded), the offline tasks for an unknown name."""
    name = token if token.endswith(("-v0", "-v1")) else f"{token}-v1"
    if name in TASKS:
        return name
    if name in NEEDS_ASSETS:
        missing = [a for a in NEEDS_ASSETS[name] if not (asset_dir() / a.target).exists()]
        if missing:
            commands = "; ".join(a.command for a in missing)
            raise ConfigError(
                f"--env.task={token}: needs ManiSkill's downloaded assets "
                f"({', '.join(a.uid for a in missing)}, not in {asset_dir()}): run `{commands}`, "
                f"or pick an offline task: {', '.join(TASKS)}"
            )
        raise ConfigError(
            f"--env.task={token}: its assets are downloaded, but only the offline tasks are built "
            f"in: {', '.join(TASKS)}"
        )
    guess = difflib.get_close_matches(name, [*TASKS, *GROUPS], n=1)
    hint = f"did you mean {guess[0]!r}? " if guess else ""
    raise ConfigError(
        f"--env.task={token!r}: unknown ManiSkill task; {hint}offline tasks: {', '.join(TASKS)}; "
        f"groups: {', '.join(GROUPS)}"
    )


def reward_modes(name: str) -> tuple[str, ...]:
    """The rewards `name` computes, its default first (ManiSkill's `SUPPORTED_REWARD_MODES`)."""
    return tuple(_sizes_table()[name]["reward_modes"])


def check_reward_mode(flag: str, mode: str, task_names: list[str]) -> None:
    """A reward mode every task of the run computes, or a one-line error listing theirs."""
    for name in task_names:
        if mode not in reward_modes(name):
            raise ConfigError(
                f"{flag}={mode}: {name} has no such reward; its rewards: {', '.join(reward_modes(name))}"
            )


def check_control_mode(flag: str, mode: str, task_names: list[str]) -> None:
    """A control mode every task of the run has, or a one-line error listing theirs."""
    for name in task_names:
        if mode not in TASKS[name].control_modes:
            raise ConfigError(
                f"{flag}={mode}: {name} has no such controller; its control modes: "
                f"{', '.join(TASKS[name].control_modes)}"
            )


@dataclass(frozen=True)
class TaskSizes:
    """What one task's env gives and takes under a control mode (`spaces.json`, written by
    scripts/make_maniskill_tasks.py from ManiSkill itself)."""

    action: int
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    agents: tuple[tuple[str, int], ...]
    """(agent uid, action size) of each arm of a two-arm task, in ManiSkill's order; () for one."""
    state: int
    """`observation.state`: the robot's proprioception (target controllers add their targets)."""
    extra: tuple[tuple[str, int], ...]
    """`observation.environment_state`, field by field (name, size), in ManiSkill's order."""
    cameras: dict[str, tuple[int, int]]
    """Each camera's default (height, width)."""

    @property
    def environment_state(self) -> int:
        return sum(size for _, size in self.extra)


@functools.cache
def _sizes_table() -> dict:
    return json.loads((Path(__file__).with_name("spaces.json")).read_text())


def task_sizes(name: str, control_mode: str | None = None) -> TaskSizes:
    """`name`'s sizes under `control_mode` (None: the task's default)."""
    entry = _sizes_table()[name]
    mode = entry["control_modes"][control_mode or TASKS[name].default_control_mode]
    return TaskSizes(
        action=mode["action"],
        action_low=tuple(mode["low"]),
        action_high=tuple(mode["high"]),
        agents=tuple((uid, size) for uid, size in mode.get("agents", ())),
        state=mode["state"],
        extra=tuple((field, size) for field, size in entry["extra"]),
        cameras={camera: (h, w) for camera, (h, w) in entry["cameras"].items()},
    )
