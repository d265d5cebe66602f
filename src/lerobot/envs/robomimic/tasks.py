"""robomimic's five robosuite tasks and their published evaluation settings (see
`lerobot.envs.robomimic`).

Read by the benchmark's config, its env (`.env`), the scripted expert and the dataset
converter; imports neither gymnasium, NumPy nor robosuite, so a command line is checked before
any of them loads.

Where each value comes from (robomimic 0.5's repository):
- horizon: the evaluation rollout horizon robomimic registers for each task's proficient-human
  (ph) datasets, `robomimic/__init__.py` (`ph_horizons`: 400, 400, 400, 700, 700);
- cameras and their size: the image datasets' extraction commands,
  `robomimic/scripts/extract_obs_from_raw_datasets.sh` (`--camera_names ... --camera_height 84
  --camera_width 84`; ToolHang 240);
- robosuite arguments: the datasets' `env_args` (docs/modules/environments.md): `robots`,
  `control_freq` 20, the `OSC_POSE` controller with robosuite's default settings (delta
  end-effector pose, inputs in [-1, 1] scaled to 5 cm and 0.5 rad), `reward_shaping` false,
  `ignore_done` true, `use_object_obs` true; TwoArmTransport's `env_configuration`
  `single-arm-opposed`;
- observation keys: robomimic's low-dim keys (`robot{i}_eef_pos`, `robot{i}_eef_quat`,
  `robot{i}_gripper_qpos` for each arm, then `object` = robosuite's `object-state`), the order
  of robomimic's paper configs (`robomimic/scripts/generate_paper_configs.py`);
- sizes of `object-state` and each model's cameras: measured from robosuite 1.4.1 here
  (tests/envs/test_robomimic.py checks them against robosuite).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from lerobot.utils.errors import ConfigError

FPS = 20
"""robosuite's control frequency in robomimic's datasets (`control_freq`)."""
ROBOSUITE_WITH_ALL_TASKS = "1.4.1"
"""The first robosuite release with TwoArmTransport and ToolHang (robomimic's `v141` datasets
were made with it); 1.4.0, the one LIBERO pins, has Lift, PickPlaceCan and NutAssemblySquare."""
PROPRIO_KEYS = ("eef_pos", "eef_quat", "gripper_qpos")
"""robomimic's proprioceptive low-dim keys of each arm (`robot{i}_<key>`), in its order."""
PROPRIO_SIZES = {"eef_pos": 3, "eef_quat": 4, "gripper_qpos": 2}
ARM_ACTION = 7
"""OSC_POSE: 3 position and 3 rotation deltas, then the gripper (-1 open, 1 closed)."""


@dataclass(frozen=True)
class Task:
    """One robomimic task: the robosuite env and robomimic's evaluation settings for it."""

    name: str
    env_name: str
    """robosuite's environment class (`suite.make(env_name, ...)`)."""
    description: str
    """The instruction a VLA reads (robomimic has none: ours, from each task's documented goal)."""
    horizon: int
    cameras: tuple[str, ...]
    """robomimic's image-dataset cameras, each `observation.images.<camera>`."""
    camera_size: int
    model_cameras: tuple[str, ...]
    """Every camera the task's MuJoCo model has (what `--env.camera_names` may pick)."""
    object_state: int
    """Length of robosuite's `object-state` (`observation.environment_state`)."""
    arms: int = 1
    env_configuration: str | None = None
    robosuite_version: str = "1.4.0"
    """The first robosuite release that has the task."""
    shaped_reward: bool = True
    """Whether robosuite computes a shaped reward for it (TwoArmTransport and ToolHang give the
    sparse one whatever `reward_shaping` says)."""

    @property
    def state(self) -> int:
        return self.arms * sum(PROPRIO_SIZES.values())

    @property
    def action(self) -> int:
        return self.arms * ARM_ACTION

    @property
    def robots(self) -> tuple[str, ...]:
        return ("Panda",) * self.arms

    @property
    def proprio_keys(self) -> tuple[str, ...]:
        """The observation names of `observation.state`, in robomimic's order: robosuite's
        keys for the env and the datasets' `obs/` keys for the converter, the same names."""
        return tuple(f"robot{arm}_{key}" for arm in range(self.arms) for key in PROPRIO_KEYS)


ONE_ARM_CAMERAS = ("agentview", "robot0_eye_in_hand")
_VIEWS = ("frontview", "birdview", "agentview", "sideview", "robot0_robotview", "robot0_eye_in_hand")
TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task("lift", "Lift", "Lift the cube off the table.", 400, ONE_ARM_CAMERAS, 84, _VIEWS, 10),
        Task(
            "can",
            "PickPlaceCan",
            "Pick up the can and place it in its compartment of the bin.",
            400,
            ONE_ARM_CAMERAS,
            84,
            tuple(view for view in _VIEWS if view != "sideview"),
            14,
        ),
        Task(
            "square",
            "NutAssemblySquare",
            "Pick up the square nut and fit it onto the square peg.",
            400,
            ONE_ARM_CAMERAS,
            84,
            _VIEWS,
            14,
        ),
        Task(
            "transport",
            "TwoArmTransport",
            "Move the hammer from one bin to the other, clearing the trash out of the way.",
            700,
            ("shouldercamera0", "shouldercamera1", "robot0_eye_in_hand", "robot1_eye_in_hand"),
            84,
            (
                *_VIEWS[:4],
                "shouldercamera0",
                "shouldercamera1",
                "robot0_robotview",
                "robot0_eye_in_hand",
                "robot1_robotview",
                "robot1_eye_in_hand",
            ),
            41,
            arms=2,
            env_configuration="single-arm-opposed",
            robosuite_version=ROBOSUITE_WITH_ALL_TASKS,
            shaped_reward=False,
        ),
        Task(
            "tool_hang",
            "ToolHang",
            "Assemble the frame on its stand, then hang the tool on the frame's hook.",
            700,
            ("sideview", "robot0_eye_in_hand"),
            240,
            _VIEWS,
            44,
            robosuite_version=ROBOSUITE_WITH_ALL_TASKS,
            shaped_reward=False,
        ),
    )
}
"""robomimic's five tasks, in its order."""

ALL = "all"
OBS_TYPES: tuple[str, ...] = ("pixels_agent_pos", "state")


def resolve_tasks(task_arg: str) -> list[str]:
    """`--env.task` (a task, a comma list, or `all`) -> task names, in robomimic's order."""
    names: list[str] = []
    for token in (t.strip() for t in task_arg.split(",")):
        for name in TASKS if token == ALL else [check_task(token)]:
            if name not in names:
                names.append(name)
    return names


def check_task(token: str) -> str:
    """The task `token` names (ours or robosuite's class name), or a one-line error listing the five."""
    by_env_name = {task.env_name.lower(): task.name for task in TASKS.values()}
    name = by_env_name.get(token.lower(), token.lower())
    if name in TASKS:
        return name
    guess = difflib.get_close_matches(name, list(TASKS), n=1)
    hint = f"did you mean {guess[0]!r}? " if guess else ""
    raise ConfigError(
        f"--env.task={token!r}: unknown robomimic task; {hint}choose from {', '.join(TASKS)} (or {ALL})"
    )


def check_cameras(flag: str, cameras: tuple[str, ...], task_names: list[str]) -> None:
    """Cameras every task of the run has, or a one-line error listing the task's cameras."""
    for name in task_names:
        missing = [camera for camera in cameras if camera not in TASKS[name].model_cameras]
        if missing:
            raise ConfigError(
                f"{flag}={','.join(cameras)}: {name} has no camera {missing[0]!r}; its cameras: "
                f"{', '.join(TASKS[name].model_cameras)}"
            )


def installed_robosuite() -> str | None:
    """The installed robosuite's version, read from its metadata (robosuite itself not imported)."""
    from importlib import metadata

    try:
        return metadata.version("robosuite")
    except metadata.PackageNotFoundError:
        return None


def check_robosuite_has(task_names: list[str]) -> None:
    """A one-line error for a task the installed robosuite lacks (TwoArmTransport and ToolHang
    came with robosuite 1.4.1; LIBERO's extra pins 1.4.0)."""
    from packaging.version import Version

    found = installed_robosuite()
    if found is None:
        return  # the extra check names the missing package
    for name in task_names:
        needed = TASKS[name].robosuite_version
        if Version(found) < Version(needed):
            raise ConfigError(
                f"--env.task={name}: robosuite {found} has no {TASKS[name].env_name} (added in "
                f"robosuite {needed}): `uv pip install --no-deps 'robosuite=={ROBOSUITE_WITH_ALL_TASKS}'`, "
                "in an environment without the libero extra (LIBERO's package pins robosuite 1.4.0)"
            )


def check_reward_shaping(flag: str, task_names: list[str]) -> None:
    """A one-line error where a task of the run has no shaped reward (robosuite would print a
    warning, or nothing, and give the sparse one)."""
    for name in task_names:
        if not TASKS[name].shaped_reward:
            shaped = [task.name for task in TASKS.values() if task.shaped_reward]
            raise ConfigError(
                f"{flag}=true: robosuite has no shaped reward for {name} (only the sparse success reward); "
                f"tasks with one: {', '.join(shaped)}"
            )
