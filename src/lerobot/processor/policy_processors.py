"""A policy's pre- and post-processors: LeRobot's pipelines (`PolicyProcessorPipeline`), built
from the files saved next to the checkpoint, in either layout:
- current: `policy_preprocessor.json` / `policy_postprocessor.json` with a safetensors file per
  stateful step; every step is looked up in the registry (LeRobot's standard steps, and any a
  user's package registers), so any pipeline LeRobot saves runs here;
- older: statistics as buffers inside model.safetensors (`normalize_inputs.buffer_observation_state.mean`,
  `unnormalize_outputs.buffer_action.std`, ...), with the modes from config.json: the pipeline is
  built in LeRobot's order from them.

A fresh policy's pipelines come from dataset statistics (`policy_pipelines`), the same builder
training saves checkpoints with. One step is ours and never saved: blank frames for cameras the
env lacks (`--policy.empty_cameras`), placed after renaming.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

import torch
from safetensors import safe_open
from torch import Tensor

from lerobot.configs.checkpoint import (
    LEGACY_NORM_PREFIXES,
    POSTPROCESSOR_FILE,
    PREPROCESSOR_FILE,
    WEIGHTS_FILE,
    CheckpointError,
)
from lerobot.configs.hub import DEFAULT_HUB
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.configs.types import PolicyFeature
from lerobot.processor.batch_processor import AddBatchDimensionProcessorStep
from lerobot.processor.converters import policy_action_to_transition, transition_to_policy_action
from lerobot.processor.core import EnvTransition, TransitionKey
from lerobot.processor.device_processor import DeviceProcessorStep
from lerobot.processor.instruction_steps import InstructionStep
from lerobot.processor.normalize_processor import NormalizerProcessorStep, UnnormalizerProcessorStep
from lerobot.processor.pipeline import DataProcessorPipeline
from lerobot.processor.rename_processor import RenameObservationsProcessorStep
from lerobot.processor.saved_pipeline import read_pipeline_file, steps_from_config
from lerobot.processor.steps import Features, ObservationProcessorStep, ProcessorStep
from lerobot.utils.constants import ACTION
from lerobot.utils.device_utils import resolve_device

logger = logging.getLogger(__name__)

PREPROCESSOR_NAME = "policy_preprocessor"
POSTPROCESSOR_NAME = "policy_postprocessor"
Stats = Mapping[str, Mapping[str, Any]]


class ProcessorConfigKwargs(TypedDict, total=False):
    """The keyword arguments `make_pre_post_processors` takes besides the config (LeRobot's names)."""

    preprocessor_config_filename: str | None
    postprocessor_config_filename: str | None
    preprocessor_overrides: dict[str, Any] | None
    postprocessor_overrides: dict[str, Any] | None
    dataset_stats: dict[str, dict[str, Any]] | None
    dataset_meta: Any


PROCESSOR_KWARGS = frozenset(ProcessorConfigKwargs.__annotations__)


class BlankCamerasProcessorStep(ObservationProcessorStep):
    """Black frames (0 in [0, 1] pixel space) for up to `empty_cameras` cameras the batch lacks;
    more missing cameras than that is an error naming them.

    A blank frame takes the size of the cameras present, so that policies that stack cameras
    (Diffusion Policy) can; without any camera, the size the policy was trained on. The step is
    this package's: it is never saved (`saved = False`), so the files stay LeRobot's.
    """

    saved = False

    def __init__(self, image_features: Mapping[str, PolicyFeature], empty_cameras: int = 0):
        self.image_features = dict(image_features)
        self.empty_cameras = empty_cameras

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        observation = transition.get(TransitionKey.OBSERVATION) or {}
        # Every camera there (the usual case): no copies.
        return (
            transition if all(k in observation for k in self.image_features) else super().__call__(transition)
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        missing = [key for key in self.image_features if key not in observation]
        if not missing:
            return observation
        if len(missing) > self.empty_cameras:
            raise ValueError(
                f"the batch lacks cameras {', '.join(missing)}; --policy.empty_cameras={self.empty_cameras} "
                "allows fewer blank ones"
            )
        reference = _reference_tensor(observation)
        present = next((observation[k] for k in self.image_features if k in observation), None)
        for key in missing:
            channels, height, width = self.image_features[key].shape
            if present is not None:
                height, width = present.shape[-2:]
            observation[key] = torch.zeros(
                (reference.shape[0], channels, height, width), dtype=torch.float32, device=reference.device
            )
        return observation

    def transform_features(self, features: Features) -> Features:
        return features


PolicyPipelines = tuple[DataProcessorPipeline, DataProcessorPipeline]


def make_pre_post_processors(
    policy_cfg: PreTrainedConfig,
    pretrained_path: str | Path | None = None,
    pretrained_revision: str | None = None,
    **kwargs: Any,
) -> PolicyPipelines:
    """The policy's processors, with LeRobot's signature: from the checkpoint at
    `pretrained_path` (default: the config's), from `dataset_stats` for a fresh policy, or, for
    built-in policies that need none, pipelines that only batch and place tensors.

    `preprocessor_overrides` / `postprocessor_overrides` change saved steps' settings
    ({registry name: {argument: value}}, as LeRobot's); the preprocessor's device is the
    policy's unless an override names one. `*_config_filename` name other pipeline files.
    `pretrained_revision` is accepted for the signature: a hub checkpoint is resolved to its
    local directory (at its revision) when its config is read.
    """
    unknown = sorted(set(kwargs) - PROCESSOR_KWARGS)
    if unknown:
        raise TypeError(f"make_pre_post_processors() got unexpected keyword arguments: {', '.join(unknown)}")
    pre_overrides = {k: dict(v) for k, v in (kwargs.get("preprocessor_overrides") or {}).items()}
    post_overrides = {k: dict(v) for k, v in (kwargs.get("postprocessor_overrides") or {}).items()}
    device = pre_overrides.get("device_processor", {}).get("device") or str(resolve_device(policy_cfg.device))
    pre_overrides.setdefault("device_processor", {})["device"] = device
    path = pretrained_path or getattr(policy_cfg, "pretrained_path", None)
    pre_file = kwargs.get("preprocessor_config_filename") or PREPROCESSOR_FILE
    post_file = kwargs.get("postprocessor_config_filename") or POSTPROCESSOR_FILE
    # Only a policy of this build reads a checkpoint's saved pipelines here; another one (the
    # LeRobot bridge, whose child runs LeRobot's own) gets the pipelines that place tensors.
    if (
        isinstance(policy_cfg, CheckpointPolicyConfig)
        and path is not None
        and (Path(path) / pre_file).is_file()
    ):
        pre, post = saved_pipelines(Path(path), pre_file, post_file, pre_overrides, post_overrides)
    else:
        stats = _fresh_or_legacy_stats(policy_cfg, path, kwargs.get("dataset_stats"))
        rename_map = pre_overrides.get("rename_observations_processor", {}).get("rename_map")
        post_device = post_overrides.get("device_processor", {}).get("device", "cpu")
        pre, post = policy_pipelines(
            policy_cfg, stats, _fresh_task_steps(policy_cfg), device, rename_map, post_device
        )
    add_blank_cameras(pre, policy_cfg)
    return pre, post


def policy_pipelines(
    cfg: PreTrainedConfig,
    stats: Stats | None,
    task_steps: Sequence[ProcessorStep] = (),
    device: str | torch.device = "cpu",
    rename_map: Mapping[str, str] | None = None,
    post_device: str = "cpu",
) -> PolicyPipelines:
    """The pipelines LeRobot builds for a policy of this config, in its order: rename, batch,
    instruction steps, device, normaliser (a step reading the normalised state, π0.5's prompt,
    and the steps after it follow the normaliser, and the device step comes last); the
    postprocessor unnormalises actions and returns them on `post_device`. Without `stats` (a
    policy that normalises nothing), no (un)normaliser."""
    before, after = _split_at_normalizer(task_steps)
    device_step = DeviceProcessorStep(device=str(device))
    steps: list[ProcessorStep] = [
        RenameObservationsProcessorStep(rename_map=dict(rename_map or {})),
        AddBatchDimensionProcessorStep(),
        *before,
    ]
    post_steps: list[ProcessorStep] = []
    if stats is not None:
        norm_map = dict(cfg.normalization_mapping)
        features = {**cfg.input_features, **cfg.output_features}
        normalizer = NormalizerProcessorStep(features=features, norm_map=norm_map, stats=dict(stats))
        action_stats = {k: v for k, v in stats.items() if k == ACTION}
        unnormalizer = UnnormalizerProcessorStep(
            features=dict(cfg.output_features), norm_map=norm_map, stats=action_stats
        )
        steps += [*([] if after else [device_step]), normalizer, *after, *([device_step] if after else [])]
        post_steps.append(unnormalizer)
    else:
        steps += [*after, device_step]
    post_steps.append(DeviceProcessorStep(device=post_device))
    return (
        DataProcessorPipeline(steps=steps, name=PREPROCESSOR_NAME),
        DataProcessorPipeline(
            steps=post_steps,
            name=POSTPROCESSOR_NAME,
            to_transition=policy_action_to_transition,
            to_output=transition_to_policy_action,
        ),
    )


def saved_pipelines(
    directory: Path,
    pre_file: str,
    post_file: str,
    pre_overrides: Mapping[str, Mapping[str, Any]],
    post_overrides: Mapping[str, Mapping[str, Any]],
) -> PolicyPipelines:
    """The checkpoint's saved pipelines, each failure one line naming --policy.path."""
    if not (directory / post_file).is_file():
        raise CheckpointError(f"--policy.path={directory}: {post_file} is missing next to {pre_file}")
    with pipeline_errors_naming(directory):
        pre = _load_saved(directory, pre_file, pre_overrides, PREPROCESSOR_NAME)
        post = _load_saved(directory, post_file, post_overrides, POSTPROCESSOR_NAME)
    post.to_transition, post.to_output = policy_action_to_transition, transition_to_policy_action
    return pre, post


@contextmanager
def pipeline_errors_naming(directory: Path) -> Iterator[None]:
    """A saved pipeline that cannot be loaded, as one line naming --policy.path."""
    try:
        yield
    except (ImportError, KeyError, ValueError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        raise CheckpointError(f"--policy.path={directory}: {message}") from None


def _load_saved(
    directory: Path, filename: str, overrides: Mapping[str, Mapping[str, Any]], default_name: str
) -> DataProcessorPipeline:
    config, _ = read_pipeline_file(directory, filename, None, DEFAULT_HUB)
    names = {entry.get("registry_name") or entry["class"].rsplit(".", 1)[-1] for entry in config["steps"]}
    overrides = {k: dict(v) for k, v in overrides.items()}
    # The device is ours to set only where the file has a device step.
    if "device_processor" not in names and set(overrides.get("device_processor", {})) <= {"device"}:
        overrides.pop("device_processor", None)
    _keep_float32(config, overrides, filename)
    steps = steps_from_config(config, overrides, directory, where=filename)
    return DataProcessorPipeline(steps=steps, name=config.get("name", default_name))


def _keep_float32(config: Mapping[str, Any], overrides: dict[str, dict[str, Any]], filename: str) -> None:
    """Inputs stay float32: our policies cast themselves (a saved float_dtype is warned about)."""
    for entry in config["steps"]:
        dtype = (entry.get("config") or {}).get("float_dtype")
        if entry.get("registry_name") == "device_processor" and dtype not in (None, "float32"):
            logger.warning("%s asks for float_dtype=%s; inputs stay float32 here", filename, dtype)
            overrides.setdefault("device_processor", {}).setdefault("float_dtype", None)


def add_blank_cameras(pre: DataProcessorPipeline, cfg: PreTrainedConfig) -> None:
    """Our blank-camera step, after renaming (first when the pipeline does not rename)."""
    cameras = getattr(cfg, "image_features", {})
    if not cameras or not getattr(cfg, "blank_cameras_in_preprocessor", True):
        return  # no cameras, or the model masks its missing cameras itself (SmolVLA)
    step = BlankCamerasProcessorStep(cameras, getattr(cfg, "empty_cameras", 0))
    steps = list(pre.steps)
    renames = [i for i, s in enumerate(steps) if isinstance(s, RenameObservationsProcessorStep)]
    steps.insert(renames[0] + 1 if renames else 0, step)
    pre.steps = steps


def saved_instruction_steps(directory: Path, filename: str) -> list[ProcessorStep]:
    """The instruction steps of a checkpoint's saved preprocessor, in their saved order."""
    with pipeline_errors_naming(directory):
        config, _ = read_pipeline_file(directory, filename, None, DEFAULT_HUB)
        steps = steps_from_config(config, {}, directory, where=filename)
    return [step for step in steps if isinstance(step, InstructionStep)]


def _fresh_task_steps(cfg: PreTrainedConfig) -> list[ProcessorStep]:
    """A fresh checkpoint policy's instruction steps; other policies (random, experts) have none."""
    return list(cfg.task_steps()) if isinstance(cfg, CheckpointPolicyConfig) else []


def _split_at_normalizer(steps: Sequence[ProcessorStep]) -> tuple[list[ProcessorStep], list[ProcessorStep]]:
    """(steps before the normaliser, steps after it): from the first step that reads the
    normalised state on, every step runs after normalisation, in the given order."""
    for index, step in enumerate(steps):
        if getattr(step, "runs_on_normalized_state", False):
            return list(steps[:index]), list(steps[index:])
    return list(steps), []


def _fresh_or_legacy_stats(
    cfg: PreTrainedConfig, path: str | Path | None, dataset_stats: Stats | None
) -> Stats | None:
    """The statistics of a checkpoint without pipeline files (inside its weights), or those
    given for a fresh policy; None for policies that normalise nothing."""
    if not isinstance(cfg, CheckpointPolicyConfig):
        return None
    if path is not None:
        return read_legacy_stats(Path(path), cfg)
    return dataset_stats


def read_legacy_stats(directory: Path, cfg: CheckpointPolicyConfig) -> dict[str, dict[str, Tensor]]:
    """The statistics buffers of an older model.safetensors, by feature: the inputs' from
    `normalize_inputs`, the actions' from `unnormalize_outputs`."""
    buffers = _legacy_buffers(directory / WEIGHTS_FILE)
    if not buffers:
        raise CheckpointError(
            f"--policy.path={directory}: no {PREPROCESSOR_FILE} and no normalisation statistics in "
            f"{WEIGHTS_FILE}; the policy's inputs cannot be normalised"
        )
    wanted = {"normalize_inputs": cfg.input_features, "unnormalize_outputs": cfg.output_features}
    stats: dict[str, dict[str, Tensor]] = {}
    for name, tensor in buffers.items():
        module, buffer, stat = name.split(".", 2)
        for key in wanted.get(module, {}):
            if buffer == "buffer_" + key.replace(".", "_"):
                stats.setdefault(key, {})[stat] = tensor
    return stats


def _legacy_buffers(path: Path) -> dict[str, Tensor]:
    with safe_open(path, framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys() if k.startswith(LEGACY_NORM_PREFIXES)}  # noqa: SIM118


def _reference_tensor(observation: Mapping[str, Any]) -> Tensor:
    for value in observation.values():
        if isinstance(value, Tensor) and value.ndim > 0:
            return value
    raise ValueError("the batch holds no tensor to size blank cameras from")
