"""PushT's task and constants (see `lerobot.envs.pusht`); imports neither gymnasium nor NumPy."""

from __future__ import annotations

from lerobot.utils.errors import ConfigError

TASK = "PushT-v0"
TASK_PREFIX = "gym_pusht/"
DESCRIPTION = "Push the T-shaped block onto the T-shaped target."
FPS = 10
EPISODE_LENGTH = 300
ACTION_DIM = 2
AGENT_POS_DIM = 2
STATE_DIM = 5
KEYPOINTS_DIM = 16
WORKSPACE_SIZE = 512.0
MIN_VISUALIZATION_SIZE = 96
"""The smallest video frame gym-pusht can draw: it marks the action with a cross `size // 96`
pixels thick, and OpenCV refuses a thickness of 0."""
OBS_TYPES: tuple[str, ...] = ("pixels_agent_pos", "environment_state_agent_pos", "state")


def resolve_task(task_arg: str) -> str:
    """`PushT-v0` or `gym_pusht/PushT-v0` -> `PushT-v0`; anything else is a one-line error."""
    if task_arg.strip().removeprefix(TASK_PREFIX) != TASK:
        raise ConfigError(f"--env.task={task_arg!r}: unknown PushT task; the one task is {TASK!r}")
    return TASK
