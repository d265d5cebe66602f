"""LeRobot's `to_batch_processor` step: a single sample (1-d state, 3-d image, one instruction)
becomes a batch of one; batches pass unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor

from lerobot.processor.core import EnvTransition, TransitionKey
from lerobot.processor.steps import Features, ProcessorStep, ProcessorStepRegistry
from lerobot.utils.constants import OBS_ENV_STATE, OBS_IMAGE, OBS_IMAGES, OBS_STATE

DROPPED_COMPLEMENTARY = ("language_persistent", "language_events")
"""Per-dataset language annotations LeRobot's step drops from a sample."""


@ProcessorStepRegistry.register(name="to_batch_processor")
@dataclass
class AddBatchDimensionProcessorStep(ProcessorStep):
    def __call__(self, transition: EnvTransition) -> EnvTransition:
        out = dict(transition)
        action = transition.get(TransitionKey.ACTION)
        if isinstance(action, Tensor) and action.dim() == 1:
            out[TransitionKey.ACTION] = action.unsqueeze(0)
        observation = transition.get(TransitionKey.OBSERVATION)
        if observation is not None:
            out[TransitionKey.OBSERVATION] = {k: _batched_observation(k, v) for k, v in observation.items()}
        complementary = transition.get(TransitionKey.COMPLEMENTARY_DATA)
        if complementary is not None:
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
