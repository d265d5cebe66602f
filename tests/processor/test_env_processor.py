"""LeRobot's LIBERO processor step: raw LIBERO observations converted as LeRobot converts them;
our LIBERO env's (already converted) pass unchanged."""

import math

import torch

from lerobot.processor import LiberoProcessorStep, ProcessorStepRegistry, batch_to_transition
from lerobot.processor.core import TransitionKey
from lerobot.processor.env_processor import LiberoProcessorStep as StepByModule


def test_libero_step_leaves_our_batches_as_they_are():
    assert LiberoProcessorStep is StepByModule
    assert ProcessorStepRegistry.get("libero_processor") is LiberoProcessorStep
    image, state = torch.rand(1, 3, 8, 8), torch.rand(1, 8)
    out = LiberoProcessorStep()(
        batch_to_transition({"observation.images.image": image, "observation.state": state})
    )
    assert out[TransitionKey.OBSERVATION]["observation.images.image"] is image
    assert out[TransitionKey.OBSERVATION]["observation.state"] is state


def test_libero_step_converts_a_raw_observation():
    image = torch.arange(2 * 3 * 2 * 2, dtype=torch.float32).reshape(2, 3, 2, 2)
    half_turn_about_z = [0.0, 0.0, 1.0, 0.0]  # (x, y, z, w): 180 degrees about z
    raw = {
        "observation.images.image": image,
        "observation.robot_state": {
            "eef": {"pos": torch.ones(2, 3), "quat": torch.tensor([half_turn_about_z, [0.0, 0.0, 0.0, 1.0]])},
            "gripper": {"qpos": torch.full((2, 2), 0.5)},
        },
    }
    observation = LiberoProcessorStep()(batch_to_transition(raw))[TransitionKey.OBSERVATION]
    assert set(observation) == {"observation.images.image", "observation.state"}
    assert torch.equal(observation["observation.images.image"], image.flip(2, 3))
    expected = torch.tensor([[1, 1, 1, 0, 0, math.pi, 0.5, 0.5], [1, 1, 1, 0, 0, 0, 0.5, 0.5]])
    torch.testing.assert_close(observation["observation.state"], expected)
