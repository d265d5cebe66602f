"""The observation space of envs that give cameras, a robot state and an environment state."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from gymnasium import spaces


def cameras_and_states_space(
    cameras: Mapping[str, tuple[int, int]], state: int, environment_state: int
) -> spaces.Dict:
    """`pixels` (uint8 height x width x 3 per camera; absent without cameras), `agent_pos` and
    `environment_state` (float32 vectors of the given sizes): the layout `preprocess_observation`
    turns into `observation.images.<camera>`, `observation.state` and
    `observation.environment_state` (ManiSkill's and robomimic's envs)."""

    def vector(dim: int) -> spaces.Box:
        return spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float32)

    entries: dict[str, spaces.Space] = {}
    if cameras:
        entries["pixels"] = spaces.Dict(
            {
                camera: spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8)
                for camera, (h, w) in cameras.items()
            }
        )
    entries["agent_pos"] = vector(state)
    entries["environment_state"] = vector(environment_state)
    return spaces.Dict(entries)
