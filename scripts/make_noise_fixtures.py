"""Write tests/fixtures/policies/diffusion_pusht/noise.safetensors: what LeRobot 0.6.1's Diffusion
Policy does with a `noise` argument (run once, by hand).

LeRobot's `DiffusionPolicy.select_action(batch, noise=None)` and
`predict_action_chunk(batch, noise=None)` take the initial sample of the reverse diffusion,
shape (batch, horizon, action_dim). This script loads the committed `diffusion_pusht`
checkpoint (scripts/make_pusht_aloha_fixtures.py made it; its backbone is rebuilt as the tests
rebuild it) with LeRobot's own `from_pretrained` and processors, runs the PushT inputs of
tests/policies/seeded_inputs.py through LeRobot's preprocessor, and records the policy's
(normalised) actions for fixed noise:

- `ddim.*`: loaded with `noise_scheduler_type="DDIM"` and 10 steps, so that the actions are a
  function of the inputs and the noise alone: `select_action` over ten steps (two chunks, each
  from `noise`), `predict_action_chunk` on a two-step history, and `predict_action_chunk` after
  three `select_action` calls (LeRobot then reads its observation queues, not the batch);
- `ddpm.select_action.row_0`: the checkpoint as saved (DDPM, 100 steps), one env, after
  `torch.manual_seed(99)`: the later DDPM steps draw their noise from the global generator.

SmolVLA's and π's `noise` are recorded by scripts/make_smolvla_fixtures.py and
scripts/make_pi_fixtures.py. Needs the scratch environment of scripts/make_pusht_aloha_fixtures.py
(`lerobot[diffusion]==0.6.1`, outside this repository, never a dependency):

    /tmp/lerobot-ref/bin/python scripts/make_noise_fixtures.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[1]
CHECKPOINT = REPO / "tests" / "fixtures" / "policies" / "diffusion_pusht"
OUT = CHECKPOINT / "noise.safetensors"
NOISE_SEED, EPISODE_SEED = 31, 99
N_STEPS = 10  # n_action_steps=8: the second chunk starts at step 8
DDIM = {"noise_scheduler_type": "DDIM", "num_inference_steps": 10}


def load_sibling(name: str):
    """Import a helper module of this repository by path (its package is also called lerobot)."""
    path = REPO / name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SHARED = load_sibling("scripts/make_policy_fixtures.py")
INPUTS = load_sibling("tests/policies/seeded_inputs.py")


def rebuild_checkpoint(destination: Path) -> Path:
    """The committed fixture as the directory LeRobot saved: its files, and model.safetensors
    with the synthetic backbone put back (checked against the digest LeRobot's file had)."""
    for path in CHECKPOINT.iterdir():
        if path.name == "config.json" or path.name.startswith("policy_"):
            shutil.copy(path, destination / path.name)
    manifest = json.loads((CHECKPOINT / "backbone.json").read_text())
    backbone = {
        key: SHARED.SYNTHETIC.synthetic_tensor(key, spec["shape"], getattr(torch, spec["dtype"]))
        for key, spec in manifest["tensors"].items()
    }
    if SHARED.SYNTHETIC.backbone_digest(backbone) != manifest["sha256"]:
        sys.exit("the rebuilt backbone differs from the one LeRobot saved")
    state = load_file(CHECKPOINT / "model_without_backbone.safetensors") | backbone
    save_file(state, destination / "model.safetensors", metadata={"format": "pt"})
    return destination


def load_policy(directory: Path, **overrides):
    """LeRobot's policy and processors from `directory`, config fields set to `overrides`."""
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
    from lerobot.policies.factory import make_pre_post_processors

    config = PreTrainedConfig.from_pretrained(directory)
    for field, value in overrides.items():
        setattr(config, field, value)
    policy = DiffusionPolicy.from_pretrained(directory, config=config)
    preprocessor, _ = make_pre_post_processors(config, pretrained_path=str(directory))
    return policy, preprocessor


def with_stacked_cameras(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The batch with LeRobot's `observation.images` key, which its predict_action_chunk reads
    from its queues once select_action has filled them."""
    return batch | {"observation.images": torch.stack([batch["observation.image"]], dim=-4)}


def record_ddim(directory: Path, steps: list[dict], noise: torch.Tensor) -> dict[str, torch.Tensor]:
    policy, pre = load_policy(directory, **DDIM)
    normalized = [SHARED.step_inputs(pre, s) for s in steps]
    history = {k: torch.stack([normalized[0][k], normalized[1][k]], dim=1) for k in normalized[0]}
    tensors = {}
    with torch.no_grad():
        policy.reset()
        actions = [policy.select_action(dict(n), noise=noise.clone()) for n in normalized]
        tensors["ddim.select_action"] = torch.stack(actions)
        policy.reset()
        tensors["ddim.chunk"] = policy.predict_action_chunk(dict(history), noise=noise.clone())
        policy.reset()
        for n in normalized[:3]:
            policy.select_action(dict(n), noise=noise.clone())
        tensors["ddim.chunk_after_select_action"] = policy.predict_action_chunk(
            with_stacked_cameras(normalized[2]), noise=noise.clone()
        )
    return tensors


def record_ddpm_row(directory: Path, steps: list[dict], noise: torch.Tensor) -> dict[str, torch.Tensor]:
    policy, pre = load_policy(directory)
    first_row = [{k: v[:1] for k, v in SHARED.step_inputs(pre, s).items()} for s in steps]
    with torch.no_grad():
        policy.reset()
        torch.manual_seed(EPISODE_SEED)
        actions = [policy.select_action(dict(n), noise=noise[:1].clone()) for n in first_row]
    return {"ddpm.select_action.row_0": torch.stack(actions)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    import lerobot

    if Path(lerobot.__file__).resolve().is_relative_to(REPO):
        sys.exit("run this with the scratch environment's python, not this repository's")
    print(f"lerobot {lerobot.__version__} from {Path(lerobot.__file__).parent}")
    steps = INPUTS.pusht_steps(n_steps=N_STEPS)
    config = json.loads((CHECKPOINT / "config.json").read_text())
    shape = (INPUTS.BATCH, config["horizon"], *config["output_features"]["action"]["shape"])
    noise = INPUTS.noise(shape, seed=NOISE_SEED)
    tensors = {"noise": noise, "inputs_sha256": INPUTS.steps_digest(steps)}
    with tempfile.TemporaryDirectory() as scratch:
        directory = rebuild_checkpoint(Path(scratch))
        tensors |= record_ddim(directory, steps, noise)
        tensors |= record_ddpm_row(directory, steps, noise)
    meta = {"n_steps": N_STEPS, "noise_seed": NOISE_SEED, "episode_seed": EPISODE_SEED, "ddim": DDIM}
    flat = {k: v.detach().cpu().clone().contiguous() for k, v in tensors.items()}
    save_file(flat, OUT, metadata={"info": json.dumps(meta)})
    print(f"{OUT.stat().st_size:>10,d}  {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
