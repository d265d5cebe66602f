"""Write tests/fixtures/processor/: what LeRobot 0.6.1's own processor pipelines compute, for
tests/processor/test_lerobot_pipelines.py to hold ours to (run once, by hand, from the repo root).

It runs in a scratch environment with LeRobot 0.6.1 and transformers (for the tokenizer steps),
never a dependency of this project:

    uv venv -p 3.12 /tmp/lr-tf
    uv pip install -p /tmp/lr-tf/bin/python -c requirements/lerobot-ref.txt \
        "lerobot[diffusion]==0.6.1" transformers==5.5.4 tokenizers==0.22.2
    /tmp/lr-tf/bin/python scripts/make_processor_fixtures.py

Per policy type (the pipelines LeRobot saved in tests/fixtures/policies/<type>/, loaded with
`PolicyProcessorPipeline.from_pretrained`): a seeded batch (the config's inputs, instructions,
an action) through the preprocessor and a seeded action chunk through the postprocessor, in
`<type>.safetensors` (`in.`/`out.` tensors; instructions in the metadata). For LIBERO: LeRobot's
env preprocessor (`make_env_pre_post_processors(LiberoEnv(), ...)`) saved to `libero/`, with a
raw observation as LeRobot's LIBERO env gives it. For a user's own step
(tests/processor/user_steps.py, registered in LeRobot here): a pipeline holding it saved by
LeRobot to `user_step/`, with its input and output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "processor"
POLICIES = REPO / "tests" / "fixtures" / "policies"
TYPES = ("act", "diffusion", "smolvla", "pi0", "pi05")
TASKS = ["pick up the red block", "open the drawer"]


def seeded_batch(config: dict, seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    batch = {}
    for key, feature in config["input_features"].items():
        if "empty_camera" in key:
            continue
        shape = (2, *feature["shape"])
        batch[key] = (
            torch.rand(shape, generator=generator)
            if feature["type"] == "VISUAL"
            else torch.randn(shape, generator=generator)
        )
    action_dim = config["output_features"]["action"]["shape"][0]
    batch["action"] = torch.randn((2, action_dim), generator=generator)
    return batch


def policy_fixture(policy_type: str) -> None:
    from lerobot.processor import PolicyProcessorPipeline
    from lerobot.processor.converters import policy_action_to_transition, transition_to_policy_action

    directory = POLICIES / policy_type
    config = json.loads((directory / "config.json").read_text())
    pre = PolicyProcessorPipeline.from_pretrained(directory, config_filename="policy_preprocessor.json")
    post = PolicyProcessorPipeline.from_pretrained(
        directory,
        config_filename="policy_postprocessor.json",
        to_transition=policy_action_to_transition,
        to_output=transition_to_policy_action,
    )
    batch = seeded_batch(config, seed=len(policy_type))
    out = pre({**batch, "task": list(TASKS)})
    chunk = torch.randn(
        (2, 3, config["output_features"]["action"]["shape"][0]), generator=torch.Generator().manual_seed(9)
    )
    tensors = {f"in.{k}": v for k, v in batch.items()}
    tensors.update({f"out.{k}": v.clone() for k, v in out.items() if isinstance(v, torch.Tensor)})
    tensors["in.chunk"] = chunk
    tensors["out.chunk"] = post(chunk)
    metadata = {
        "tasks": json.dumps(TASKS),
        "out.task": json.dumps(out.get("task")),
        "keys": json.dumps(sorted(out)),
    }
    save_file(tensors, OUT / f"{policy_type}.safetensors", metadata=metadata)


def libero_fixture() -> None:
    from lerobot.envs.configs import LiberoEnv
    from lerobot.envs.factory import make_env_pre_post_processors

    pre, _ = make_env_pre_post_processors(env_cfg=LiberoEnv(), policy_cfg=None)
    pre.save_pretrained(OUT / "libero", config_filename="env_preprocessor.json")
    generator = torch.Generator().manual_seed(3)
    quat = torch.randn((2, 4), generator=generator)
    quat = quat / quat.norm(dim=1, keepdim=True)
    raw = {
        "observation.images.image": torch.rand((2, 3, 8, 8), generator=generator),
        "observation.images.image2": torch.rand((2, 3, 8, 8), generator=generator),
        "observation.robot_state": {
            "eef": {"pos": torch.randn((2, 3), generator=generator), "quat": quat},
            "gripper": {"qpos": torch.randn((2, 2), generator=generator)},
        },
    }
    out = pre(raw)
    tensors = {
        "in.observation.images.image": raw["observation.images.image"],
        "in.observation.images.image2": raw["observation.images.image2"],
        "in.eef.pos": raw["observation.robot_state"]["eef"]["pos"],
        "in.eef.quat": quat,
        "in.gripper.qpos": raw["observation.robot_state"]["gripper"]["qpos"],
    }
    tensors.update({f"out.{k}": v.clone() for k, v in out.items() if isinstance(v, torch.Tensor)})
    save_file(tensors, OUT / "libero" / "expected.safetensors", metadata={"keys": json.dumps(sorted(out))})


def user_step_fixture() -> None:
    sys.path.insert(0, str(REPO))
    from tests.processor.user_steps import AddOffsetStep

    from lerobot.processor import DataProcessorPipeline, RenameObservationsProcessorStep

    pipeline = DataProcessorPipeline(
        steps=[
            RenameObservationsProcessorStep(rename_map={"observation.pos": "observation.state"}),
            AddOffsetStep(scale=0.5, offset=torch.tensor([1.0, -2.0, 4.0])),
        ],
        name="user_pipeline",
    )
    pipeline.save_pretrained(OUT / "user_step")
    state = torch.randn((2, 3), generator=torch.Generator().manual_seed(4))
    out = pipeline({"observation.pos": state})
    save_file({"in": state, "out": out["observation.state"]}, OUT / "user_step" / "expected.safetensors")


def main() -> None:
    # LeRobot registers π0's and π0.5's own steps when their processor modules are imported.
    import lerobot.policies.pi0.processor_pi0  # noqa: F401
    import lerobot.policies.pi05.processor_pi05  # noqa: F401

    OUT.mkdir(parents=True, exist_ok=True)
    for policy_type in TYPES:
        policy_fixture(policy_type)
    libero_fixture()
    user_step_fixture()


if __name__ == "__main__":
    main()
