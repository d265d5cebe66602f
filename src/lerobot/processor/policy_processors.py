"""The pre- and post-processors of a checkpoint policy: blank cameras and (un)normalisation.

They are built from the files saved next to the checkpoint, in either layout:
- current: `policy_preprocessor.json` / `policy_postprocessor.json`, whose normalizer steps
  point at `.safetensors` files of flat statistics (`observation.state.mean`, ...);
- older: statistics as buffers inside model.safetensors (`normalize_inputs.buffer_observation_state.mean`,
  `unnormalize_outputs.buffer_action.std`, ...), with the modes from config.json.

Of the saved pipeline steps, renaming is done by the rollout (`--rename_map`), batching and
device placement need no step here, the normalizers are rebuilt, and so are the instruction
steps of language-conditioned policies (newline, tokenizer: see lerobot.processor.language);
any other step means a policy this build cannot evaluate faithfully, and is refused.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file
from torch import Tensor

from lerobot.configs.checkpoint import (
    LEGACY_NORM_PREFIXES,
    POSTPROCESSOR_FILE,
    PREPROCESSOR_FILE,
    WEIGHTS_FILE,
    CheckpointError,
)
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.processor.language import TASK_STEP_NAMES, TaskStepError, task_step_from_json
from lerobot.processor.normalize import Normalizer

logger = logging.getLogger(__name__)

PASS_THROUGH_STEPS = {"rename_observations_processor", "to_batch_processor", "device_processor"}


class PolicyPreprocessor:
    """Adds blank frames for missing cameras, runs the instruction steps (if any), then
    normalises the observation features."""

    def __init__(
        self,
        normalizer: Normalizer,
        image_features: Mapping[str, PolicyFeature],
        empty_cameras: int,
        task_steps: Sequence[Callable[[dict[str, Any]], dict[str, Any]]] = (),
    ):
        self.normalizer = normalizer
        self.image_features = dict(image_features)
        self.empty_cameras = empty_cameras
        self.task_steps = list(task_steps)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        batch = self.add_blank_cameras(batch)
        for step in self.task_steps:
            batch = step(batch)
        return self.normalizer.normalize(batch)

    def add_blank_cameras(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """Black frames (0 in [0, 1] pixel space) for up to `empty_cameras` missing cameras.

        A blank frame takes the size of the cameras present, so that policies that stack
        cameras (Diffusion Policy) can; without any camera, the size the policy was trained on.
        """
        missing = [key for key in self.image_features if key not in batch]
        if not missing:
            return dict(batch)
        if len(missing) > self.empty_cameras:
            raise ValueError(
                f"the batch lacks cameras {', '.join(missing)}; --policy.empty_cameras={self.empty_cameras} "
                "allows fewer blank ones"
            )
        reference = _reference_tensor(batch)
        out = dict(batch)
        for key in missing:
            channels, height, width = self.image_features[key].shape
            present = next((batch[k] for k in self.image_features if k in batch), None)
            if present is not None:
                height, width = present.shape[-2:]
            out[key] = torch.zeros(
                (reference.shape[0], channels, height, width), dtype=torch.float32, device=reference.device
            )
        return out


class PolicyPostprocessor:
    """Maps the policy's normalised actions back to the env's action scale."""

    def __init__(self, normalizer: Normalizer):
        self.normalizer = normalizer

    def __call__(self, action: Tensor) -> Tensor:
        return self.normalizer.unnormalize_action(action)


def make_pre_post_processors(
    policy_cfg: PreTrainedConfig, pretrained_path: str | Path | None = None
) -> tuple[PolicyPreprocessor | None, PolicyPostprocessor | None]:
    """The processors saved with a checkpoint (`pretrained_path`, default the config's);
    (None, None) for built-ins that need none."""
    if pretrained_path is None and isinstance(policy_cfg, CheckpointPolicyConfig):
        pretrained_path = policy_cfg.pretrained_path
    if not isinstance(policy_cfg, CheckpointPolicyConfig) or pretrained_path is None:
        return None, None
    directory = Path(pretrained_path)
    task_steps = []
    if (directory / PREPROCESSOR_FILE).is_file():
        inputs = read_pipeline_normalizer(directory, PREPROCESSOR_FILE, "normalizer_processor")
        outputs = read_pipeline_normalizer(directory, POSTPROCESSOR_FILE, "unnormalizer_processor")
        task_steps = read_task_steps(directory, PREPROCESSOR_FILE)
    else:
        inputs, outputs = read_legacy_normalizers(directory, policy_cfg)
    cameras = policy_cfg.image_features if policy_cfg.blank_cameras_in_preprocessor else {}
    pre = PolicyPreprocessor(inputs, cameras, policy_cfg.empty_cameras, task_steps)
    return pre, PolicyPostprocessor(outputs)


def read_task_steps(directory: Path, filename: str) -> list[Callable[[dict[str, Any]], dict[str, Any]]]:
    """The instruction steps of a saved pipeline, in their saved order."""
    steps = json.loads((directory / filename).read_text())["steps"]
    try:
        return [task_step_from_json(step) for step in steps if step.get("registry_name") in TASK_STEP_NAMES]
    except TaskStepError as exc:
        raise CheckpointError(f"--policy.path={directory}: {filename}: {exc}") from None


def read_pipeline_normalizer(directory: Path, filename: str, step_name: str) -> Normalizer:
    """The (un)normalizer step of a saved LeRobot processor pipeline, with its statistics."""
    path = directory / filename
    if not path.is_file():
        raise CheckpointError(f"--policy.path={directory}: {filename} is missing next to {PREPROCESSOR_FILE}")
    try:
        pipeline = json.loads(path.read_text())
        steps = pipeline["steps"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CheckpointError(
            f"--policy.path={directory}: {filename} is not a processor pipeline ({exc!r})"
        ) from None
    found = None
    for step in steps:
        name = step.get("registry_name") or step.get("class", "?")
        if name == step_name:
            found = step
        elif name not in PASS_THROUGH_STEPS | set(TASK_STEP_NAMES):
            runs = sorted(PASS_THROUGH_STEPS | set(TASK_STEP_NAMES) | {step_name})
            raise CheckpointError(
                f"--policy.path={directory}: {filename} has a step {name!r} this build does not run "
                f"(it runs {', '.join(runs)})"
            )
        _warn_on_dtype(step, filename)
    if found is None:
        raise CheckpointError(f"--policy.path={directory}: {filename} has no {step_name} step")
    return _normalizer_from_step(directory, filename, found)


def _normalizer_from_step(directory: Path, filename: str, step: Mapping[str, Any]) -> Normalizer:
    config = step.get("config", {})
    features = {
        key: PolicyFeature(FeatureType(ft["type"]), tuple(ft["shape"]))
        for key, ft in config.get("features", {}).items()
    }
    norm_map = {FeatureType(k): NormalizationMode(v) for k, v in config.get("norm_map", {}).items()}
    stats: dict[str, dict[str, Tensor]] = {}
    if step.get("state_file"):
        for flat_key, tensor in _read_state_file(directory, filename, step["state_file"]).items():
            key, stat = flat_key.rsplit(".", 1)
            stats.setdefault(key, {})[stat] = tensor
    only = config.get("normalize_observation_keys")
    try:
        return Normalizer(
            features, norm_map, stats, eps=config.get("eps", 1e-8), only_keys=set(only) if only else None
        )
    except ValueError as exc:
        raise CheckpointError(f"--policy.path={directory}: {filename}: {exc}") from None


def _read_state_file(directory: Path, filename: str, state_file: str) -> dict[str, Tensor]:
    """The statistics a pipeline step names; only a file inside the checkpoint directory is read."""
    where = f"--policy.path={directory}: {state_file} (named in {filename})"
    # Normalised, not resolved: a hub snapshot's files are symlinks into the cache's blobs.
    state_path = Path(os.path.normpath(directory / state_file))
    if not state_path.is_relative_to(Path(os.path.normpath(directory))):
        raise CheckpointError(f"{where} lies outside the checkpoint directory; refusing to read it")
    if not state_path.is_file():
        raise CheckpointError(f"{where} is missing")
    try:
        return load_file(state_path)
    except (SafetensorError, OSError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(f"{where} is not a readable safetensors file ({first_line})") from None


def read_legacy_normalizers(directory: Path, cfg: CheckpointPolicyConfig) -> tuple[Normalizer, Normalizer]:
    """Normalizers from the statistics buffers of an older model.safetensors."""
    buffers = _legacy_buffers(directory / WEIGHTS_FILE)
    if not buffers:
        raise CheckpointError(
            f"--policy.path={directory}: no {PREPROCESSOR_FILE} and no normalisation statistics in "
            f"{WEIGHTS_FILE}; the policy's inputs cannot be normalised"
        )
    features = {**cfg.input_features, **cfg.output_features}
    buffer_names = {"buffer_" + key.replace(".", "_"): key for key in features}
    by_module: dict[str, dict[str, dict[str, Tensor]]] = {}
    for name, tensor in buffers.items():
        module, buffer, stat = name.split(".", 2)
        if buffer in buffer_names:
            by_module.setdefault(module, {}).setdefault(buffer_names[buffer], {})[stat] = tensor
    norm_map = {FeatureType(k): NormalizationMode(v) for k, v in cfg.normalization_mapping.items()}
    try:
        inputs = Normalizer(cfg.input_features, norm_map, by_module.get("normalize_inputs", {}))
        outputs = Normalizer(cfg.output_features, norm_map, by_module.get("unnormalize_outputs", {}))
    except ValueError as exc:
        raise CheckpointError(f"--policy.path={directory}: {WEIGHTS_FILE}: {exc}") from None
    return inputs, outputs


def _legacy_buffers(path: Path) -> dict[str, Tensor]:
    with safe_open(path, framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys() if k.startswith(LEGACY_NORM_PREFIXES)}  # noqa: SIM118


def _warn_on_dtype(step: Mapping[str, Any], filename: str) -> None:
    dtype = step.get("config", {}).get("float_dtype")
    if step.get("registry_name") == "device_processor" and dtype not in (None, "float32"):
        logger.warning("%s asks for float_dtype=%s; inputs stay float32 here", filename, dtype)


def _reference_tensor(batch: Mapping[str, Any]) -> Tensor:
    for value in batch.values():
        if isinstance(value, Tensor) and value.ndim > 0:
            return value
    raise ValueError("the batch holds no tensor to size blank cameras from")
