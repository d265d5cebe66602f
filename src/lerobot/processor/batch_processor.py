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
        out = None
        action = transition.get(TransitionKey.ACTION)
        if isinstance(action, Tensor) and action.dim() == 1:
            out = dict(transition)
            out[TransitionKey.ACTION] = action.unsqueeze(0)
        for part, batched in (
            (TransitionKey.OBSERVATION, _batched_observation),
            (TransitionKey.COMPLEMENTARY_DATA, _batched_complementary),
        ):
            values = transition.get(part)
            changed = batched(values) if values else None
            if changed is not None:
                out = out or dict(transition)
                out[part] = changed
        return out if out is not None else transition

    def transform_features(self, features: Features) -> Features:
        return features


def _batched_observation(observation: dict[str, Any]) -> dict[str, Any] | None:
    """The observation with each single sample (1-d state, 3-d image) a batch of one; None when
    it is a batch already."""
    singles = {key: value.unsqueeze(0) for key, value in observation.items() if _single_sample(key, value)}
    return {**observation, **singles} if singles else None


def _single_sample(key: str, value: Any) -> bool:
    if not isinstance(value, Tensor):
        return False
    if key in (OBS_STATE, OBS_ENV_STATE):
        return value.dim() == 1
    return (key == OBS_IMAGE or key.startswith(f"{OBS_IMAGES}.")) and value.dim() == 3


def _batched_complementary(data: dict[str, Any]) -> dict[str, Any] | None:
    """The complementary data with one instruction, index or message list made a batch of one
    (and the dataset's language annotations dropped); None when there is nothing to change."""
    changed: dict[str, Any] = {}
    if isinstance(data.get("task"), str):
        changed["task"] = [data["task"]]
    for key in ("index", "task_index"):
        value = data.get(key)
        if isinstance(value, Tensor) and value.dim() == 0:
            changed[key] = value.unsqueeze(0)
    for key, first_of_one in (("messages", dict), ("message_streams", str), ("target_message_indices", int)):
        value = data.get(key)
        if isinstance(value, list) and (not value or isinstance(value[0], first_of_one)):
            changed[key] = [value]
    dropped = [key for key in DROPPED_COMPLEMENTARY if key in data]
    if not changed and not dropped:
        return None
    return {**{k: v for k, v in data.items() if k not in DROPPED_COMPLEMENTARY}, **changed}


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
