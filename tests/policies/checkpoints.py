"""Turn the committed fixtures into complete LeRobot checkpoint directories.

tests/fixtures/policies/<name>/ holds what LeRobot 0.6.1 saved for a small random policy
(scripts/make_policy_fixtures.py), minus its ResNet weights: those are regenerated here from
tests/policies/synthetic_backbone.py and checked against the digest LeRobot's file had, so
the rebuilt model.safetensors holds exactly the tensors LeRobot saved and ran.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.policies.factory import make_policy, make_pre_post_processors
from lerobot.policies.pretrained import PreTrainedPolicy
from tests.policies.synthetic_backbone import backbone_digest, synthetic_tensor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "policies"
NAMES = ("act", "diffusion", "diffusion_ddim")
KEPT_ASIDE = {
    "model_without_backbone.safetensors",
    "backbone.json",
    "expected.safetensors",
    "noise.safetensors",
}
# Env flags under which each fixture's inputs exist (Meta-World shapes, small images).
ENV_FLAGS = {
    "act": ("--env.observation_height=96", "--env.observation_width=96"),
    "diffusion": ("--env.observation_height=96", "--env.observation_width=96"),
    "diffusion_ddim": (
        '--env.camera_names=["corner2", "topview"]',
        "--env.observation_height=64",
        "--env.observation_width=64",
    ),
}


@dataclass
class Loaded:
    """A checkpoint as lerobot-eval builds it, up to the rollout."""

    cfg: EvalPipelineConfig
    policy: PreTrainedPolicy
    preprocessor: Any
    postprocessor: Any

    def act(self, raw_batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """One rollout step: preprocess, select, postprocess."""
        return self.postprocessor(self.policy.select_action(self.preprocessor(raw_batch)))


def load(path: Path | str, *flags: str, env_flags: Sequence[str] = ENV_FLAGS["act"]) -> Loaded:
    argv = ["--env.type=metaworld", *env_flags, f"--policy.path={path}", "--policy.device=cpu", *flags]
    cfg = parse_config(EvalPipelineConfig, argv)
    return Loaded(cfg, make_policy(cfg.policy, env_cfg=cfg.env), *make_pre_post_processors(cfg.policy))


def materialize(name: str, destination: Path) -> Path:
    """Write fixture `name` as a full checkpoint directory at `destination`."""
    source = FIXTURES / name
    destination.mkdir(parents=True, exist_ok=True)
    for path in source.iterdir():
        if path.name not in KEPT_ASIDE:
            shutil.copy(path, destination / path.name)
    state = load_file(source / "model_without_backbone.safetensors")
    state.update(regenerate_backbone(source))
    save_file(state, destination / "model.safetensors", metadata={"format": "pt"})
    return destination


def regenerate_backbone(source: Path) -> dict[str, torch.Tensor]:
    manifest = json.loads((source / "backbone.json").read_text())
    tensors = {
        key: synthetic_tensor(key, spec["shape"], getattr(torch, spec["dtype"]))
        for key, spec in manifest["tensors"].items()
    }
    if backbone_digest(tensors) != manifest["sha256"]:
        raise AssertionError(f"regenerated backbone of {source.name} differs from the one LeRobot saved")
    return tensors


def expected(name: str) -> dict[str, torch.Tensor]:
    """The recorded inputs and LeRobot's outputs (see the fixture script for the keys)."""
    return load_file(FIXTURES / name / "expected.safetensors")


def raw_step(
    recorded: dict[str, torch.Tensor], step: int, rows: slice = slice(None)
) -> dict[str, torch.Tensor]:
    """Step `step` of the recorded env-side batch; pixels as float in [0, 1], as the rollout sends."""
    prefix = f"raw.{step}."
    batch = {}
    for key, value in recorded.items():
        if key.startswith(prefix):
            value = value[rows]
            batch[key.removeprefix(prefix)] = (
                value.float().div(255.0) if value.dtype == torch.uint8 else value
            )
    return batch


def write_legacy_layout(checkpoint: Path, destination: Path) -> Path:
    """The same checkpoint in LeRobot's pre-0.4 layout: statistics as buffers in model.safetensors.

    Older LeRobot policies held `normalize_inputs`, `normalize_targets` and `unnormalize_outputs`
    modules whose buffers are named `buffer_<feature with dots as underscores>.<stat>`, with
    image statistics of shape (C, 1, 1), and there were no processor files.
    """
    destination.mkdir(parents=True, exist_ok=True)
    shutil.copy(checkpoint / "config.json", destination / "config.json")
    config = json.loads((checkpoint / "config.json").read_text())
    stats = _flat_stats(checkpoint / "policy_preprocessor_step_3_normalizer_processor.safetensors")
    modes = config["normalization_mapping"]
    state = load_file(checkpoint / "model.safetensors")
    groups = {
        "normalize_inputs": config["input_features"],
        "normalize_targets": config["output_features"],
        "unnormalize_outputs": config["output_features"],
    }
    for module, features in groups.items():
        for key, feature in features.items():
            mode = modes.get(feature["type"], "IDENTITY")
            for stat in {"MEAN_STD": ("mean", "std"), "MIN_MAX": ("min", "max")}.get(mode, ()):
                state[f"{module}.buffer_{key.replace('.', '_')}.{stat}"] = stats[key][stat].clone()
    save_file(state, destination / "model.safetensors", metadata={"format": "pt"})
    return destination


def _flat_stats(path: Path) -> dict[str, dict[str, torch.Tensor]]:
    stats: dict[str, dict[str, torch.Tensor]] = {}
    for flat_key, tensor in load_file(path).items():
        key, stat = flat_key.rsplit(".", 1)
        stats.setdefault(key, {})[stat] = tensor
    return stats
