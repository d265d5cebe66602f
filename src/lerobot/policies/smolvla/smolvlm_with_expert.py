"""SmolVLM's vision encoder and text decoder, joined layer by layer with SmolVLA's action expert.

The modules are transformers' own (SmolVLM, Llama decoder layers) built from a config, under
the names LeRobot's checkpoints use (`vlm.model.text_model.layers.0.self_attn.q_proj.weight`,
`lm_expert.layers.0.mlp.up_proj.weight`, ...). The layer loop is ours: it calls the layers'
norms, projections and MLPs in LeRobot's order, with its dtype casts, so that the same weights
give the same numbers, in float32 and in LeRobot's bfloat16 layout alike.

Layer i of the VLM is paired with expert layer i // stride when i is a multiple of
stride = num_vlm_layers / num_expert_layers (otherwise the expert skips it). Each pair is either
- a self-attention layer (i % self_attn_every_n_layers == 0, or every layer in "self_attn"
  mode): VLM and expert tokens attend together over the concatenated sequence; or
- a cross-attention layer: the VLM tokens attend among themselves, and the expert's queries
  attend to the VLM's (rotated) keys and values, passed through the expert's own k/v projections.

Three passes use these layers:
- `fill_prefix_cache`: the VLM alone over the prefix (images, instruction, state); keeps every
  layer's keys and values. Run once per action chunk.
- `denoise`: the expert alone over the noisy actions, reading the cache. Run num_steps times.
- `joint_forward`: both at once, without cache (training).

Tensors are (batch, tokens, heads, head_dim) inside the layers, as in LeRobot.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import Tensor, nn

ROPE_MAX_WAVELENGTH = 10_000
"""SmolVLA's own rotary embedding uses this base, whatever rope_theta the VLM config says."""


def expert_intermediate_size(hidden_size: int, ffn_multiplier: int = 4, multiple_of: int = 256) -> int:
    """The expert MLP's width: 4 x (2/3 x hidden), rounded up to a multiple of 256."""
    width = int(ffn_multiplier * int(2 * hidden_size / 3))
    return multiple_of * ((width + multiple_of - 1) // multiple_of)


def apply_rope(x: Tensor, positions: Tensor) -> Tensor:
    """Rotate x (B, L, H, D) by token positions (B, L), in float32, halves (not pairs) rotated."""
    half = x.shape[-1] // 2
    dtype = x.dtype
    x = x.to(torch.float32)
    exponents = (2.0 / x.shape[-1]) * torch.arange(half, dtype=torch.float32, device=x.device)
    timescale = ROPE_MAX_WAVELENGTH**exponents
    radians = positions[..., None].to(torch.float32) / timescale[None, None, :].to(torch.float32)
    radians = radians[..., None, :]
    sin, cos = torch.sin(radians), torch.cos(radians)
    x1, x2 = x.split(half, dim=-1)
    rotated = torch.empty_like(x)
    rotated[..., :half] = x1 * cos - x2 * sin
    rotated[..., half:] = x2 * cos + x1 * sin
    return rotated.to(dtype)


@dataclass
class PrefixCache:
    """Per VLM layer, the prefix's keys (after RoPE) and values, each (B, L, kv_heads, D)."""

    keys: list[Tensor]
    values: list[Tensor]


class SmolVLMWithExpertModel(nn.Module):
    """The VLM (`vlm`) and the action expert (`lm_expert`); see the module docstring."""

    def __init__(
        self,
        vlm_config,
        num_vlm_layers: int,
        num_expert_layers: int,
        expert_width_multiplier: float,
        attention_mode: str,
        self_attn_every_n_layers: int,
    ):
        super().__init__()
        from transformers import AutoModel, SmolVLMForConditionalGeneration

        vlm_config = copy.deepcopy(vlm_config)
        text = vlm_config.text_config
        text.num_hidden_layers = min(num_vlm_layers, text.num_hidden_layers)
        self.vlm = SmolVLMForConditionalGeneration(vlm_config)
        self.num_vlm_layers = text.num_hidden_layers
        expert_config = copy.deepcopy(text)
        expert_config.hidden_size = int(text.hidden_size * expert_width_multiplier)
        expert_config.intermediate_size = expert_intermediate_size(expert_config.hidden_size)
        expert_config.num_hidden_layers = num_expert_layers if num_expert_layers > 0 else self.num_vlm_layers
        self.lm_expert = AutoModel.from_config(expert_config)
        # SmolVLA rotates with its own RoPE and embeds tokens with the VLM's table: the decoders'
        # rotary modules and the expert's token embedding are never used (and never saved).
        self.lm_expert.embed_tokens = None
        self.lm_expert.rotary_emb = None
        self.vlm.model.text_model.rotary_emb = None
        self.attention_mode = attention_mode
        self.self_attn_every_n_layers = self_attn_every_n_layers
        self.num_attention_heads = text.num_attention_heads
        self.num_key_value_heads = text.num_key_value_heads
        self.head_dim = text.head_dim
        self.expert_hidden_size = expert_config.hidden_size
        self._replace_cross_attention_kv(text, expert_config)

    def _replace_cross_attention_kv(self, text_config, expert_config) -> None:
        """Cross-attention expert layers project the VLM's keys and values, not their own tokens."""
        vlm_kv = text_config.num_key_value_heads * text_config.head_dim
        expert_kv = expert_config.num_key_value_heads * expert_config.head_dim
        for index in self.cross_expert_layers():
            attention = self.lm_expert.layers[index].self_attn
            attention.k_proj = nn.Linear(vlm_kv, expert_kv, bias=expert_config.attention_bias)
            attention.v_proj = nn.Linear(vlm_kv, expert_kv, bias=expert_config.attention_bias)

    def cross_expert_layers(self) -> list[int]:
        """Indices of the expert layers whose k/v projections read the VLM's keys and values."""
        if "cross" not in self.attention_mode:
            return []
        every = self.self_attn_every_n_layers
        return [i for i in range(len(self.lm_expert.layers)) if not (every > 0 and i % every == 0)]

    @property
    def text_model(self):
        return self.vlm.model.text_model

    def is_self_attention_layer(self, vlm_layer: int) -> bool:
        every = self.self_attn_every_n_layers
        return "cross" not in self.attention_mode or (every > 0 and vlm_layer % every == 0)

    def expert_layer(self, vlm_layer: int) -> nn.Module | None:
        """The expert layer paired with VLM layer `vlm_layer`, or None where the expert skips it."""
        stride = self.num_vlm_layers // len(self.lm_expert.layers)
        if stride > 0 and vlm_layer > 0 and vlm_layer % stride != 0:
            return None
        return self.lm_expert.layers[vlm_layer // stride if stride > 0 else vlm_layer]

    def embed_image(self, image: Tensor) -> Tensor:
        """(B, 3, H, W) in [-1, 1] -> (B, tokens, text hidden) through SigLIP and the connector."""
        vision = self.vlm.model.vision_model
        hidden = vision(
            pixel_values=image.to(dtype=vision.dtype), patch_attention_mask=None
        ).last_hidden_state
        return self.vlm.model.connector(hidden)

    def embed_language_tokens(self, tokens: Tensor) -> Tensor:
        return self.text_model.get_input_embeddings()(tokens)

    # -- the three passes --------------------------------------------------------------------

    def fill_prefix_cache(self, prefix: Tensor, mask: Tensor, positions: Tensor) -> PrefixCache:
        """Run the VLM over the prefix; keep each layer's keys and values.

        The last layer's attention output, MLP and the final norm feed nothing the expert reads,
        so they are skipped.
        """
        cache = PrefixCache([], [])
        hidden = prefix
        for index, layer in enumerate(self.text_model.layers):
            query, key, value = self._project_qkv(layer, hidden)
            query, key = apply_rope(query, positions), apply_rope(key, positions)
            cache.keys.append(key)
            cache.values.append(value)
            if index < self.num_vlm_layers - 1:
                hidden = _finish_layer(layer, self.attend(query, key, value, mask), hidden)
        return cache

    def denoise(
        self, suffix: Tensor, cache: PrefixCache, mask: Tensor, positions: Tensor, cond: Tensor | None = None
    ) -> Tensor:
        """The expert over the suffix tokens, attending to the cached prefix; normed output.

        `mask` is (B, suffix, prefix + suffix); `positions` continue after the prefix's. `cond`
        is always None: SmolVLA's expert norms take no condition (flow/'s `FlowBackbone`).
        """
        hidden = suffix
        prefix_len = cache.keys[0].shape[1]
        for index in range(self.num_vlm_layers):
            expert = self.expert_layer(index)
            if expert is None:
                continue
            if self.is_self_attention_layer(index):
                query, key, value = self._project_qkv(expert, hidden)
                query, key = apply_rope(query, positions), apply_rope(key, positions)
                key = torch.cat([cache.keys[index], key], dim=1)
                value = torch.cat([cache.values[index], value], dim=1)
                attended = self.attend(query, key, value, mask)
            else:
                attended = self._cross_attend(
                    expert, hidden, cache.keys[index], cache.values[index], mask[:, :, :prefix_len], positions
                )
            hidden = _finish_layer(expert, attended, hidden)
        return self.lm_expert.norm(hidden)

    def joint_forward(
        self, prefix: Tensor, suffix: Tensor, mask: Tensor, positions: Tensor, cond: Tensor | None = None
    ) -> Tensor:
        """VLM and expert together without a cache (training); the expert's normed output
        (`cond` as in `denoise`)."""
        prefix_len, suffix_len = prefix.shape[1], suffix.shape[1]
        for index, layer in enumerate(self.text_model.layers):
            expert = self.expert_layer(index)
            if self.is_self_attention_layer(index):
                prefix_out, suffix_out = self._joint_self_attention(
                    layer, expert, prefix, suffix, mask, positions
                )
            else:
                query, key, value = self._project_qkv(layer, prefix)
                prefix_positions = positions[:, :prefix_len]
                query, key = apply_rope(query, prefix_positions), apply_rope(key, prefix_positions)
                prefix_out = self.attend(query, key, value, mask[:, :prefix_len, :prefix_len])
                suffix_out = None
                if expert is not None:
                    suffix_out = self._cross_attend(
                        expert,
                        suffix,
                        key,
                        value,
                        mask[:, -suffix_len:, :prefix_len],
                        positions[:, prefix_len:],
                    )
            prefix = _finish_layer(layer, prefix_out, prefix)
            if expert is not None:
                suffix = _finish_layer(expert, suffix_out, suffix)
        return self.lm_expert.norm(suffix)

    # -- building blocks ----------------------------------------------------------------------

    def _joint_self_attention(
        self,
        layer: nn.Module,
        expert: nn.Module | None,
        prefix: Tensor,
        suffix: Tensor,
        mask: Tensor,
        positions: Tensor,
    ) -> tuple[Tensor, Tensor | None]:
        """One attention over [prefix; suffix] tokens, each projected by its own layer."""
        parts = [self._project_qkv(layer, prefix)]
        if expert is not None:
            parts.append(self._project_qkv(expert, suffix))
        query, key, value = (torch.cat(tensors, dim=1) for tensors in zip(*parts, strict=True))
        length = query.shape[1]
        positions, mask = positions[:, :length], mask[:, :length, :length]
        query, key = apply_rope(query, positions), apply_rope(key, positions)
        attended = self.attend(query, key, value, mask)
        prefix_len = prefix.shape[1]
        return attended[:, :prefix_len], (attended[:, prefix_len:] if expert is not None else None)

    def _cross_attend(
        self,
        expert: nn.Module,
        hidden: Tensor,
        vlm_keys: Tensor,
        vlm_values: Tensor,
        mask: Tensor,
        positions: Tensor,
    ) -> Tensor:
        """Expert queries over the VLM's keys and values, re-projected by the expert layer.

        The expert's positions restart at 0: its queries are rotated as a sequence of their own.
        """
        attention = expert.self_attn
        normed = expert.input_layernorm(hidden)
        normed = normed.to(dtype=attention.q_proj.weight.dtype)
        query = attention.q_proj(normed).view(*normed.shape[:-1], -1, attention.head_dim)
        keys = vlm_keys.to(dtype=attention.k_proj.weight.dtype).reshape(*vlm_keys.shape[:2], -1)
        keys = attention.k_proj(keys).view(*keys.shape[:-1], -1, attention.head_dim)
        values = vlm_values.to(dtype=attention.v_proj.weight.dtype).reshape(*vlm_values.shape[:2], -1)
        values = attention.v_proj(values).view(*values.shape[:-1], -1, attention.head_dim)
        positions = positions - torch.min(positions, dim=1, keepdim=True).values
        return self.attend(apply_rope(query, positions), keys, values, mask)

    @staticmethod
    def _project_qkv(layer: nn.Module, hidden: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Pre-norm, then queries, keys and values as (B, L, heads, head_dim)."""
        attention = layer.self_attn
        normed = layer.input_layernorm(hidden)
        shape = (*normed.shape[:-1], -1, attention.head_dim)
        normed = normed.to(dtype=attention.q_proj.weight.dtype)
        return (
            attention.q_proj(normed).view(shape),
            attention.k_proj(normed).view(shape),
            attention.v_proj(normed).view(shape),
        )

    def attend(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor) -> Tensor:
        """Grouped-query attention with scores in float32; (B, Lq, heads * head_dim).

        Masked scores take float32's lowest value (exactly zero weight after the softmax), and
        the scale is applied to the scores after the product, as LeRobot does.
        """
        batch, length = key.shape[:2]
        groups = self.num_attention_heads // self.num_key_value_heads
        key = _repeat_kv(key, groups)
        value = _repeat_kv(value, groups)
        query = query.to(dtype=torch.float32).transpose(1, 2)
        key = key.to(dtype=torch.float32).transpose(1, 2)
        scores = torch.matmul(query, key.transpose(2, 3))
        scores *= self.head_dim**-0.5
        scores = scores.to(dtype=torch.float32)  # autocast (--policy.use_amp) multiplies in half precision
        scores = torch.where(mask[:, None, :, :], scores, torch.finfo(torch.float32).min)
        probs = nn.functional.softmax(scores, dim=-1).to(dtype=value.dtype)
        out = torch.matmul(probs, value.permute(0, 2, 1, 3)).permute(0, 2, 1, 3)
        return out.reshape(batch, -1, self.num_attention_heads * self.head_dim)


def _repeat_kv(states: Tensor, groups: int) -> Tensor:
    """(B, L, kv_heads, D) -> (B, L, kv_heads * groups, D), each kv head repeated `groups` times."""
    batch, length, heads, dim = states.shape
    return states[:, :, :, None, :].expand(batch, length, heads, groups, dim).reshape(batch, length, -1, dim)


def _finish_layer(layer: nn.Module, attended: Tensor, residual: Tensor) -> Tensor:
    """Output projection, residual, post-norm MLP and its residual (in place, as LeRobot adds)."""
    out_proj = layer.self_attn.o_proj
    if attended.dtype != out_proj.weight.dtype:
        attended = attended.to(out_proj.weight.dtype)
    out = out_proj(attended)
    out += residual
    after_attention = out.clone()
    out = layer.post_attention_layernorm(out)
    out = layer.mlp(out)
    out += after_attention
    return out
