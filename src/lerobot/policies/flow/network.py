"""The network side of flow matching, written once for SmolVLA, π0 and π0.5: sampling a chunk and
the training loss, around a VLM joined layer by layer with an action expert.

Two token sequences meet in the backbone's attention:
    prefix = what the VLM reads once per chunk (cameras, instruction; SmolVLA: the state too)
    suffix = what the expert reads at every Euler step (the noisy actions with the time;
             π0: the state too)
Each comes as (embeddings (B, L, width), padding mask (B, L), block starts (B, L)): a token
attends to the real tokens of its own block and of earlier ones (`make_att_2d_masks`), so the
prefix never sees the suffix. Sampling runs the VLM over the prefix once, keeps each layer's
keys and values, and integrates the expert's velocity from noise (t=1) to actions (t=0) over
them; training runs both sequences through the layers at once. The types differ only in how
they embed the two sequences and in their backbone (`FlowBackbone`).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from lerobot.policies.flow.matching import euler_integrate, make_att_2d_masks, sample_noise, sample_time

TokenSequence = tuple[Tensor, Tensor, Tensor]
"""(embeddings (B, L, width), padding mask (B, L), block starts (B, L))."""


@dataclass(frozen=True)
class VLAInputs:
    """What the network reads of a batch, as the policy prepares it."""

    images: list[Tensor]
    """Per camera, (B, 3, H, W) in [-1, 1]."""
    image_masks: list[Tensor]
    """Per camera, (B,): which rows hold it (a blank camera's tokens are masked out)."""
    tokens: Tensor
    """(B, L) instruction tokens."""
    token_masks: Tensor
    """(B, L): which tokens are real."""
    state: Tensor
    """(B, max_state_dim), zero-padded."""


class FlowBackbone(Protocol):
    """A VLM and its action expert, joined layer by layer (SmolVLA's `SmolVLMWithExpertModel`,
    π's `PaliGemmaWithExpert`). `mask` is in the form `FlowMatchingNetwork.attention_mask`
    gives; `cond` is the expert's norm condition (π0.5's time), None for the others."""

    def fill_prefix_cache(self, prefix: Tensor, mask: Tensor, positions: Tensor) -> Any:
        """The VLM alone over the prefix: each layer's keys and values."""

    def denoise(
        self, suffix: Tensor, cache: Any, mask: Tensor, positions: Tensor, cond: Tensor | None
    ) -> Tensor:
        """The expert alone over the suffix, attending to the cached prefix; normed output."""

    def joint_forward(
        self, prefix: Tensor, suffix: Tensor, mask: Tensor, positions: Tensor, cond: Tensor | None
    ) -> Tensor:
        """Both at once without a cache (training); the expert's normed output."""


class FlowMatchingNetwork(nn.Module, abc.ABC):
    """Sampling and the loss over a `FlowBackbone`. A type builds its layers (`action_out_proj`,
    from the expert's width to max_action_dim, among them) and says how it embeds the prefix
    and the suffix; its config holds `chunk_size` and `max_action_dim`."""

    config: Any
    action_out_proj: nn.Linear

    @property
    @abc.abstractmethod
    def backbone(self) -> FlowBackbone:
        """The VLM with its expert (kept under the attribute name its checkpoints use)."""

    @property
    @abc.abstractmethod
    def num_denoising_steps(self) -> int:
        """Euler steps per chunk (each type's config names the field its own way)."""

    @abc.abstractmethod
    def embed_prefix(self, inputs: VLAInputs) -> TokenSequence:
        """The VLM's tokens."""

    @abc.abstractmethod
    def embed_suffix(
        self, state: Tensor, noisy_actions: Tensor, time: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """The expert's tokens, and the expert's norm condition (None where the norms take none)."""

    def attention_mask(self, allowed: Tensor) -> Tensor:
        """(B, Lq, Lk) booleans in the form the backbone's attention reads: as they are, unless
        a type's backbone wants another (π: additive)."""
        return allowed

    def sample_time(self, n_rows: int, device: torch.device) -> Tensor:
        """Training times, Beta(1.5, 1) * 0.999 + 0.001 unless a type's config says otherwise."""
        return sample_time(n_rows, device)

    # -- inference ---------------------------------------------------------------------------

    def sample_actions(
        self, inputs: VLAInputs, noise: Tensor | None = None, num_steps: int | None = None
    ) -> Tensor:
        """Euler integration of the expert's velocity from noise (t=1) to actions (t=0), in
        `num_steps` steps (None: the type's config)."""
        if noise is None:
            shape = (inputs.tokens.shape[0], self.config.chunk_size, self.config.max_action_dim)
            noise = sample_noise(shape, inputs.tokens.device)
        prefix, prefix_pad, prefix_blocks = self.embed_prefix(inputs)
        cache = self.backbone.fill_prefix_cache(
            prefix,
            self.attention_mask(make_att_2d_masks(prefix_pad, prefix_blocks)),
            torch.cumsum(prefix_pad, dim=1) - 1,
        )
        return euler_integrate(
            lambda x_t, time: self.denoise_step(inputs.state, x_t, time, cache, prefix_pad),
            noise,
            self.num_denoising_steps if num_steps is None else num_steps,
        )

    def denoise_step(
        self, state: Tensor, x_t: Tensor, time: Tensor, cache: Any, prefix_pad: Tensor
    ) -> Tensor:
        """The expert's velocity at (x_t, time), attending to the cached prefix."""
        suffix, suffix_pad, suffix_blocks, cond = self.embed_suffix(state, x_t, time)
        n_rows, suffix_len, prefix_len = prefix_pad.shape[0], suffix_pad.shape[1], prefix_pad.shape[1]
        allowed = torch.cat(
            [
                prefix_pad[:, None, :].expand(n_rows, suffix_len, prefix_len),
                make_att_2d_masks(suffix_pad, suffix_blocks),
            ],
            dim=2,
        )
        positions = torch.sum(prefix_pad, dim=-1)[:, None] + torch.cumsum(suffix_pad, dim=1) - 1
        out = self.backbone.denoise(suffix, cache, self.attention_mask(allowed), positions, cond)
        return self.velocity(out)

    def velocity(self, expert_out: Tensor) -> Tensor:
        """(B, chunk_size, max_action_dim) in float32, from the expert's last chunk_size tokens."""
        return self.action_out_proj(expert_out[:, -self.config.chunk_size :].to(torch.float32))

    # -- training ----------------------------------------------------------------------------

    def forward(
        self, inputs: VLAInputs, actions: Tensor, noise: Tensor | None = None, time: Tensor | None = None
    ) -> Tensor:
        """Per-element squared error (B, chunk_size, max_action_dim) of the velocity predicted at
        x_t = t * noise + (1 - t) * actions against noise - actions. Noise, then time, are drawn
        from torch's generator if None, in LeRobot's order."""
        if noise is None:
            noise = sample_noise(actions.shape, actions.device)
        if time is None:
            time = self.sample_time(actions.shape[0], actions.device)
        t = time[:, None, None]
        x_t = t * noise + (1 - t) * actions
        target = noise - actions
        prefix, prefix_pad, prefix_blocks = self.embed_prefix(inputs)
        suffix, suffix_pad, suffix_blocks, cond = self.embed_suffix(inputs.state, x_t, time)
        pad = torch.cat([prefix_pad, suffix_pad], dim=1)
        blocks = torch.cat([prefix_blocks, suffix_blocks], dim=1)
        mask = self.attention_mask(make_att_2d_masks(pad, blocks))
        out = self.backbone.joint_forward(prefix, suffix, mask, torch.cumsum(pad, dim=1) - 1, cond)
        return F.mse_loss(target, self.velocity(out), reduction="none")
