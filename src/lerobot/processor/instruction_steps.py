"""The pipeline form of the instruction steps in `lerobot.processor.language`: those read and
write a flat batch, so the step here shows them the transition's observation and complementary
data as one, and splits what they return back into the two."""

from __future__ import annotations

from typing import Any

from lerobot.processor.core import EnvTransition, TransitionKey
from lerobot.processor.steps import Features, ProcessorStep
from lerobot.utils.constants import OBS_PREFIX


class InstructionStep(ProcessorStep):
    """A ProcessorStep running `self.batch_step` (a callable on flat batches)."""

    batch_step: Any

    @property
    def runs_on_normalized_state(self) -> bool:
        return bool(getattr(self.batch_step, "runs_on_normalized_state", False))

    def on_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The step on a flat batch (training batches, which skip the transition form)."""
        return self.batch_step(batch)

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        observation = transition.get(TransitionKey.OBSERVATION) or {}
        complementary = transition.get(TransitionKey.COMPLEMENTARY_DATA) or {}
        result = self.batch_step({**observation, **complementary})
        out = dict(transition)
        out[TransitionKey.OBSERVATION] = {k: v for k, v in result.items() if k.startswith(OBS_PREFIX)}
        out[TransitionKey.COMPLEMENTARY_DATA] = {
            k: v for k, v in result.items() if not k.startswith(OBS_PREFIX)
        }
        return out

    def transform_features(self, features: Features) -> Features:
        return features
