"""LeRobot's env-side processor steps (`lerobot.processor.env_processor`), for code and saved
pipelines that name them.

LeRobot's LIBERO env returns robosuite's raw observation (upside-down images, a nested
`robot_state`), and its `LiberoProcessorStep` converts it. Our LIBERO env returns LeRobot's
policy format already (`lerobot.envs.libero.observation`), so the step here leaves our batches
as they are; a batch that still carries the raw `observation.robot_state` did not come from an
env of this build and is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lerobot.utils.constants import OBS_PREFIX
from lerobot.utils.not_in_this_build import refused_names

RAW_ROBOT_STATE = f"{OBS_PREFIX}.robot_state"


@dataclass
class LiberoProcessorStep:
    """LeRobot's `libero_processor` step: the identity on our LIBERO envs' observations."""

    registry_name = "libero_processor"

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self.observation(batch)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        if RAW_ROBOT_STATE in observation:
            raise ValueError(
                f"LiberoProcessorStep: {RAW_ROBOT_STATE} is robosuite's raw state from LeRobot's own env; "
                "lerobot.envs.libero gives observation.state and upright images already"
            )
        return observation

    def transform_features(self, features: dict[str, Any]) -> dict[str, Any]:
        return features

    def get_config(self) -> dict[str, Any]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing to load: the step has no statistics."""

    def reset(self) -> None:
        """Nothing to forget between episodes."""


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
