"""Write the LeRobot reference checkpoints under tests/fixtures/policies/ (run once, by hand).

This script needs the PyPI package `lerobot` (0.6.x, Python >= 3.12) in a scratch virtual
environment outside this repository; it is never a dependency of this project:

    uv venv -p 3.12 /tmp/lerobot-ref
    uv pip install -p /tmp/lerobot-ref/bin/python "lerobot[diffusion]==0.6.1"
    /tmp/lerobot-ref/bin/python scripts/make_policy_fixtures.py

For each fixture it builds a small randomly initialised policy with LeRobot's own classes,
saves it with LeRobot's own `save_pretrained` (config.json, model.safetensors and the
pre/post-processor files with normalisation statistics), then runs LeRobot's processors and
policy on a fixed batch and stores inputs and outputs in `expected.safetensors`.

ResNet backbones are too big to commit, so before saving, every backbone tensor is replaced by
deterministic values from tests/policies/synthetic_backbone.py; the committed
`model_without_backbone.safetensors` holds the rest, and `backbone.json` the names, shapes and
digest of the backbone that LeRobot saved. The tests rebuild model.safetensors and check that digest.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "policies"
IMAGE = (3, 96, 96)
STATE_DIM = 4
ENV_STATE_DIM = 39
ACTION_DIM = 4
BATCH = 2


def load_synthetic_backbone():
    """Import the shared generator by path: this repository's own package is also called lerobot."""
    path = REPO / "tests" / "policies" / "synthetic_backbone.py"
    spec = importlib.util.spec_from_file_location("synthetic_backbone", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SYNTHETIC = load_synthetic_backbone()


def features(image_keys: list[str], image_shape: tuple[int, ...], env_state: bool = False):
    from lerobot.configs import FeatureType, PolicyFeature

    inputs = {key: PolicyFeature(FeatureType.VISUAL, image_shape) for key in image_keys}
    inputs["observation.state"] = PolicyFeature(FeatureType.STATE, (STATE_DIM,))
    if env_state:
        inputs["observation.environment_state"] = PolicyFeature(FeatureType.ENV, (ENV_STATE_DIM,))
    outputs = {"action": PolicyFeature(FeatureType.ACTION, (ACTION_DIM,))}
    return inputs, outputs


def dataset_stats(image_keys: list[str], env_state: bool = False) -> dict[str, dict[str, torch.Tensor]]:
    """Plausible dataset statistics; every feature gets mean, std, min and max."""
    g = torch.Generator().manual_seed(7)

    def vector(dim: int, image: bool = False) -> dict[str, torch.Tensor]:
        shape = (dim, 1, 1) if image else (dim,)
        mean = torch.rand(shape, generator=g) * 0.4 + (0.3 if image else -0.2)
        std = torch.rand(shape, generator=g) * 0.2 + (0.15 if image else 0.3)
        low = mean - 2.5 * std
        high = mean + 2.0 * std
        return {"mean": mean, "std": std, "min": low, "max": high}

    stats = {key: vector(3, image=True) for key in image_keys}
    stats["observation.state"] = vector(STATE_DIM)
    if env_state:
        stats["observation.environment_state"] = vector(ENV_STATE_DIM)
    stats["action"] = vector(ACTION_DIM)
    return stats


def replace_backbone(policy: torch.nn.Module) -> None:
    synthetic = SYNTHETIC.fill_backbones(policy.state_dict())
    missing, unexpected = policy.load_state_dict(synthetic, strict=False)
    assert not unexpected, unexpected
    assert synthetic, "no backbone tensors found"


def raw_batch(image_keys: list[str], image_shape, env_state: bool, n_steps: int, seed: int):
    """Un-normalised observations as the env side produces them: uint8 pixels, float states."""
    g = torch.Generator().manual_seed(seed)
    steps = []
    for _ in range(n_steps):
        step = {
            key: torch.randint(0, 256, (BATCH, *image_shape), generator=g, dtype=torch.uint8)
            for key in image_keys
        }
        step["observation.state"] = torch.randn((BATCH, STATE_DIM), generator=g) * 0.4
        if env_state:
            step["observation.environment_state"] = torch.randn((BATCH, ENV_STATE_DIM), generator=g)
        steps.append(step)
    return steps


def save_checkpoint(policy, preprocessor, postprocessor, directory: Path) -> None:
    """LeRobot's own writers; then split the backbone off model.safetensors."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    policy.save_pretrained(directory)
    preprocessor.save_pretrained(directory)
    postprocessor.save_pretrained(directory)
    model_path = directory / "model.safetensors"
    state = load_file(model_path)
    manifest = {
        "sha256": SYNTHETIC.backbone_digest(state),
        "tensors": {
            k: {"shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")}
            for k, v in sorted(state.items())
            if SYNTHETIC.is_backbone_key(k)
        },
    }
    (directory / "backbone.json").write_text(json.dumps(manifest, indent=1) + "\n")
    rest = {k: v for k, v in state.items() if not SYNTHETIC.is_backbone_key(k)}
    save_file(rest, directory / "model_without_backbone.safetensors", metadata={"format": "pt"})
    model_path.unlink()
    readme = directory / "README.md"
    if readme.exists():
        readme.unlink()


def step_inputs(preprocessor, step: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """LeRobot's preprocessor on one step; pixels become float in [0, 1] first, as in its eval."""
    batch = {k: v.float().div(255.0) if v.dtype == torch.uint8 else v for k, v in step.items()}
    batch["task"] = [""] * BATCH
    out = preprocessor(batch)
    return {k: v for k, v in out.items() if isinstance(v, torch.Tensor)}


def record_inputs(tensors: dict, steps: list[dict], normalized: list[dict]) -> None:
    """Every raw step (the tests feed them through our processors) and step 0 as normalised."""
    for i, raw in enumerate(steps):
        for key, value in raw.items():
            tensors[f"raw.{i}.{key}"] = value
    for key, value in normalized[0].items():
        tensors[f"normalized.0.{key}"] = value


def record(directory: Path, tensors: dict[str, torch.Tensor], meta: dict) -> None:
    flat = {k: v.detach().cpu().clone().contiguous() for k, v in tensors.items()}
    save_file(flat, directory / "expected.safetensors", metadata={"info": json.dumps(meta)})


def make_act() -> None:
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    image_keys = ["observation.image"]
    inputs, outputs = features(image_keys, IMAGE)
    config = ACTConfig(
        input_features=inputs,
        output_features=outputs,
        device="cpu",
        pretrained_backbone_weights=None,
        chunk_size=10,
        n_action_steps=5,
        dim_model=32,
        n_heads=2,
        dim_feedforward=64,
        n_encoder_layers=2,
        n_decoder_layers=1,
        n_vae_encoder_layers=1,
        latent_dim=8,
    )
    torch.manual_seed(0)
    policy = ACTPolicy(config)
    replace_backbone(policy)
    policy.eval()
    pre, post = make_pre_post_processors(config, dataset_stats=dataset_stats(image_keys))
    directory = OUT / "act"
    save_checkpoint(policy, pre, post, directory)

    steps = raw_batch(image_keys, IMAGE, False, n_steps=7, seed=11)
    tensors: dict[str, torch.Tensor] = {}
    normalized = [step_inputs(pre, s) for s in steps]
    record_inputs(tensors, steps, normalized)
    with torch.no_grad():
        chunk = policy.predict_action_chunk(dict(normalized[0]))
        tensors["chunk.normalized"] = chunk
        tensors["chunk.unnormalized"] = post(chunk)
        policy.reset()
        tensors["select_action"] = torch.stack([post(policy.select_action(dict(n))) for n in normalized])
        ensembling = ACTPolicy(dataclasses.replace(config, temporal_ensemble_coeff=0.01, n_action_steps=1))
        ensembling.load_state_dict(policy.state_dict())
        ensembling.eval()
        ensembling.reset()
        tensors["temporal_ensemble"] = torch.stack(
            [post(ensembling.select_action(dict(n))) for n in normalized]
        )
    record(directory, tensors, {"n_steps": len(steps), "temporal_ensemble_coeff": 0.01})


def make_diffusion(name: str, **overrides) -> None:
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
    from lerobot.policies.factory import make_pre_post_processors

    image_keys = overrides.pop("image_keys", ["observation.image"])
    image_shape = overrides.pop("image_shape", IMAGE)
    env_state = overrides.pop("env_state", False)
    inputs, outputs = features(image_keys, image_shape, env_state)
    settings = {
        "n_obs_steps": 2,
        "horizon": 16,
        "n_action_steps": 8,
        "pretrained_backbone_weights": None,
        "down_dims": (16, 32),
        "kernel_size": 3,
        "n_groups": 4,
        "diffusion_step_embed_dim": 16,
        "spatial_softmax_num_keypoints": 4,
        **overrides,
    }
    config = DiffusionConfig(input_features=inputs, output_features=outputs, device="cpu", **settings)
    torch.manual_seed(0)
    policy = DiffusionPolicy(config)
    replace_backbone(policy)
    policy.eval()
    pre, post = make_pre_post_processors(config, dataset_stats=dataset_stats(image_keys, env_state))
    directory = OUT / name
    save_checkpoint(policy, pre, post, directory)

    n_steps = 10
    steps = raw_batch(image_keys, image_shape, env_state, n_steps=n_steps, seed=13)
    normalized = [step_inputs(pre, s) for s in steps]
    tensors: dict[str, torch.Tensor] = {}
    record_inputs(tensors, steps, normalized)
    horizon_noise = torch.randn(
        (BATCH, config.horizon, ACTION_DIM), generator=torch.Generator().manual_seed(21)
    )
    tensors["noise"] = horizon_noise
    history = {key: torch.stack([normalized[0][key], normalized[1][key]], dim=1) for key in normalized[0]}
    with torch.no_grad():
        policy.reset()
        # The DDPM step draws its variance noise from torch's global generator.
        torch.manual_seed(1234)
        chunk = policy.predict_action_chunk(dict(history), noise=horizon_noise.clone())
        tensors["chunk.normalized"] = chunk
        tensors["chunk.unnormalized"] = post(chunk)
        # One env, seeded as an episode would be: everything random comes from seed 99.
        policy.reset()
        torch.manual_seed(99)
        single = [{k: v[:1] for k, v in n.items()} for n in normalized]
        tensors["select_action.single_row"] = torch.stack(
            [post(policy.select_action(dict(s))) for s in single]
        )
    record(directory, tensors, {"n_steps": n_steps, "chunk_seed": 1234, "episode_seed": 99})


def record_resnet50_names() -> None:
    """Names and shapes of torchvision's ResNet-50, to check our Bottleneck naming."""
    import torchvision

    model = torchvision.models.resnet50(weights=None)
    names = {k: list(v.shape) for k, v in model.state_dict().items()}
    (OUT / "resnet50_state_dict_shapes.json").write_text(json.dumps(names, indent=0) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    import lerobot

    print(f"lerobot {lerobot.__version__} from {Path(lerobot.__file__).parent}")
    if Path(lerobot.__file__).resolve().is_relative_to(REPO):
        sys.exit("run this with the scratch environment's python, not this repository's")
    OUT.mkdir(parents=True, exist_ok=True)
    make_act()
    make_diffusion("diffusion", crop_shape=(84, 84), use_group_norm=True)
    make_diffusion(
        "diffusion_ddim",
        image_keys=["observation.images.corner2", "observation.images.topview"],
        image_shape=(3, 64, 64),
        env_state=True,
        resize_shape=(48, 48),
        crop_ratio=0.875,
        noise_scheduler_type="DDIM",
        num_inference_steps=10,
        use_group_norm=False,
    )
    record_resnet50_names()
    for path in sorted(OUT.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size:>10,d}  {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
