"""A user's own processor step, as a user's package would declare it. It imports only
LeRobot's public names, so the same module registers the step in LeRobot 0.6.1 too (the
round-trip test runs it there)."""

from dataclasses import dataclass, field

import torch

from lerobot.processor import ObservationProcessorStep, ProcessorStepRegistry

STEP_NAME = "test_user_offset_step"


@ProcessorStepRegistry.register(STEP_NAME)
@dataclass
class AddOffsetStep(ObservationProcessorStep):
    """Adds `scale * offset` to the state: `scale` is a setting, `offset` a saved tensor."""

    scale: float = 1.0
    offset: torch.Tensor = field(default_factory=lambda: torch.zeros(1))

    def observation(self, observation):
        observation["observation.state"] = observation["observation.state"] + self.scale * self.offset
        return observation

    def get_config(self):
        return {"scale": self.scale}

    def state_dict(self):
        return {"offset": self.offset}

    def load_state_dict(self, state):
        self.offset = state["offset"]

    def transform_features(self, features):
        return features
