"""LeRobot's processor pipeline API, natively: built in code, called on batches and actions,
inspected, saved in LeRobot's layout and loaded back, with steps a user registers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.processor import (
    DataProcessorPipeline,
    DeviceProcessorStep,
    NormalizerProcessorStep,
    PolicyProcessorPipeline,
    ProcessorStepRegistry,
    RenameObservationsProcessorStep,
    TransitionKey,
    UnnormalizerProcessorStep,
    policy_action_to_transition,
    transition_to_policy_action,
)
from lerobot.processor.steps import StepNotRegisteredError

STATE = PolicyFeature(FeatureType.STATE, (2,))
ACTION = PolicyFeature(FeatureType.ACTION, (2,))
STATS = {
    "observation.state": {"mean": torch.tensor([1.0, 2.0]), "std": torch.tensor([2.0, 4.0])},
    "action": {"min": torch.tensor([-2.0, 0.0]), "max": torch.tensor([2.0, 4.0])},
}
NORM_MAP = {"STATE": "MEAN_STD", "ACTION": "MIN_MAX"}


def preprocessor() -> DataProcessorPipeline:
    return PolicyProcessorPipeline(
        steps=[
            RenameObservationsProcessorStep(rename_map={"observation.pos": "observation.state"}),
            DeviceProcessorStep(device="cpu"),
            NormalizerProcessorStep(
                features={"observation.state": STATE, "action": ACTION}, norm_map=NORM_MAP, stats=STATS
            ),
        ],
        name="policy_preprocessor",
    )


def postprocessor() -> DataProcessorPipeline:
    return PolicyProcessorPipeline(
        steps=[UnnormalizerProcessorStep(features={"action": ACTION}, norm_map=NORM_MAP, stats=STATS)],
        name="policy_postprocessor",
        to_transition=policy_action_to_transition,
        to_output=transition_to_policy_action,
    )


def test_a_pipeline_built_in_code_processes_batches_and_actions():
    batch = {
        "observation.pos": torch.tensor([[3.0, 6.0]]),
        "task": ["pick"],
        "action": torch.tensor([[0.0, 2.0]]),
    }
    out = preprocessor()(batch)
    torch.testing.assert_close(out["observation.state"], torch.tensor([[1.0, 1.0]]))
    torch.testing.assert_close(out["action"], torch.tensor([[0.0, 0.0]]))
    assert out["task"] == ["pick"] and "observation.pos" not in out
    torch.testing.assert_close(postprocessor()(torch.tensor([[1.0, -1.0]])), torch.tensor([[2.0, 0.0]]))


def test_hooks_step_through_indexing_and_reset():
    pipeline = preprocessor()
    seen = []
    pipeline.register_after_step_hook(lambda index, transition: seen.append(index))
    pipeline({"observation.pos": torch.zeros(1, 2)})
    assert seen == [0, 1, 2]
    stages = list(pipeline.step_through({"observation.pos": torch.zeros(1, 2)}))
    assert len(stages) == 4 and "observation.pos" in stages[0][TransitionKey.OBSERVATION]
    assert isinstance(pipeline[0], RenameObservationsProcessorStep) and len(pipeline[1:]) == 2
    pipeline.reset()
    with pytest.raises(ValueError, match="not registered as a before-step hook"):
        pipeline.unregister_before_step_hook(print)


def test_saved_files_are_lerobots_layout_and_load_back(tmp_path):
    pre, post = preprocessor(), postprocessor()
    pre.save_pretrained(tmp_path, config_filename="policy_preprocessor.json")
    post.save_pretrained(tmp_path, config_filename="policy_postprocessor.json")
    saved = json.loads((tmp_path / "policy_preprocessor.json").read_text())
    assert [s["registry_name"] for s in saved["steps"]] == [
        "rename_observations_processor",
        "device_processor",
        "normalizer_processor",
    ]
    assert saved["steps"][2]["state_file"] == "policy_preprocessor_step_2_normalizer_processor.safetensors"
    loaded = DataProcessorPipeline.from_pretrained(tmp_path, config_filename="policy_preprocessor.json")
    batch = {"observation.pos": torch.tensor([[3.0, 6.0]])}
    torch.testing.assert_close(loaded(batch)["observation.state"], pre(batch)["observation.state"])
    overridden = DataProcessorPipeline.from_pretrained(
        tmp_path / "policy_preprocessor.json",
        config_filename="ignored.json",
        overrides={"rename_observations_processor": {"rename_map": {}}},
    )
    assert "observation.pos" in overridden(batch)
    with pytest.raises(KeyError, match="match no step"):
        DataProcessorPipeline.from_pretrained(tmp_path, "policy_preprocessor.json", overrides={"nope": {}})


def test_a_users_registered_step_loads_once_its_module_is_imported(tmp_path):
    sys.modules.pop("tests.processor.user_steps", None)
    ProcessorStepRegistry.unregister("test_user_offset_step")
    saved = {"name": "mine", "steps": [{"registry_name": "test_user_offset_step", "config": {"scale": 2.0}}]}
    (tmp_path / "mine.json").write_text(json.dumps(saved))
    with pytest.raises(StepNotRegisteredError) as error:
        DataProcessorPipeline.from_pretrained(tmp_path, config_filename="mine.json")
    assert "'test_user_offset_step' is not registered: import the module" in str(error.value)
    assert "\n" not in str(error.value)

    from tests.processor.user_steps import AddOffsetStep

    step = AddOffsetStep(scale=2.0, offset=torch.tensor([0.5, 1.0]))
    DataProcessorPipeline(steps=[step], name="mine").save_pretrained(tmp_path)
    loaded = DataProcessorPipeline.from_pretrained(tmp_path, config_filename="mine.json")
    out = loaded({"observation.state": torch.zeros(1, 2)})
    torch.testing.assert_close(out["observation.state"], torch.tensor([[1.0, 2.0]]))


def test_a_registry_name_is_taken_once():
    with pytest.raises(ValueError, match="already registered"):
        ProcessorStepRegistry.register("device_processor")(type("Other", (), {}))
    assert "libero_processor" in ProcessorStepRegistry.list()


def test_importing_the_package_loads_no_pipeline_module():
    code = "import sys, lerobot.processor; print(any(m.startswith('lerobot.processor.pipeline') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
