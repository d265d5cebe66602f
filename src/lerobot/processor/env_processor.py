"""LeRobot's env-side processor steps (`lerobot.processor.env_processor`).

LeRobot's LIBERO env returns robosuite's raw observation (images upside down, a nested
`observation.robot_state`), and its `libero_processor` step converts it: images turned by 180
degrees, the state made of the end-effector position, its orientation as an axis-angle vector
and the two gripper joints. Our LIBERO env gives that form already
(`lerobot.envs.libero.observation`), so the step here converts only what is still raw: a batch
with `observation.robot_state` came from LeRobot's env and gets LeRobot's conversion; a batch
from our envs passes unchanged (turning its upright images again would be wrong).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.processor.steps import Features, ObservationProcessorStep, ProcessorStepRegistry
from lerobot.utils.constants import OBS_IMAGES, OBS_PREFIX, OBS_STATE
from lerobot.utils.not_in_this_build import refused_names

RAW_ROBOT_STATE = f"{OBS_PREFIX}.robot_state"
STATE_DIM = 8


@ProcessorStepRegistry.register(name="libero_processor")
@dataclass
class LiberoProcessorStep(ObservationProcessorStep):
    """LeRobot's `libero_processor` step: raw LIBERO observations to the policy's form."""

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        if RAW_ROBOT_STATE not in observation:
            return observation
        out = {
            key: torch.flip(value, dims=[2, 3]) if key.startswith(f"{OBS_IMAGES}.") else value
            for key, value in observation.items()
            if key != RAW_ROBOT_STATE
        }
        out[OBS_STATE] = raw_state_vector(observation[RAW_ROBOT_STATE])
        return out

    def transform_features(self, features: Features) -> Features:
        """Every state feature becomes the one 8-d `observation.state`."""
        out = {kind: dict(by_key) for kind, by_key in features.items() if kind != FeatureType.STATE}
        out[FeatureType.STATE] = {OBS_STATE: PolicyFeature(FeatureType.STATE, (STATE_DIM,))}
        return out


def raw_state_vector(robot_state: dict[str, Any]) -> torch.Tensor:
    """(B, 8) float32: eef position, eef axis-angle, gripper joints, from robosuite's nested state."""
    position = robot_state["eef"]["pos"]
    axis_angle = quaternion_to_axis_angle(robot_state["eef"]["quat"])
    state = torch.cat((position, axis_angle, robot_state["gripper"]["qpos"]), dim=-1).float()
    return state.unsqueeze(0) if state.dim() == 1 else state


def quaternion_to_axis_angle(quat: torch.Tensor) -> torch.Tensor:
    """(B, 4) unit quaternions (x, y, z, w) -> (B, 3) axis * angle; the identity rotation (no
    axis) gives zeros. The float32 torch twin of the env's numpy conversion, as LeRobot's step
    computes it on batches."""
    if not isinstance(quat, torch.Tensor) or quat.ndim != 2 or quat.shape[1] != 4:
        shape = tuple(quat.shape) if isinstance(quat, torch.Tensor) else type(quat).__name__
        raise ValueError(f"libero_processor: eef quaternions must be a (B, 4) tensor, got {shape}")
    quat = quat.to(torch.float32)
    w = quat[:, 3].clamp(-1.0, 1.0)
    sin_half = torch.sqrt(torch.clamp(1.0 - w * w, min=0.0))
    result = torch.zeros((quat.shape[0], 3), device=quat.device)
    has_axis = sin_half > 1e-10
    if has_axis.any():
        angle = 2.0 * torch.acos(w[has_axis])
        result[has_axis] = quat[has_axis, :3] / sin_half[has_axis].unsqueeze(1) * angle.unsqueeze(1)
    return result


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
