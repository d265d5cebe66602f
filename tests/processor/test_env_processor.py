"""LeRobot's LIBERO processor step: our LIBERO env already gives its output format."""

import pytest
import torch

from lerobot.processor import LiberoProcessorStep
from lerobot.processor.env_processor import LiberoProcessorStep as StepByModule


def test_libero_step_leaves_our_batches_as_they_are_and_refuses_raw_ones():
    assert LiberoProcessorStep is StepByModule and LiberoProcessorStep.registry_name == "libero_processor"
    step = LiberoProcessorStep()
    batch = {"observation.images.image": torch.rand(1, 3, 8, 8), "observation.state": torch.rand(1, 8)}
    assert step(batch) is batch and step.transform_features({"a": 1}) == {"a": 1}
    with pytest.raises(ValueError, match="robot_state is robosuite's raw state"):
        step({"observation.robot_state": {}})
