"""ALOHA's tasks and constants: names, instructions, sizes (see `lerobot.envs.aloha`).

Read by the benchmark's config, its env (`.env`) and the scripted policy; imports neither
gymnasium nor NumPy.
"""

from __future__ import annotations

import difflib

from lerobot.utils.errors import ConfigError

TASK_PREFIX = "gym_aloha/"
# LeRobot's task name -> gym-aloha's task name.
SIM_TASKS = {"AlohaInsertion-v0": "insertion", "AlohaTransferCube-v0": "transfer_cube"}
# The instructions LeRobot's aloha_sim_* datasets store.
DESCRIPTIONS = {
    "AlohaInsertion-v0": "Insert the peg into the socket.",
    "AlohaTransferCube-v0": "Pick up the cube with the right arm and transfer it to the left arm.",
}
TASKS = tuple(SIM_TASKS)
FPS = 50
EPISODE_LENGTH = 400
MAX_REWARD = 4
JOINTS_DIM = 14
ACTION_DIM = 14
OBJECT_POSE_DIM = 7
ENV_STATE_DIM = 2 * OBJECT_POSE_DIM
CAMERA = "top"
OBS_TYPES: tuple[str, ...] = ("pixels_agent_pos", "pixels", "state")


def resolve_tasks(task_arg: str) -> list[str]:
    """`AlohaTransferCube-v0`, `gym_aloha/AlohaInsertion-v0` or a comma list -> task names."""
    tasks: list[str] = []
    for token in (t.strip() for t in task_arg.split(",")):
        name = token.removeprefix(TASK_PREFIX)
        if name not in SIM_TASKS:
            guess = difflib.get_close_matches(name, TASKS, n=1)
            hint = f"did you mean {guess[0]!r}? " if guess else ""
            raise ConfigError(f"--env.task={token!r}: unknown ALOHA task; {hint}tasks: {', '.join(TASKS)}")
        if name not in tasks:
            tasks.append(name)
    return tasks
