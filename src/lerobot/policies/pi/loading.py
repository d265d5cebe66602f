"""Load a π0 / π0.5 checkpoint straight to its device, tensor by tensor.

The network is built on the meta device in the config's dtype layout (float32, or LeRobot's
bfloat16 one), given empty storage on the target device and filled from model.safetensors by
lerobot.policies.flow.streaming_weights, so host memory never holds a second copy of the 4.1 B
parameters. Names must match exactly (strict loading): a missing or unexpected tensor is a
one-line error, never a silently random layer.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from lerobot.configs.checkpoint import WEIGHTS_FILE, CheckpointError, resolve_checkpoint
from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.flow.streaming_weights import WeightsError, load_streaming, to_empty_keeping_ties
from lerobot.utils.device_utils import resolve_device

if TYPE_CHECKING:
    from lerobot.policies.pi.configuration import PiFlowConfig
    from lerobot.policies.pi.modeling import PiFlowPolicy

logger = logging.getLogger(__name__)


def load_pi_policy(
    policy_class: type[PiFlowPolicy],
    directory: Path,
    config: PiFlowConfig | None,
    device: str | torch.device | None,
) -> PiFlowPolicy:
    """A checkpoint of `policy_class`, built on `device` and filled from its model.safetensors,
    in eval mode."""
    directory = resolve_checkpoint(str(directory))  # `--policy.pretrained_path=<hub repo id>` too
    if config is None:
        config = read_config(directory, policy_class)
    target = resolve_device(str(device) if device is not None else config.device)
    with torch.device("meta"):
        policy = policy_class(config)
    to_empty_keeping_ties(policy, target)
    policy.model.paligemma_with_expert.reset_buffers()
    try:
        load_streaming(policy, directory / WEIGHTS_FILE)
    except (WeightsError, OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"--policy.path={directory}: {WEIGHTS_FILE} {exc}") from None
    policy.eval()
    return policy


def read_config(directory: Path, policy_class: type[PiFlowPolicy]) -> PiFlowConfig:
    """config.json of a checkpoint of `policy_class`'s type (LeRobot-only settings dropped)."""
    config = PreTrainedConfig.from_pretrained(directory)
    if not isinstance(config, policy_class.config_class):
        raise CheckpointError(
            f"--policy.path={directory}: a {config.type} checkpoint, not a {policy_class.name} one"
        )
    return config
