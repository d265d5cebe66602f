"""What a training step trains: the policy with the statistics and processors that go with it.

A fresh policy takes the dataset's features (those the env also provides, when training
evaluates on one); `--policy.path` fine-tunes a checkpoint's weights on the dataset's actions.
Statistics always come from the dataset, as LeRobot takes them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from lerobot.configs.checkpoint import PREPROCESSOR_FILE
from lerobot.configs.policies import CheckpointPolicyConfig
from lerobot.configs.train import TrainPipelineConfig
from lerobot.configs.types import FeatureType
from lerobot.datasets.reader import EpisodeFrames
from lerobot.policies.factory import make_policy, policy_class
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.processor.instruction_steps import InstructionStep
from lerobot.processor.pipeline import DataProcessorPipeline
from lerobot.processor.policy_processors import (
    add_blank_cameras,
    policy_pipelines,
    saved_instruction_steps,
)
from lerobot.training.batches import compute_stats, dataset_features, use_imagenet_stats
from lerobot.utils.device_utils import resolve_device
from lerobot.utils.errors import ConfigError

logger = logging.getLogger(__name__)


@dataclass
class Trainee:
    """The policy under training, with the statistics and processors that go with it."""

    policy: PreTrainedPolicy
    stats: dict[str, dict[str, torch.Tensor]]
    task_steps: list[InstructionStep] = field(default_factory=list)
    """Instruction steps (newline, tokenizer) of language-conditioned policies; saved with
    every checkpoint."""
    _processors: tuple[DataProcessorPipeline, DataProcessorPipeline] | None = field(default=None, repr=False)

    def processors(self) -> tuple[DataProcessorPipeline, DataProcessorPipeline]:
        """The pipelines a checkpoint of this trainee saves: training batches go through the
        preprocessor (as LeRobot's training does), evaluation in the loop uses both."""
        if self._processors is None:
            cfg = self.policy.config
            pre, post = policy_pipelines(cfg, self.stats, self.task_steps, device=resolve_device(cfg.device))
            add_blank_cameras(pre, cfg)
            self._processors = (pre, post)
        return self._processors

    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        preprocessor, _ = self.processors()
        return self.policy.forward(preprocessor(batch))


def build_trainee(cfg: TrainPipelineConfig, frames: EpisodeFrames) -> Trainee:
    """The policy to train: a fresh one whose features are the dataset's (those the env also
    provides), or, with --policy.path, the checkpoint's weights, inputs and instruction steps
    with the dataset's actions (as LeRobot fine-tunes). Statistics always come from the dataset."""
    policy_cfg: CheckpointPolicyConfig = cfg.policy
    settle_features(cfg, frames)
    if policy_cfg.pretrained_path is not None:
        policy = make_policy(policy_cfg)
        logger.info("fine-tuning the weights of %s", policy_cfg.pretrained_path)
    else:
        policy = policy_class(policy_cfg.type)(policy_cfg)
    stats = training_stats(cfg, frames)
    return Trainee(policy, stats, trainee_task_steps(policy_cfg))


def settle_features(cfg: TrainPipelineConfig, frames: EpisodeFrames) -> None:
    """Set the policy's input and output features from the dataset's (the declared inputs are
    checked against them instead), then validate the policy config now that they are known."""
    policy_cfg: CheckpointPolicyConfig = cfg.policy
    inputs, outputs = dataset_features(frames)
    if cfg.env is not None and not policy_cfg.input_features:
        env_features = {cfg.rename_map.get(k, k): ft for k, ft in cfg.env.policy_features().items()}
        inputs = matching_env_inputs(inputs, env_features, policy_cfg)
    if not policy_cfg.input_features:
        policy_cfg.input_features = inputs
    else:
        check_declared_inputs(policy_cfg, inputs)
    if policy_cfg.pretrained_path is not None or not policy_cfg.output_features:
        policy_cfg.output_features = outputs
    policy_cfg.__post_init__()


def training_stats(cfg: TrainPipelineConfig, frames: EpisodeFrames) -> dict[str, dict[str, torch.Tensor]]:
    """The dataset's statistics of the policy's features (cameras at ImageNet's with
    --dataset.use_imagenet_stats)."""
    policy_cfg: CheckpointPolicyConfig = cfg.policy
    features = {**policy_cfg.input_features, **policy_cfg.output_features}
    stats = {key: s for key, s in compute_stats(frames).items() if key in features}
    if cfg.dataset.use_imagenet_stats:
        use_imagenet_stats(stats, [k for k in frames.images if k in policy_cfg.input_features])
    return stats


def check_declared_inputs(policy_cfg: CheckpointPolicyConfig, dataset_inputs: dict[str, Any]) -> None:
    """Inputs the policy declares (its checkpoint's, or --policy.input_features) must be the
    dataset's, with the dataset's shapes: otherwise it would train on other data than its
    config.json says (images may differ in size when the policy's processor resizes them; up to
    --policy.empty_cameras cameras may be missing), or fail after minutes of training."""
    flag = "--policy.path" if policy_cfg.pretrained_path is not None else "--policy.input_features"
    missing_cameras = 0
    for key, feature in policy_cfg.input_features.items():
        given = dataset_inputs.get(key)
        if (
            given is None
            and feature.type is FeatureType.VISUAL
            and missing_cameras < policy_cfg.empty_cameras
        ):
            missing_cameras += 1
            continue
        if given is None:
            raise ConfigError(
                f"{flag}: the policy reads {key}, which the dataset lacks (it has {', '.join(dataset_inputs)}); "
                "map dataset keys to the policy's with --rename_map"
            )
        resized = feature.type is FeatureType.VISUAL and policy_cfg.resizes_images()
        same = tuple(given.shape) == tuple(feature.shape) or (resized and given.shape[0] == feature.shape[0])
        if not same:
            shape = "x".join(map(str, feature.shape))
            raise ConfigError(
                f"{flag}: {key} is {shape} for the policy and {'x'.join(map(str, given.shape))} in the dataset; "
                "declare the dataset's shape (or leave --policy.input_features out to take it)"
            )


def trainee_task_steps(policy_cfg: CheckpointPolicyConfig) -> list[InstructionStep]:
    """A checkpoint's saved instruction steps (LeRobot fine-tunes with its pretrained
    pipeline), else those of a fresh policy of this type."""
    if policy_cfg.pretrained_path is not None:
        directory = Path(policy_cfg.pretrained_path)
        if (directory / PREPROCESSOR_FILE).is_file():
            return saved_instruction_steps(directory, PREPROCESSOR_FILE)
    return list(policy_cfg.task_steps())


def matching_env_inputs(
    inputs: dict, env_features: dict, policy_cfg: CheckpointPolicyConfig | None = None
) -> dict:
    """The dataset inputs the env provides; an image size mismatch is an error, not a surprise
    (unless the policy resizes its images itself, as SmolVLA does)."""
    kept = {key: ft for key, ft in inputs.items() if key in env_features}
    if getattr(policy_cfg, "resize_imgs_with_padding", None) is not None:
        return kept
    for key, feature in kept.items():
        if feature.type is FeatureType.VISUAL and tuple(env_features[key].shape) != tuple(feature.shape):
            _, height, width = feature.shape
            raise ConfigError(
                f"{key}: the dataset's frames are {height}x{width}, the env renders "
                f"{env_features[key].shape[1]}x{env_features[key].shape[2]}; pass "
                f"--env.observation_height={height} --env.observation_width={width}"
            )
    return kept
