"""LeRobot's `to_batch_processor` step: a single sample (1-d state, 3-d image, one instruction)
becomes a batch of one; batches pass unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor

from lerobot.processor.core import EnvTransition, TransitionKey
from lerobot.processor.steps import Features, ProcessorStep, ProcessorStepRegistry
from lerobot.utils.constants import OBS_ENV_STATE, OBS_IMAGE, OBS_IMAGES, OBS_STATE
from lerobot.utils.not_in_this_build import refused_names

DROPPED_COMPLEMENTARY = ("language_persistent", "language_events")
"""Per-dataset language annotations LeRobot's step drops from a sample."""


@ProcessorStepRegistry.register(name="to_batch_processor")
@dataclass
class AddBatchDimensionProcessorStep(ProcessorStep):
    def __call__(self, transition: EnvTransition) -> EnvTransition:
        """A batch passes as it is, without copies (evaluation's and training's always do)."""
        action = transition.get(TransitionKey.ACTION)
        observation = transition.get(TransitionKey.OBSERVATION) or {}
        complementary = transition.get(TransitionKey.COMPLEMENTARY_DATA) or {}
        single_action = isinstance(action, Tensor) and action.dim() == 1
        single_observation = any(_batched_observation(k, v) is not v for k, v in observation.items())
        if not (single_action or single_observation or _unbatched_complementary(complementary)):
            return transition
        out = dict(transition)
        if single_action:
            out[TransitionKey.ACTION] = action.unsqueeze(0)
        if TransitionKey.OBSERVATION in transition and transition[TransitionKey.OBSERVATION] is not None:
            out[TransitionKey.OBSERVATION] = {k: _batched_observation(k, v) for k, v in observation.items()}
        if transition.get(TransitionKey.COMPLEMENTARY_DATA) is not None:
            out[TransitionKey.COMPLEMENTARY_DATA] = _batched_complementary(complementary)
        return out

    def transform_features(self, features: Features) -> Features:
        return features


def _batched_observation(key: str, value: Any) -> Any:
    if not isinstance(value, Tensor):
        return value
    if key in (OBS_STATE, OBS_ENV_STATE) and value.dim() == 1:
        return value.unsqueeze(0)
    if (key == OBS_IMAGE or key.startswith(f"{OBS_IMAGES}.")) and value.dim() == 3:
        return value.unsqueeze(0)
    return value


def _unbatched_complementary(data: dict[str, Any]) -> bool:
    if any(key in data for key in DROPPED_COMPLEMENTARY) or isinstance(data.get("task"), str):
        return True
    if any(isinstance(data.get(key), Tensor) and data[key].dim() == 0 for key in ("index", "task_index")):
        return True
    return any(key in data for key in ("messages", "message_streams", "target_message_indices"))


def _batched_complementary(data: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k not in DROPPED_COMPLEMENTARY}
    if isinstance(out.get("task"), str):
        out["task"] = [out["task"]]
    for key in ("index", "task_index"):
        if isinstance(out.get(key), Tensor) and out[key].dim() == 0:
            out[key] = out[key].unsqueeze(0)
    for key, first_of_one in (("messages", dict), ("message_streams", str), ("target_message_indices", int)):
        value = out.get(key)
        if isinstance(value, list) and (not value or isinstance(value[0], first_of_one)):
            out[key] = [value]
    return out


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
