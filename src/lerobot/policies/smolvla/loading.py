"""What SmolVLA reads besides its checkpoint's weights: the VLM's config (to build the VLM and
its expert), its tokenizer's image token ids, its own pretrained weights, and config.json.

A checkpoint's model.safetensors holds every weight SmolVLA uses, the VLM's included, so
nothing is downloaded to evaluate it: only the VLM's config (and tokenizer) is read from
`vlm_model_name`. The network is built on the meta device, given empty storage on the target
device, and filled tensor by tensor from the file
(lerobot.policies.flow.sampling_policy.FlowSamplingPolicy.load_checkpoint).

Parameter dtypes follow LeRobot 0.6.1, which builds the VLM with
`from_pretrained(vlm_model_name, dtype=bfloat16)` when `load_vlm_weights` is set: the VLM is
then bfloat16, and so is the expert, built from the VLM's text config, which that call set to
bfloat16; the expert's cross-attention k/v projections, created afterwards as plain
`nn.Linear`, stay float32, as do SmolVLA's own projections. Without the flag every dtype comes
from the VLM's config.json, as in LeRobot.
"""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path

import torch

from lerobot.configs.checkpoint import CONFIG_FILE, CheckpointError, config_fields
from lerobot.configs.vlm_files import resolve_vlm_dir
from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
from lerobot.policies.smolvla.smolvlm_with_expert import SmolVLMWithExpertModel

logger = logging.getLogger(__name__)

LEROBOT_VLM_DTYPE = torch.bfloat16


def build_vlm_with_expert(config: SmolVLAConfig) -> SmolVLMWithExpertModel:
    """The VLM and its expert, randomly initialised (or on the meta device inside
    `torch.device("meta")`), in LeRobot's dtypes."""
    vlm_config = read_vlm_config(config.vlm_model_name)
    if config.load_vlm_weights:
        _set_dtype(vlm_config, LEROBOT_VLM_DTYPE)
    model = SmolVLMWithExpertModel(
        vlm_config,
        num_vlm_layers=config.num_vlm_layers,
        num_expert_layers=config.num_expert_layers,
        expert_width_multiplier=config.expert_width_multiplier,
        attention_mode=config.attention_mode,
        self_attn_every_n_layers=config.self_attn_every_n_layers,
    )
    if config.load_vlm_weights:
        model.vlm.to(LEROBOT_VLM_DTYPE)
    return model


def read_vlm_config(name: str):
    """The SmolVLM config of `vlm_model_name` (a fresh copy: callers change it)."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(resolve_vlm_dir(name))


def _set_dtype(vlm_config, dtype: torch.dtype) -> None:
    """What `from_pretrained(dtype=...)` leaves in the config: the dtype on it and every sub-config."""
    vlm_config.dtype = dtype
    for name in ("text_config", "vision_config"):
        getattr(vlm_config, name).dtype = dtype


@functools.lru_cache(maxsize=4)
def image_special_token_ids(name: str) -> tuple[int, int]:
    """(image delimiter, global image) token ids of the VLM's tokenizer."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(resolve_vlm_dir(name))
    return int(tokenizer.fake_image_token_id), int(tokenizer.global_image_token_id)


def load_pretrained_vlm_weights(vlm: torch.nn.Module, name: str) -> None:
    """The VLM's own pretrained weights (training from scratch with load_vlm_weights): the
    text layers past num_vlm_layers are dropped, as LeRobot drops them."""
    from safetensors.torch import load_file

    directory = resolve_vlm_dir(name, with_weights=True)
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"--policy.vlm_model_name={name}: no .safetensors weights in {directory}")
    expected = vlm.state_dict()
    state = {}
    for path in files:
        state.update({k: v for k, v in load_file(path).items() if k in expected})
    missing = sorted(set(expected) - set(state))
    if missing:
        raise CheckpointError(
            f"--policy.vlm_model_name={name}: its weights lack {len(missing)} tensor(s) the VLM needs "
            f"(e.g. {missing[0]})"
        )
    vlm.load_state_dict(state, strict=True)
    logger.info("VLM weights loaded from %s", directory)


def read_config(directory: Path) -> SmolVLAConfig:
    """config.json of a SmolVLA checkpoint as a SmolVLAConfig (LeRobot-only settings dropped)."""
    import draccus

    saved = json.loads((directory / CONFIG_FILE).read_text())
    if saved.get("type") != "smolvla":
        raise CheckpointError(
            f"--policy.path={directory}: not a SmolVLA checkpoint (type {saved.get('type')!r})"
        )
    fields = config_fields(SmolVLAConfig, saved)
    config = draccus.decode(SmolVLAConfig, fields)
    config.pretrained_path = str(directory)
    return config
