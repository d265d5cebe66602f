"""Pipelines LeRobot 0.6.1 saved load here and compute what LeRobot computed
(tests/fixtures/processor/, written by scripts/make_processor_fixtures.py in LeRobot's own
environment); ours load in LeRobot."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.factory import make_pre_post_processors
from lerobot.processor import DataProcessorPipeline, PolicyProcessorPipeline
from lerobot.processor.converters import policy_action_to_transition, transition_to_policy_action
from tests.lerobot_ref import NO_LEROBOT_REASON, lerobot_ref_python

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECTED = FIXTURES / "processor"
REPO = FIXTURES.parents[1]
TYPES = ("act", "diffusion", "smolvla", "pi0", "pi05")


def checkpoint_pipelines(policy_type: str, destination: Path) -> Path:
    """The fixture's config and pipeline files, with the tokenizer's path made absolute."""
    destination.mkdir(parents=True, exist_ok=True)
    for path in (FIXTURES / "policies" / policy_type).iterdir():
        if path.suffix == ".json":
            text = path.read_text().replace('"tests/fixtures/', f'"{FIXTURES}/')
            (destination / path.name).write_text(text)
        elif "processor" in path.name:
            shutil.copy(path, destination / path.name)
    save_file({}, destination / "model.safetensors")  # the config reader wants weights beside it
    return destination


def recorded(policy_type: str) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    path = EXPECTED / f"{policy_type}.safetensors"
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata()
    return load_file(path), metadata


def assert_same_batch(ours: dict, theirs: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    assert sorted(k for k in ours if k != "env_task") == json.loads(metadata["keys"])
    for key, tensor in theirs.items():
        if key.startswith("out.") and key != "out.chunk":
            torch.testing.assert_close(ours[key[4:]], tensor, rtol=0, atol=1e-6, msg=key)
    assert ours["task"] == json.loads(metadata["out.task"])


@pytest.mark.parametrize("policy_type", TYPES)
def test_lerobots_saved_pipelines_give_lerobots_outputs(policy_type, tmp_path):
    directory = checkpoint_pipelines(policy_type, tmp_path / policy_type)
    tensors, metadata = recorded(policy_type)
    batch = {k[3:]: v for k, v in tensors.items() if k.startswith("in.") and k != "in.chunk"}
    batch["task"] = json.loads(metadata["tasks"])

    pre = PolicyProcessorPipeline.from_pretrained(directory, config_filename="policy_preprocessor.json")
    post = PolicyProcessorPipeline.from_pretrained(
        directory,
        config_filename="policy_postprocessor.json",
        to_transition=policy_action_to_transition,
        to_output=transition_to_policy_action,
    )
    assert_same_batch(pre(dict(batch)), tensors, metadata)
    torch.testing.assert_close(post(tensors["in.chunk"]), tensors["out.chunk"], rtol=0, atol=1e-6)

    # The same through LeRobot's factory, which evaluation and serving use.
    cfg = PreTrainedConfig.from_pretrained(directory)
    cfg.device = "cpu"
    pre, post = make_pre_post_processors(cfg, pretrained_path=directory)
    assert_same_batch(pre(dict(batch)), tensors, metadata)
    torch.testing.assert_close(post(tensors["in.chunk"]), tensors["out.chunk"], rtol=0, atol=1e-6)


def test_lerobots_libero_env_processor_gives_lerobots_outputs():
    tensors = load_file(EXPECTED / "libero" / "expected.safetensors")
    pipeline = DataProcessorPipeline.from_pretrained(
        EXPECTED / "libero", config_filename="env_preprocessor.json"
    )
    raw = {
        "observation.images.image": tensors["in.observation.images.image"],
        "observation.images.image2": tensors["in.observation.images.image2"],
        "observation.robot_state": {
            "eef": {"pos": tensors["in.eef.pos"], "quat": tensors["in.eef.quat"]},
            "gripper": {"qpos": tensors["in.gripper.qpos"]},
        },
    }
    out = pipeline(raw)
    for key, tensor in tensors.items():
        if key.startswith("out."):
            torch.testing.assert_close(out[key[4:]], tensor, rtol=0, atol=1e-6, msg=key)


def test_a_users_step_saved_by_lerobot_loads_here():
    import tests.processor.user_steps  # noqa: F401  (registers the step, as the user's package would)

    pipeline = DataProcessorPipeline.from_pretrained(
        EXPECTED / "user_step", config_filename="user_pipeline.json"
    )
    expected = load_file(EXPECTED / "user_step" / "expected.safetensors")
    out = pipeline({"observation.pos": expected["in"]})
    torch.testing.assert_close(out["observation.state"], expected["out"], rtol=0, atol=1e-6)


LEROBOT_LOADS = """
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import tests.processor.user_steps
from lerobot.processor import DataProcessorPipeline, PolicyProcessorPipeline
from lerobot.processor.converters import policy_action_to_transition, transition_to_policy_action
from safetensors.torch import load_file, save_file
directory = sys.argv[1]
inputs = load_file(directory + "/inputs.safetensors")
user = DataProcessorPipeline.from_pretrained(directory, config_filename="user_pipeline.json")
pre = PolicyProcessorPipeline.from_pretrained(directory, config_filename="policy_preprocessor.json")
post = PolicyProcessorPipeline.from_pretrained(directory, config_filename="policy_postprocessor.json",
    to_transition=policy_action_to_transition, to_output=transition_to_policy_action)
batch = {k: v for k, v in inputs.items() if k.startswith("observation.")}
out = {"user": user({"observation.state": inputs["pos"]})["observation.state"].tolist(),
       "pre": {k: v.tolist() for k, v in pre(batch).items() if k.startswith("observation.")},
       "post": post(inputs["chunk"]).tolist()}
print(json.dumps(out))
"""


def test_our_saved_pipelines_load_in_lerobot(tmp_path):
    """Our training's files for ACT and a pipeline holding the user's step, loaded by LeRobot
    0.6.1 itself, compute what ours compute."""
    python = lerobot_ref_python()
    if python is None:
        pytest.skip(NO_LEROBOT_REASON)
    from lerobot.processor.policy_processors import policy_pipelines
    from tests.processor.user_steps import AddOffsetStep

    cfg = PreTrainedConfig.from_pretrained(checkpoint_pipelines("act", tmp_path / "act"))
    stats = {
        "observation.state": {"mean": torch.arange(4.0), "std": torch.full((4,), 2.0)},
        "observation.image": {"mean": torch.full((3, 1, 1), 0.5), "std": torch.full((3, 1, 1), 0.25)},
        "action": {"mean": torch.ones(4), "std": torch.full((4,), 3.0)},
    }
    pre, post = policy_pipelines(cfg, stats, device="cpu")
    pre.save_pretrained(tmp_path, config_filename="policy_preprocessor.json")
    post.save_pretrained(tmp_path, config_filename="policy_postprocessor.json")
    user = DataProcessorPipeline(
        steps=[AddOffsetStep(scale=2.0, offset=torch.tensor([1.0, 2.0]))], name="user_pipeline"
    )
    user.save_pretrained(tmp_path)
    generator = torch.Generator().manual_seed(0)
    inputs = {
        "observation.state": torch.randn((2, 4), generator=generator),
        "observation.image": torch.rand((2, 3, 96, 96), generator=generator),
        "pos": torch.randn((2, 2), generator=generator),
        "chunk": torch.randn((2, 4), generator=generator),
    }
    save_file(inputs, tmp_path / "inputs.safetensors")
    result = subprocess.run(
        [python, "-c", LEROBOT_LOADS, str(tmp_path), str(REPO)], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    theirs = json.loads(result.stdout.strip().splitlines()[-1])
    batch = {k: v for k, v in inputs.items() if k.startswith("observation.")}
    ours_pre = pre(batch)
    for key, value in theirs["pre"].items():
        torch.testing.assert_close(ours_pre[key], torch.tensor(value), rtol=0, atol=1e-6, msg=key)
    torch.testing.assert_close(post(inputs["chunk"]), torch.tensor(theirs["post"]), rtol=0, atol=1e-6)
    ours_user = user({"observation.state": inputs["pos"]})["observation.state"]
    torch.testing.assert_close(ours_user, torch.tensor(theirs["user"]), rtol=0, atol=1e-6)
