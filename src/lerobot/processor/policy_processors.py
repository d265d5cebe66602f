"""The pre- and post-processors of a policy: renaming, blank cameras, (un)normalisation, devices.

They are built from the files saved next to the checkpoint, in either layout:
- current: `policy_preprocessor.json` / `policy_postprocessor.json`, whose normalizer steps
  point at `.safetensors` files of flat statistics (`observation.state.mean`, ...);
- older: statistics as buffers inside model.safetensors (`normalize_inputs.buffer_observation_state.mean`,
  `unnormalize_outputs.buffer_action.std`, ...), with the modes from config.json.

Of the saved pipeline steps, renaming is done by the rollout (`--rename_map`), batching and
device placement need no step here, the normalizers are rebuilt, and so are the instruction
steps of language-conditioned policies (newline, π0.5's state prompt, tokenizer: see
lerobot.processor.language); LeRobot's relative/absolute action steps pass when disabled (as
LeRobot 0.6.1 saves them for π0 and π0.5); any other step means a policy this build cannot
evaluate faithfully, and is refused.
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
from lerobot.processor.language import (
    TASK_STEP_NAMES,
    TaskStepError,
    split_at_normalizer,
    task_step_from_json,
)
from lerobot.processor.normalize import Normalizer
from lerobot.utils.device_utils import resolve_device

logger = logging.getLogger(__name__)

PASS_THROUGH_STEPS = {"rename_observations_processor", "to_batch_processor", "device_processor"}
DISABLED_STEPS = {"relative_actions_processor", "absolute_actions_processor"}
"""Steps that change nothing while their config says `"enabled": false`."""


class PolicyPreprocessor:
    """The policy batch on its way in: renamed keys, blank frames for missing cameras, normalised
    features, tensors on the policy's device.

    Every step is optional: a built-in policy's preprocessor (no statistics, no cameras to fill)
    only moves tensors to its device, which is what LeRobot's pipeline does for a policy without
    a normaliser, so code written against LeRobot can call it for any policy.
    """

    def __init__(
        self,
        normalizer: Normalizer | None = None,
        image_features: Mapping[str, PolicyFeature] | None = None,
        empty_cameras: int = 0,
        device: torch.device | str | None = None,
        rename_map: Mapping[str, str] | None = None,
        task_steps: Sequence[Callable[[dict[str, Any]], dict[str, Any]]] = (),
    ):
        self.normalizer = normalizer
        self.image_features = dict(image_features or {})
        self.empty_cameras = empty_cameras
        self.device = torch.device(device) if device is not None else None
        self.rename_map = dict(rename_map or {})
        self.task_steps = list(task_steps)
        """The instruction steps of language-conditioned policies (newline, tokenizer)."""

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """LeRobot's order: rename, blank cameras, instruction steps, device, normalise; or, when
        a step reads the normalised state (π0.5), normalise before it and move to the device last."""
        if self.rename_map:
            batch = {self.rename_map.get(key, key): value for key, value in batch.items()}
        batch = self.add_blank_cameras(batch)
        before, after = split_at_normalizer(self.task_steps)
        for step in before:
            batch = step(batch)
        if after:
            batch = self.normalize(batch)
            for step in after:
                batch = step(batch)
            return self.to_device(batch)
        return self.normalize(self.to_device(batch))

    def normalize(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self.normalizer.normalize(batch) if self.normalizer is not None else batch

    def to_device(self, batch: dict[str, Any]) -> dict[str, Any]:
        if self.device is None:
            return batch
        # Tensors already there are kept as they are (what `.to` returns), without its dispatch:
        # observation_to_batch builds them on the policy's device.
        return {
            k: v.to(self.device) if isinstance(v, Tensor) and v.device != self.device else v
            for k, v in batch.items()
        }

    def reset(self) -> None:
        """LeRobot's pipelines reset stateful steps between episodes; these steps keep no state."""

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
    """Maps the policy's normalised actions back to the env's action scale, on the CPU (where
    the env needs them; LeRobot's postprocessor ends on the CPU too)."""

    def __init__(self, normalizer: Normalizer | None = None, device: torch.device | str | None = "cpu"):
        self.normalizer = normalizer
        self.device = torch.device(device) if device is not None else None

    def __call__(self, action: Tensor) -> Tensor:
        if self.normalizer is not None:
            action = self.normalizer.unnormalize_action(action)
        return action.to(self.device) if self.device is not None and action.device != self.device else action

    def reset(self) -> None:
        """Nothing to forget between episodes (see PolicyPreprocessor.reset)."""


# The keyword arguments LeRobot's `make_pre_post_processors` takes (its ProcessorConfigKwargs).
PROCESSOR_KWARGS = frozenset(
    {
        "preprocessor_config_filename",
        "postprocessor_config_filename",
        "preprocessor_overrides",
        "postprocessor_overrides",
        "dataset_stats",
        "dataset_meta",
    }
)


def make_pre_post_processors(
    policy_cfg: PreTrainedConfig,
    pretrained_path: str | Path | None = None,
    pretrained_revision: str | None = None,
    **kwargs: Any,
) -> tuple[PolicyPreprocessor, PolicyPostprocessor]:
    """The policy's processors, with LeRobot's signature: from the checkpoint at
    `pretrained_path` (default: the config's), from `dataset_stats` for a fresh policy, or, for
    built-in policies that need none, processors that only place tensors.

    Of LeRobot's keyword arguments, `preprocessor_overrides` may set
    `{"device_processor": {"device": ...}}` and `{"rename_observations_processor":
    {"rename_map": {...}}}`; `*_config_filename` name other pipeline files in the checkpoint.
    `pretrained_revision` is accepted for the signature: a hub checkpoint is resolved to its
    local directory (at its revision) when its config is read.
    """
    unknown = sorted(set(kwargs) - PROCESSOR_KWARGS)
    if unknown:
        raise TypeError(f"make_pre_post_processors() got unexpected keyword arguments: {', '.join(unknown)}")
    pre_overrides = kwargs.get("preprocessor_overrides") or {}
    device = pre_overrides.get("device_processor", {}).get("device") or resolve_device(policy_cfg.device)
    rename_map = pre_overrides.get("rename_observations_processor", {}).get("rename_map")
    post_device = (
        (kwargs.get("postprocessor_overrides") or {}).get("device_processor", {}).get("device", "cpu")
    )
    inputs, outputs = _normalizers(policy_cfg, pretrained_path, kwargs)
    image_features = getattr(policy_cfg, "image_features", {})
    if not getattr(policy_cfg, "blank_cameras_in_preprocessor", True):
        image_features = {}  # the model masks its missing cameras itself (SmolVLA)
    empty_cameras = getattr(policy_cfg, "empty_cameras", 0)
    task_steps = _task_steps(policy_cfg, pretrained_path, kwargs)
    pre = PolicyPreprocessor(inputs, image_features, empty_cameras, device, rename_map, task_steps)
    return pre, PolicyPostprocessor(outputs, post_device)


def _task_steps(
    policy_cfg: PreTrainedConfig, pretrained_path: str | Path | None, kwargs: Mapping[str, Any]
) -> list[Callable[[dict[str, Any]], dict[str, Any]]]:
    """The checkpoint's saved instruction steps, else those a fresh policy of its type needs."""
    path = pretrained_path or getattr(policy_cfg, "pretrained_path", None)
    pre_file = kwargs.get("preprocessor_config_filename") or PREPROCESSOR_FILE
    if path is not None and (Path(path) / pre_file).is_file():
        return read_task_steps(Path(path), pre_file)
    fresh_steps = getattr(policy_cfg, "task_steps", None)
    return list(fresh_steps()) if callable(fresh_steps) else []


def _normalizers(
    policy_cfg: PreTrainedConfig, pretrained_path: str | Path | None, kwargs: Mapping[str, Any]
) -> tuple[Normalizer | None, Normalizer | None]:
    """(input, output) normalisers: the checkpoint's, the given statistics', or none."""
    if not isinstance(policy_cfg, CheckpointPolicyConfig):
        return None, None
    path = pretrained_path or policy_cfg.pretrained_path
    if path is not None:
        directory = Path(path)
        pre_file = kwargs.get("preprocessor_config_filename") or PREPROCESSOR_FILE
        post_file = kwargs.get("postprocessor_config_filename") or POSTPROCESSOR_FILE
        if (directory / pre_file).is_file():
            return (
                read_pipeline_normalizer(directory, pre_file, "normalizer_processor"),
                read_pipeline_normalizer(directory, post_file, "unnormalizer_processor"),
            )
        return read_legacy_normalizers(directory, policy_cfg)
    if kwargs.get("dataset_stats") is not None:
        return _stats_normalizers(policy_cfg, kwargs["dataset_stats"])
    return None, None


def _stats_normalizers(
    cfg: CheckpointPolicyConfig, dataset_stats: Mapping[str, Mapping[str, Any]]
) -> tuple[Normalizer, Normalizer]:
    """Normalisers of a fresh policy from dataset statistics ({key: {"mean": ..., ...}})."""
    stats = {
        key: {name: torch.as_tensor(value, dtype=torch.float32) for name, value in by_stat.items()}
        for key, by_stat in dataset_stats.items()
    }
    norm_map = {FeatureType(k): NormalizationMode(v) for k, v in cfg.normalization_mapping.items()}
    inputs = Normalizer(
        cfg.input_features, norm_map, {k: v for k, v in stats.items() if k in cfg.input_features}
    )
    outputs = Normalizer(
        cfg.output_features, norm_map, {k: v for k, v in stats.items() if k in cfg.output_features}
    )
    return inputs, outputs


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
        elif name in DISABLED_STEPS:
            _check_disabled(directory, filename, name, step)
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


def _check_disabled(directory: Path, filename: str, name: str, step: Mapping[str, Any]) -> None:
    if step.get("config", {}).get("enabled", False):
        raise CheckpointError(
            f"--policy.path={directory}: {filename} enables {name!r} (actions relative to the state), "
            "which this build does not support"
        )


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
