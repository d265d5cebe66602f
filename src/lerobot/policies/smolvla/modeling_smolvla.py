"""SmolVLA (Shukor et al., 2025, arXiv:2506.01844): flow matching on top of a small VLM.

Module and parameter names match LeRobot's `SmolVLAPolicy` (`model.vlm_with_expert.vlm...`,
`model.vlm_with_expert.lm_expert...`, `model.state_proj.weight`, ...) so its model.safetensors
loads with strict keys, and each step follows its arithmetic, so the same weights, inputs and
noise give the same actions. Inputs arrive preprocessed (normalised state, tokenised
instruction: see lerobot.processor.language) and actions leave normalised.

Inference, per chunk:
    prefix = [camera tokens (SigLIP + connector, x sqrt(d)) ..., instruction tokens (x sqrt(d)), state token]
    the VLM runs once over the prefix and caches each layer's keys and values;
    x = noise; for t = 1, 1 - 1/n, ..., 1/n:  x += -1/n * expert(x, t | cache)
Training regresses the expert's velocity on noise - actions at x_t = t * noise + (1 - t) * actions,
t ~ Beta(1.5, 1) * 0.999 + 0.001 (mean squared error over non-padded steps and real action dims).

Dtypes follow LeRobot: with `load_vlm_weights=true` LeRobot loads the VLM in bfloat16 and the
expert inherits it (only the expert's cross-attention k/v projections stay float32); this build
holds the same layout so that its numbers are LeRobot's.

Randomness is per batch row: `reset(env_ids, seeds)` gives each row a CPU generator seeded with
its episode seed for its sampling noise; with one row the actions equal LeRobot's after
`torch.manual_seed(seed)` on the CPU. Rows never seeded draw from torch's global generator, as
LeRobot does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from lerobot.policies.flow.matching import pad_vector, sinusoidal_time_embedding
from lerobot.policies.flow.network import FlowMatchingNetwork, TokenSequence, VLAInputs
from lerobot.policies.flow.sampling_policy import FlowSamplingPolicy
from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
from lerobot.policies.smolvla.loading import (
    build_vlm_with_expert,
    image_special_token_ids,
    load_pretrained_vlm_weights,
)
from lerobot.policies.smolvla.smolvlm_with_expert import SmolVLMWithExpertModel
from lerobot.utils.constants import (
    ACTION,
    ACTION_IS_PAD,
    OBS_STATE,
)
from lerobot.utils.not_in_this_build import refused_names

logger = logging.getLogger(__name__)

ALOHA_FLIPPED_JOINTS = (1, 2, 8, 9)
ALOHA_GRIPPERS = (6, 13)


class SmolVLAPolicy(FlowSamplingPolicy):
    """Executes `n_action_steps` of each sampled chunk per row; a row samples a new chunk when
    its queue is empty, all such rows in one forward pass."""

    config_class = SmolVLAConfig
    name = "smolvla"

    def __init__(self, config: SmolVLAConfig, *, vlm_weights: bool | None = None):
        """A fresh policy. With `load_vlm_weights` (or `vlm_weights=True`) the VLM starts from
        the pretrained weights in `vlm_model_name`, as in LeRobot."""
        super().__init__(config)
        if config.load_vlm_weights if vlm_weights is None else vlm_weights:
            self.model.load_pretrained_vlm()

    def build_network(self, config: SmolVLAConfig) -> VLAFlowMatching:
        return VLAFlowMatching(config)

    @classmethod
    def for_checkpoint(cls, config: SmolVLAConfig) -> SmolVLAPolicy:
        """Without the VLM's own pretrained weights: the checkpoint holds every weight."""
        return cls(config, vlm_weights=False)

    def forward(
        self,
        batch: dict[str, Tensor],
        noise: Tensor | None = None,
        time: Tensor | None = None,
        reduction: str = "mean",
    ) -> tuple[Tensor, dict[str, float]]:
        """Training loss for a preprocessed batch with normalised `action` (B, chunk_size, A) and
        optionally `action_is_pad` (B, chunk_size): the mean squared velocity error over real
        steps and action dimensions, per sample with `reduction="none"`. Noise, then time, are
        drawn from torch's generator if None. The info holds LeRobot's keys: the mean error
        before and after masking padded steps, and the loss."""
        actions = batch[ACTION]
        if self.config.adapt_to_pi_aloha:
            actions = aloha_encode_actions_inverse(actions.clone())
        actions = pad_vector(actions, self.config.max_action_dim)
        losses = self.model(self.prepare_inputs(batch), actions, noise, time)
        losses = losses[:, :, : self.config.action_feature.shape[0]]
        info = {"losses_after_forward": float(losses.detach().mean())}
        is_pad = batch.get(ACTION_IS_PAD)
        if is_pad is not None:
            losses = losses * (~is_pad).unsqueeze(-1)
            info["losses_after_in_ep_bound"] = float(losses.detach().mean())
        info["losses_after_rm_padding"] = float(losses.detach().mean())
        loss = reduce_masked_loss(losses, is_pad, per_sample=reduction == "none")
        info["loss"] = float(loss.detach().mean())
        return loss, info

    def prepare_state(self, batch: dict[str, Tensor]) -> Tensor:
        """The last state step, Aloha-converted if asked, zero-padded to max_state_dim."""
        state = batch[OBS_STATE]
        state = state[:, -1, :] if state.ndim > 2 else state
        if self.config.adapt_to_pi_aloha:
            state = aloha_decode_state(state.clone())
        return pad_vector(state, self.config.max_state_dim)

    def prepare_images(self, batch: dict[str, Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """The cameras present, resized with padding and scaled to [-1, 1], then exactly
        `empty_cameras` blank (-1) images whose tokens are masked out.

        Cameras that are missing beyond the declared blank ones are left out, as in LeRobot.
        """
        present = [key for key in self.config.image_features if key in batch]
        if not present:
            raise ValueError(
                f"the batch holds none of the policy's cameras ({', '.join(self.config.image_features)}); "
                "map the env's cameras with --rename_map"
            )
        missing = len(self.config.image_features) - len(present)
        images, masks = [], []
        for key in present:
            image = batch[key][:, -1] if batch[key].ndim == 5 else batch[key]
            if self.config.resize_imgs_with_padding is not None:
                width, height = self.config.resize_imgs_with_padding
                image = resize_with_pad(image, height, width, pad_value=0)
            image = image * 2.0 - 1.0
            mask_key = f"{key}_padding_mask"
            mask = (
                batch[mask_key].bool()
                if mask_key in batch
                else torch.ones(image.shape[0], dtype=torch.bool, device=image.device)
            )
            images.append(image)
            masks.append(mask)
        for _ in range(min(missing, self.config.empty_cameras)):
            images.append(torch.ones_like(images[-1]) * -1)
            masks.append(torch.zeros_like(masks[-1]))
        return images, masks

    def adapt_actions(self, actions: Tensor) -> Tensor:
        """Aloha's conventions with adapt_to_pi_aloha."""
        return aloha_encode_actions(actions) if self.config.adapt_to_pi_aloha else actions


class VLAFlowMatching(FlowMatchingNetwork):
    """The network: the VLM with its action expert, and the projections around them. Sampling
    and the loss are flow/'s (`FlowMatchingNetwork`); the state is the prefix's last token."""

    def __init__(self, config: SmolVLAConfig):
        super().__init__()
        self.config = config
        self.vlm_with_expert: SmolVLMWithExpertModel = build_vlm_with_expert(config)
        text_hidden = self.vlm_with_expert.text_model.config.hidden_size
        expert_hidden = self.vlm_with_expert.expert_hidden_size
        self.state_proj = nn.Linear(config.max_state_dim, text_hidden)
        self.action_in_proj = nn.Linear(config.max_action_dim, expert_hidden)
        self.action_out_proj = nn.Linear(expert_hidden, config.max_action_dim)
        self.action_time_mlp_in = nn.Linear(expert_hidden * 2, expert_hidden)
        self.action_time_mlp_out = nn.Linear(expert_hidden, expert_hidden)
        self.image_special_tokens: tuple[int, int] | None = None
        if config.add_image_special_tokens:
            self.image_special_tokens = image_special_token_ids(config.vlm_model_name)
        self.set_requires_grad()

    def set_requires_grad(self) -> None:
        """LeRobot's fine-tuning switches (see SmolVLAConfig): what the optimizer may change."""
        config, vlm = self.config, self.vlm_with_expert.vlm
        if config.freeze_vision_encoder:
            vlm.model.vision_model.requires_grad_(False)
        if config.train_expert_only:
            vlm.requires_grad_(False)
        else:
            for name, param in vlm.named_parameters():
                if any(part in name for part in self.frozen_vlm_parts()):
                    param.requires_grad_(False)
        self.state_proj.requires_grad_(config.train_state_proj)

    def frozen_vlm_parts(self) -> list[str]:
        """VLM parameters no loss reaches (the LM head, final norm, last layer's outputs):
        LeRobot freezes them so that distributed training finds no unused parameter."""
        n_vlm = self.vlm_with_expert.num_vlm_layers
        n_expert = len(self.vlm_with_expert.lm_expert.layers)
        last = [n_vlm - 1]
        if n_vlm != n_expert and n_vlm % n_expert == 0:
            last.append(n_vlm - 2)
        return ["lm_head", "text_model.norm.weight", *[f"text_model.layers.{i}." for i in last]]

    def train(self, mode: bool = True) -> VLAFlowMatching:
        """Frozen parts stay in eval mode while training, as in LeRobot."""
        super().train(mode)
        if self.config.freeze_vision_encoder:
            self.vlm_with_expert.vlm.model.vision_model.eval()
        if self.config.train_expert_only:
            self.vlm_with_expert.vlm.eval()
        return self

    @property
    def backbone(self) -> SmolVLMWithExpertModel:
        return self.vlm_with_expert

    @property
    def num_denoising_steps(self) -> int:
        return self.config.num_steps

    def load_pretrained_vlm(self) -> None:
        load_pretrained_vlm_weights(self.vlm_with_expert.vlm, self.config.vlm_model_name)

    # -- token sequences ---------------------------------------------------------------------

    def embed_prefix(self, inputs: VLAInputs) -> TokenSequence:
        """(embeddings, padding mask, attention-block mask) of the VLM's tokens.

        Images and instruction form one block attending to itself; the state token starts a
        block the earlier ones cannot see. Each embedding is scaled by sqrt(its width).
        """
        embs, pad_masks, blocks = [], [], []
        for image, image_mask in zip(inputs.images, inputs.image_masks, strict=True):
            if self.image_special_tokens is not None:
                self._append_special_tokens(
                    self.image_special_tokens, image.shape[0], embs, pad_masks, blocks
                )
            image_emb = self.vlm_with_expert.embed_image(image)
            scale = torch.tensor(image_emb.shape[-1] ** 0.5, dtype=image_emb.dtype, device=image_emb.device)
            image_emb = image_emb * scale
            n_rows, n_tokens = image_emb.shape[:2]
            embs.append(image_emb)
            pad_masks.append(image_mask[:, None].expand(n_rows, n_tokens))
            blocks += [0] * n_tokens
            if self.image_special_tokens is not None:
                self._append_special_tokens(
                    self.image_special_tokens[:1], image.shape[0], embs, pad_masks, blocks
                )
        language = self.vlm_with_expert.embed_language_tokens(inputs.tokens)
        embs.append(language * math.sqrt(language.shape[-1]))
        pad_masks.append(inputs.token_masks)
        blocks += [0] * language.shape[1]
        state_emb = self.state_proj(inputs.state)
        state_emb = state_emb[:, None, :] if state_emb.ndim == 2 else state_emb
        embs.append(state_emb)
        n_rows, n_state = state_emb.shape[:2]
        pad_masks.append(torch.ones(n_rows, n_state, dtype=torch.bool, device=state_emb.device))
        blocks += [1] * n_state
        embs, pad_masks = torch.cat(embs, dim=1), torch.cat(pad_masks, dim=1)
        block_starts = torch.tensor(blocks, dtype=torch.bool, device=pad_masks.device)[None, :]
        if pad_masks.shape[1] < self.config.prefix_length:
            embs = pad_tensor(embs, self.config.prefix_length)
            pad_masks = pad_tensor(pad_masks, self.config.prefix_length)
            block_starts = pad_tensor(block_starts, self.config.prefix_length)
        return embs, pad_masks, block_starts.expand(n_rows, -1)

    def _append_special_tokens(
        self, token_ids, n_rows: int, embs: list, pad_masks: list, blocks: list
    ) -> None:
        """SmolVLM's image delimiters, embedded without the sqrt(width) scale (as in LeRobot)."""
        device = self.vlm_with_expert.vlm.device
        emb = self.vlm_with_expert.embed_language_tokens(
            torch.tensor(token_ids, dtype=torch.long, device=device)
        )
        emb = emb.unsqueeze(0).expand(n_rows, -1, -1)
        embs.append(emb)
        pad_masks.append(torch.ones(emb.shape[:2], dtype=torch.bool, device=emb.device))
        blocks += [0] * emb.shape[1]

    def embed_suffix(
        self, state: Tensor, noisy_actions: Tensor, time: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, None]:
        """The expert's tokens: each noisy action fused with the time's sine-cosine embedding by
        an MLP; they form one block after the prefix, attending to all of it. The state is in
        the prefix, and the expert's norms take no condition."""
        action_emb = self.action_in_proj(noisy_actions)
        time_emb = sinusoidal_time_embedding(
            time, self.vlm_with_expert.expert_hidden_size, self.config.min_period, self.config.max_period
        ).type(dtype=action_emb.dtype)
        time_emb = time_emb[:, None, :].expand_as(action_emb)
        fused = self.action_time_mlp_in(torch.cat([action_emb, time_emb], dim=2))
        fused = self.action_time_mlp_out(F.silu(fused))
        n_rows, n_tokens = fused.shape[:2]
        pad = torch.ones(n_rows, n_tokens, dtype=torch.bool, device=fused.device)
        blocks = torch.ones(n_rows, self.config.chunk_size, dtype=torch.bool, device=fused.device)
        return fused, pad, blocks, None


def reduce_masked_loss(losses: Tensor, is_pad: Tensor | None, per_sample: bool) -> Tensor:
    """The mean of (B, steps, dims) errors already zeroed at padded steps, over the real steps
    only: one number, or one per sample (B,)."""
    dims = (1, 2) if per_sample else (0, 1, 2)
    if is_pad is None:
        return losses.mean(dim=dims)
    n_real_steps = (~is_pad).sum(dim=1) if per_sample else (~is_pad).sum()
    return losses.sum(dim=dims) / (n_real_steps * losses.shape[-1]).clamp_min(1)


def pad_tensor(tensor: Tensor, max_len: int, pad_value: float = 0) -> Tensor:
    """Pad dimension 1 to `max_len` with `pad_value` (LeRobot's signature)."""
    padded = torch.full(
        (tensor.shape[0], max_len, *tensor.shape[2:]), pad_value, dtype=tensor.dtype, device=tensor.device
    )
    padded[:, : tensor.shape[1]] = tensor
    return padded


def resize_with_pad(image: Tensor, height: int, width: int, pad_value: float) -> Tensor:
    """(B, C, h, w) -> (B, C, height, width): bilinear resize keeping the aspect ratio, then
    `pad_value` on the top and left (SmolVLA's convention)."""
    current_height, current_width = image.shape[2:]
    if (current_height, current_width) == (height, width):
        return image
    ratio = max(current_width / width, current_height / height)
    resized_height, resized_width = int(current_height / ratio), int(current_width / ratio)
    resized = F.interpolate(image, size=(resized_height, resized_width), mode="bilinear", align_corners=False)
    pad_height, pad_width = max(0, height - resized_height), max(0, width - resized_width)
    return F.pad(resized, (pad_width, 0, pad_height, 0), value=pad_value)


# -- Aloha conventions (adapt_to_pi_aloha) ---------------------------------------------------
# Aloha reports its grippers as linear positions and some joints flipped; the pi runtime the
# base model was trained with uses angles. Constants from the Aloha and Interbotix code.


def _scale(x: Tensor, low: float, high: float) -> Tensor:
    return (x - low) / (high - low)


def _unscale(x: Tensor, low: float, high: float) -> Tensor:
    return x * (high - low) + low


def _gripper_to_angular(value: Tensor) -> Tensor:
    value = _unscale(value, 0.01844, 0.05800)
    arm_length, horn_radius = 0.036, 0.022
    ratio = (horn_radius**2 + value**2 - arm_length**2) / (2 * horn_radius * value)
    return _scale(torch.arcsin(torch.clamp(ratio, -1.0, 1.0)), 0.4, 1.5)


def _gripper_from_angular(value: Tensor) -> Tensor:
    return _scale(_unscale(value, 0.4, 1.5), -0.6213, 1.4910)


def _gripper_from_angular_inverse(value: Tensor) -> Tensor:
    return _scale(_unscale(value, -0.6213, 1.4910), 0.4, 1.5)


def aloha_decode_state(state: Tensor) -> Tensor:
    """(B, dims) Aloha state, in place, in the pi runtime's conventions."""
    return _convert_aloha(state, _gripper_to_angular)


def aloha_encode_actions(actions: Tensor) -> Tensor:
    """(B, steps, dims) actions, in place, from the pi runtime's conventions to Aloha's."""
    return _convert_aloha(actions, _gripper_from_angular)


def aloha_encode_actions_inverse(actions: Tensor) -> Tensor:
    """(B, steps, dims) Aloha actions, in place, in the pi runtime's conventions (training)."""
    return _convert_aloha(actions, _gripper_from_angular_inverse)


def _convert_aloha(values: Tensor, gripper: Callable[[Tensor], Tensor]) -> Tensor:
    """Flip the sign of the flipped joints and convert each gripper, on the last dimension."""
    for joint in ALOHA_FLIPPED_JOINTS:
        values[..., joint] *= -1
    for index in ALOHA_GRIPPERS:
        values[..., index] = gripper(values[..., index])
    return values


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
