"""Write tests/fixtures/training/<name>.safetensors: LeRobot 0.6.1's training preset at work.

Run once, by hand, with LeRobot 0.6.1 in a scratch virtual environment outside this
repository (never a dependency of this project):

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python -c <(echo mujoco==3.3.0) "lerobot[metaworld,diffusion]==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_training_fixtures.py

For ACT and Diffusion it loads the reference checkpoint of tests/fixtures/policies/ with
LeRobot's classes, builds LeRobot's optimizer and scheduler from the policy's preset (with a
short warm-up, so that a few steps show the schedule), and records:
- `lr.<step>.<group>`: every parameter group's learning rate at steps 0..N of an N-step run;
- `loss.<i>`: the loss of each of 3 training steps on one fixed batch (seed 0);
- the parameters after those steps: every tensor outside the ResNet backbone whole, and the
  L2 norm of each backbone tensor's change (the backbone is 11 M parameters, too big to keep).
The batch is tests/training/fixture_batches.py's, built again by the test.
tests/training/test_presets.py runs our training step on the same checkpoint and batch.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
POLICIES = REPO / "tests" / "fixtures" / "policies"
OUT = REPO / "tests" / "fixtures" / "training"
N_LR_STEPS = 10
N_TRAIN_STEPS = 3
WARMUP_STEPS = 3
BACKBONE = "backbone"


def load_test_module(relative: str):
    """A module of this repository's tests, imported by path: its own package is also called
    lerobot, so the repository cannot be on sys.path beside LeRobot."""
    spec = importlib.util.spec_from_file_location(Path(relative).stem, REPO / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FIXTURE_BATCHES = load_test_module("tests/training/fixture_batches.py")


def materialize(name: str, destination: Path) -> Path:
    """The committed fixture as a full checkpoint (its backbone regenerated)."""
    synthetic = load_test_module("tests/policies/synthetic_backbone.py")
    source = POLICIES / name
    destination.mkdir(parents=True)
    for path in source.iterdir():
        if path.name not in {"model_without_backbone.safetensors", "backbone.json", "expected.safetensors"}:
            shutil.copy(path, destination / path.name)
    state = load_file(source / "model_without_backbone.safetensors")
    manifest = json.loads((source / "backbone.json").read_text())
    for key, spec in manifest["tensors"].items():
        state[key] = synthetic.synthetic_tensor(key, spec["shape"], getattr(torch, spec["dtype"]))
    save_file(state, destination / "model.safetensors", metadata={"format": "pt"})
    return destination


def training_batch(name: str, config) -> dict[str, torch.Tensor]:
    """tests/training/fixture_batches.py's batch for this policy's config."""
    expected = load_file(POLICIES / name / "expected.safetensors")
    action_dim = config.output_features["action"].shape[0]
    if name == "act":
        return FIXTURE_BATCHES.training_batch(expected, config.chunk_size, action_dim)
    return FIXTURE_BATCHES.training_batch(expected, config.horizon, action_dim, history=config.n_obs_steps)


def record(name: str) -> None:
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = materialize(name, Path(tmp) / name)
        config = PreTrainedConfig.from_pretrained(checkpoint)
        config.device = "cpu"
        if name == "diffusion":
            config.scheduler_warmup_steps = WARMUP_STEPS
        policy_class = get_policy_class(name)
        tensors: dict[str, torch.Tensor] = {}

        policy = policy_class.from_pretrained(checkpoint, config=config)
        optimizer_cfg, scheduler_cfg = config.get_optimizer_preset(), config.get_scheduler_preset()
        optimizer = optimizer_cfg.build(policy.get_optim_params())
        scheduler = scheduler_cfg.build(optimizer, N_LR_STEPS) if scheduler_cfg is not None else None
        for step in range(N_LR_STEPS + 1):
            for group, rate in enumerate(g["lr"] for g in optimizer.param_groups):
                tensors[f"lr.{step}.{group}"] = torch.tensor(rate, dtype=torch.float64)
            if scheduler is not None:
                scheduler.step()

        policy = policy_class.from_pretrained(checkpoint, config=config)
        policy.train()
        before = {k: v.detach().clone() for k, v in policy.state_dict().items()}
        optimizer = optimizer_cfg.build(policy.get_optim_params())
        scheduler = scheduler_cfg.build(optimizer, N_TRAIN_STEPS) if scheduler_cfg is not None else None
        batch = training_batch(name, config)
        torch.manual_seed(0)
        for step in range(N_TRAIN_STEPS):
            loss, _ = policy.forward(dict(batch))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), optimizer_cfg.grad_clip_norm)
            optimizer.step()
            optimizer.zero_grad()
            if scheduler is not None:
                scheduler.step()
            tensors[f"loss.{step}"] = loss.detach().to(torch.float64)
        for key, value in policy.state_dict().items():
            if BACKBONE in key:
                delta = (value.to(torch.float64) - before[key].to(torch.float64)).norm()
                tensors[f"backbone_delta_norm.{key}"] = delta
            else:
                tensors[f"param.{key}"] = value.detach().clone()
    OUT.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, OUT / f"{name}.safetensors")
    print(f"{name}: losses {[round(float(tensors[f'loss.{i}']), 6) for i in range(N_TRAIN_STEPS)]}")


def main() -> int:
    torch.set_num_threads(1)
    for name in ("act", "diffusion"):
        record(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
