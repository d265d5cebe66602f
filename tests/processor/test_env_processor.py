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


def test_a_raw_lerobot_libero_observation_goes_through_preprocess_observation_and_the_step():
    """LeRobot's LIBERO env gives robosuite's nested state as numpy; preprocess_observation keeps
    it (as tensors) for the LIBERO step, which gives the 8-d state and turned images."""
    import numpy as np

    from lerobot.envs.utils import preprocess_observation
    from lerobot.processor import PolicyProcessorPipeline

    rng = np.random.default_rng(0)
    raw = {
        "pixels": {"image": rng.integers(0, 255, (3, 8, 8, 3), dtype=np.uint8)},
        "robot_state": {
            "eef": {
                "pos": rng.normal(size=(3, 3)),
                "quat": rng.normal(size=(3, 4)),
                "mat": rng.normal(size=(3, 3, 3)),
            },
            "gripper": {"qpos": rng.normal(size=(3, 2))},
        },
    }
    batch = preprocess_observation(raw)
    assert torch.equal(
        batch["observation.robot_state"]["eef"]["pos"], torch.from_numpy(raw["robot_state"]["eef"]["pos"])
    )
    out = PolicyProcessorPipeline(steps=[LiberoProcessorStep()])(batch)
    assert out["observation.state"].shape == (3, 8) and out["observation.state"].dtype == torch.float32
    torch.testing.assert_close(
        out["observation.state"][:, :3], batch["observation.robot_state"]["eef"]["pos"].float()
    )
    assert torch.equal(out["observation.images.image"], batch["observation.images.image"].flip(2, 3))
    assert "observation.robot_state" not in out
