"""PaliGemma (SigLIP + Gemma) and an action-expert Gemma, joined layer by layer: the network of
π0 and π0.5.

Module and parameter names are those of LeRobot's `PaliGemmaWithExpertModel`
(`paligemma.model.language_model.layers.0.self_attn.q_proj.weight`,
`gemma_expert.model.layers.0.input_layernorm.dense.weight`, `paligemma.lm_head.weight`, ...),
so its model.safetensors loads with strict keys. SigLIP is transformers' own module, built from
a config; the Gemma layers are plain linear layers and norms, and the layer loop is ours: it
follows the arithmetic LeRobot 0.6.1 runs through transformers 5 (Gemma's eager attention with an
additive mask, rotary embedding in float32 cast to the hidden dtype, "1 + weight" RMS norms, the
expert's adaptive norms and gated residuals in π0.5, and the dtype casts of its bfloat16 layout),
so the same weights give the same numbers.

Three passes use the layers:
- `fill_prefix_cache`: the VLM alone over the prefix (images, instruction); keeps every layer's
  rotated keys and values. Run once per action chunk.
- `denoise`: the expert alone over its tokens, attending to the cache and to itself. Run
  num_inference_steps times per chunk.
- `joint_forward`: both at once, one attention over the concatenated tokens (training).

Tensors are (batch, heads, tokens, head_dim) inside attention, as in transformers.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from lerobot.policies.pi.configuration import GEMMA_VARIANTS, VISION_TOWERS, GemmaVariant, SiglipSize

ATTENTION_MASK_VALUE = -2.3819763e38
"""openpi's additive mask value (LeRobot's OPENPI_ATTENTION_MASK_VALUE)."""
ROPE_BASE = 10_000.0
RMS_NORM_EPS = 1e-6
INIT_STD = 0.02
FLOAT32_PARTS = (
    "vision_tower",
    "multi_modal_projector",
    "input_layernorm",
    "post_attention_layernorm",
    "model.norm",
)
"""In LeRobot's bfloat16 layout these parameters stay float32 (matched as substrings of names)."""

Cache = list[tuple[Tensor, Tensor]]
"""Per VLM layer, the prefix's (keys after RoPE, values), each (B, kv_heads, L, head_dim)."""


class RMSNorm(nn.Module):
    """Gemma's RMS norm: x / rms(x) * (1 + weight), computed in float32, returned in x's dtype."""

    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x: Tensor, cond: Tensor | None = None) -> tuple[Tensor, None]:
        normed = _rms_normalize(x) * (1.0 + self.weight.float())
        return normed.type_as(x), None


class AdaptiveRMSNorm(nn.Module):
    """π0.5's adaRMS: scale, shift and a residual gate computed from a condition (the
    flow-matching time's embedding) instead of a learnt weight."""

    def __init__(self, dim: int, cond_dim: int):
        super().__init__()
        self.dense = nn.Linear(cond_dim, dim * 3)
        nn.init.zeros_(self.dense.weight)
        nn.init.zeros_(self.dense.bias)

    def forward(self, x: Tensor, cond: Tensor | None = None) -> tuple[Tensor, Tensor]:
        if cond is None:
            raise ValueError("an adaptive RMS norm needs its condition (the time embedding)")
        modulation = self.dense(cond)
        if x.ndim == 3:
            modulation = modulation.unsqueeze(1)
        scale, shift, gate = modulation.chunk(3, dim=-1)
        normed = _rms_normalize(x) * (1 + scale.float()) + shift.float()
        return normed.to(x.dtype), gate.to(x.dtype)


def _rms_normalize(x: Tensor) -> Tensor:
    """x / sqrt(mean(x^2) + eps), the mean in float32 (the product promotes to float32)."""
    variance = torch.mean(torch.square(x.float()), dim=-1, keepdim=True)
    return x * torch.rsqrt(variance + RMS_NORM_EPS)


class GemmaAttention(nn.Module):
    def __init__(self, variant: GemmaVariant):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = (
            variant.num_heads,
            variant.num_kv_heads,
            variant.head_dim,
        )
        self.q_proj = nn.Linear(variant.width, variant.num_heads * variant.head_dim, bias=False)
        self.k_proj = nn.Linear(variant.width, variant.num_kv_heads * variant.head_dim, bias=False)
        self.v_proj = nn.Linear(variant.width, variant.num_kv_heads * variant.head_dim, bias=False)
        self.o_proj = nn.Linear(variant.num_heads * variant.head_dim, variant.width, bias=False)

    def project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Queries, keys and values as (B, heads, L, head_dim)."""
        shape = (*x.shape[:-1], -1, self.head_dim)
        return tuple(proj(x).view(shape).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj))


class GemmaMLP(nn.Module):
    def __init__(self, variant: GemmaVariant):
        super().__init__()
        self.gate_proj = nn.Linear(variant.width, variant.mlp_dim, bias=False)
        self.up_proj = nn.Linear(variant.width, variant.mlp_dim, bias=False)
        self.down_proj = nn.Linear(variant.mlp_dim, variant.width, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


class GemmaLayer(nn.Module):
    def __init__(self, variant: GemmaVariant, adaptive: bool):
        super().__init__()
        self.self_attn = GemmaAttention(variant)
        self.mlp = GemmaMLP(variant)
        self.input_layernorm = _norm(variant.width, adaptive)
        self.post_attention_layernorm = _norm(variant.width, adaptive)


class GemmaStack(nn.Module):
    """Gemma's decoder layers and final norm (and, for the VLM, its token embedding)."""

    def __init__(self, variant: GemmaVariant, adaptive: bool = False, embeddings: bool = True):
        super().__init__()
        self.embed_tokens = nn.Embedding(variant.vocab_size, variant.width) if embeddings else None
        self.layers = nn.ModuleList(GemmaLayer(variant, adaptive) for _ in range(variant.depth))
        self.norm = _norm(variant.width, adaptive)
        self.width = variant.width


def _norm(width: int, adaptive: bool) -> nn.Module:
    return AdaptiveRMSNorm(width, width) if adaptive else RMSNorm(width)


class GemmaWithHead(nn.Module):
    """A decoder with its LM head. π never reads the heads, but checkpoints hold them (and
    LeRobot loads them strictly), so they are kept."""

    def __init__(self, variant: GemmaVariant, adaptive: bool = False, embeddings: bool = True):
        super().__init__()
        self.model = GemmaStack(variant, adaptive, embeddings)
        self.lm_head = nn.Linear(variant.width, variant.vocab_size, bias=False)


class MultiModalProjector(nn.Module):
    def __init__(self, vision_width: int, text_width: int):
        super().__init__()
        self.linear = nn.Linear(vision_width, text_width)


class PaliGemmaBackbone(nn.Module):
    def __init__(self, variant: GemmaVariant, tower: SiglipSize, image_size: int):
        super().__init__()
        self.vision_tower = build_siglip(tower, image_size)
        self.multi_modal_projector = MultiModalProjector(tower.hidden, variant.width)
        self.language_model = GemmaStack(variant)


class PaliGemma(nn.Module):
    def __init__(self, variant: GemmaVariant, tower: SiglipSize, image_size: int):
        super().__init__()
        self.model = PaliGemmaBackbone(variant, tower, image_size)
        self.lm_head = nn.Linear(variant.width, variant.vocab_size, bias=False)


def build_siglip(tower: SiglipSize, image_size: int) -> nn.Module:
    """transformers' SigLIP vision model, as PaliGemma builds it (no pooling head)."""
    from transformers import SiglipVisionConfig, SiglipVisionModel

    config = SiglipVisionConfig(
        hidden_size=tower.hidden,
        intermediate_size=tower.intermediate,
        num_hidden_layers=tower.layers,
        num_attention_heads=tower.heads,
        patch_size=tower.patch,
        image_size=image_size,
        vision_use_head=False,
    )
    return SiglipVisionModel(config)


class PaliGemmaWithExpert(nn.Module):
    """The VLM (`paligemma`) and the action expert (`gemma_expert`); see the module docstring."""

    def __init__(
        self, vlm_variant: str, expert_variant: str, image_size: int, adaptive_expert: bool, dtype: str
    ):
        super().__init__()
        vlm, expert = GEMMA_VARIANTS[vlm_variant], GEMMA_VARIANTS[expert_variant]
        self.paligemma = PaliGemma(vlm, VISION_TOWERS[vlm_variant], image_size)
        self.gemma_expert = GemmaWithHead(expert, adaptive=adaptive_expert, embeddings=False)
        self.head_dim = vlm.head_dim
        self.gradient_checkpointing = False
        _init_gemma_weights(self)
        self.set_dtype(dtype)

    def set_dtype(self, dtype: str) -> None:
        """float32 throughout, or LeRobot's bfloat16 layout (see FLOAT32_PARTS)."""
        if dtype == "float32":
            self.to(torch.float32)
            return
        self.to(torch.bfloat16)
        for name, param in self.named_parameters():
            if any(part in name for part in FLOAT32_PARTS):
                param.data = param.data.to(torch.float32)

    def reset_buffers(self) -> None:
        """SigLIP's position ids, the one buffer not saved in checkpoints (after `to_empty`)."""
        embeddings = self.paligemma.model.vision_tower.vision_model.embeddings
        device = embeddings.position_embedding.weight.device
        embeddings.position_ids = torch.arange(embeddings.num_positions, device=device).expand((1, -1))

    @property
    def language_model(self) -> GemmaStack:
        return self.paligemma.model.language_model

    @property
    def expert(self) -> GemmaStack:
        return self.gemma_expert.model

    def embed_image(self, image: Tensor) -> Tensor:
        """(B, 3, H, W) in [-1, 1] -> (B, patches, VLM width): SigLIP, then the projection
        (unscaled, as transformers 5's PaliGemma returns it), in float32."""
        dtype = image.dtype
        hidden = self.paligemma.model.vision_tower(pixel_values=image.to(torch.float32)).last_hidden_state
        features = self.paligemma.model.multi_modal_projector.linear(hidden)
        return features.to(dtype)

    def embed_language_tokens(self, tokens: Tensor) -> Tensor:
        """Token embeddings times sqrt(width) (Gemma's scaled embedding), in the table's dtype."""
        table = self.language_model.embed_tokens.weight
        scale = torch.tensor(self.language_model.width**0.5, dtype=torch.float32).to(table.dtype)
        return F.embedding(tokens, table) * scale

    # -- the three passes --------------------------------------------------------------------

    def fill_prefix_cache(self, prefix: Tensor, mask: Tensor, positions: Tensor) -> Cache:
        """Run the VLM over the prefix; keep each layer's keys and values. The last layer's
        attention output and MLP feed nothing the expert reads, so they are skipped.

        `mask` is additive, (B, 1, L, L); `positions` (B, L).
        """
        layers = self.language_model.layers
        hidden = _to_layer_dtype(prefix, layers[0])
        cos, sin = self.rotary(positions, hidden.dtype, hidden.device)
        cache: Cache = []
        for index, layer in enumerate(layers):
            normed, _ = layer.input_layernorm(hidden)
            query, key, value = layer.self_attn.project(normed)
            query, key = apply_rope(query, cos, sin), apply_rope(key, cos, sin)
            cache.append((key, value))
            if index == len(layers) - 1:
                break
            attended = self.attend(query, key, value, mask)
            hidden = hidden + layer.self_attn.o_proj(attended)
            normed, _ = layer.post_attention_layernorm(hidden)
            hidden = hidden + layer.mlp(normed)
        return cache

    def denoise(
        self, suffix: Tensor, cache: Cache, mask: Tensor, positions: Tensor, cond: Tensor | None
    ) -> Tensor:
        """The expert over its tokens, attending to the cached prefix and to itself; normed output.

        `mask` is additive, (B, 1, suffix, prefix + suffix); `positions` continue the prefix's.
        """
        hidden = _to_layer_dtype(suffix, self.expert.layers[0])
        cos, sin = self.rotary(positions, hidden.dtype, hidden.device)
        for layer, (prefix_keys, prefix_values) in zip(self.expert.layers, cache, strict=True):
            normed, gate = layer.input_layernorm(hidden, cond)
            query, key, value = layer.self_attn.project(normed)
            query, key = apply_rope(query, cos, sin), apply_rope(key, cos, sin)
            key = torch.cat([prefix_keys, key], dim=2)
            value = torch.cat([prefix_values, value], dim=2)
            hidden = gated_residual(
                hidden, layer.self_attn.o_proj(self.attend(query, key, value, mask)), gate
            )
            normed, gate = layer.post_attention_layernorm(hidden, cond)
            hidden = gated_residual(hidden, layer.mlp(normed), gate)
        return self.expert.norm(hidden, cond)[0]

    def joint_forward(
        self, prefix: Tensor, suffix: Tensor, mask: Tensor, positions: Tensor, cond: Tensor | None
    ) -> Tensor:
        """VLM and expert together without a cache (training); the expert's normed output.

        Both parts enter in the VLM's first layer's dtype (LeRobot's bfloat16 layout casts them).
        """
        first = self.language_model.layers[0]
        hidden = [_to_layer_dtype(prefix, first), _to_layer_dtype(suffix, first)]
        conds = [None, cond]
        for pair in zip(self.language_model.layers, self.expert.layers, strict=True):
            if self.gradient_checkpointing and self.training:
                hidden = checkpoint(
                    self._joint_layer, pair, hidden, mask, positions, conds, use_reentrant=False
                )
            else:
                hidden = self._joint_layer(pair, hidden, mask, positions, conds)
        return self.expert.norm(hidden[1], cond)[0]

    def _joint_layer(
        self,
        layers: tuple[GemmaLayer, GemmaLayer],
        hidden: list[Tensor],
        mask: Tensor,
        positions: Tensor,
        conds: list[Tensor | None],
    ) -> list[Tensor]:
        """One attention over [prefix; suffix], each part projected by its own layer."""
        parts, gates = [], []
        for layer, states, cond in zip(layers, hidden, conds, strict=True):
            normed, gate = layer.input_layernorm(states, cond)
            parts.append(layer.self_attn.project(normed))
            gates.append(gate)
        query, key, value = (torch.cat(tensors, dim=2) for tensors in zip(*parts, strict=True))
        cos, sin = self.rotary(positions, query.dtype, query.device)
        query, key = apply_rope(query, cos, sin), apply_rope(key, cos, sin)
        attended = self.attend(query, key, value, mask)
        out, start = [], 0
        for layer, states, gate, cond in zip(layers, hidden, gates, conds, strict=True):
            end = start + states.shape[1]
            attention_out = layer.self_attn.o_proj(
                attended[:, start:end].to(layer.self_attn.o_proj.weight.dtype)
            )
            states = gated_residual(states, attention_out, gate)
            normed, gate = layer.post_attention_layernorm(states, cond)
            if layer.mlp.up_proj.weight.dtype == torch.bfloat16:
                normed = normed.to(torch.bfloat16)
            out.append(gated_residual(states, layer.mlp(normed), gate))
            start = end
        return out

    # -- building blocks ----------------------------------------------------------------------

    def rotary(self, positions: Tensor, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor]:
        """(cos, sin), each (B, L, head_dim), of Gemma's rotary embedding at `positions`.

        The inverse frequencies are stored in the layers' dtype, as LeRobot's bfloat16 layout
        leaves transformers' `inv_freq` buffer (it is cast with the module).
        """
        inverse = _inverse_frequencies(
            self.head_dim, self.language_model.layers[0].self_attn.q_proj.weight.dtype
        )
        freqs = positions[:, :, None].float() * inverse.to(device)[None, None, :]
        angles = torch.cat([freqs, freqs], dim=-1)
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def attend(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor) -> Tensor:
        """Gemma's eager attention with an additive mask; (B, Lq, heads * head_dim).

        Scores are scaled after the product, the mask is added (promoting bfloat16 scores to
        float32), the softmax is taken in float32 and cast back to the queries' dtype.
        """
        groups = query.shape[1] // key.shape[1]
        key, value = _repeat_kv(key, groups), _repeat_kv(value, groups)
        scores = torch.matmul(query, key.transpose(2, 3)) * self.head_dim**-0.5
        scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
        out = torch.matmul(probs, value).transpose(1, 2).contiguous()
        return out.reshape(*out.shape[:2], -1)


def additive_mask(allowed: Tensor) -> Tensor:
    """(B, Lq, Lk) booleans -> (B, 1, Lq, Lk) float32: 0 where allowed, openpi's large negative
    value elsewhere."""
    return torch.where(allowed[:, None, :, :], 0.0, ATTENTION_MASK_VALUE)


def gated_residual(residual: Tensor, update: Tensor, gate: Tensor | None) -> Tensor:
    return residual + update if gate is None else residual + update * gate


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate (B, H, L, D) by (B, L, D) cos/sin, halves (not pairs) rotated, in x's dtype."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return (x * cos) + (rotated * sin)


@functools.lru_cache(maxsize=8)
def _inverse_frequencies(head_dim: int, dtype: torch.dtype) -> Tensor:
    """1 / base^(2i/d), computed in float32 on the CPU (as transformers does), held in `dtype`
    and returned as float32."""
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).to(dtype=torch.float) / head_dim
    return (1.0 / (ROPE_BASE**exponents)).to(dtype).float()


def _repeat_kv(states: Tensor, groups: int) -> Tensor:
    """(B, kv_heads, L, D) -> (B, kv_heads * groups, L, D)."""
    if groups == 1:
        return states
    batch, heads, length, dim = states.shape
    return (
        states[:, :, None]
        .expand(batch, heads, groups, length, dim)
        .reshape(batch, heads * groups, length, dim)
    )


def _to_layer_dtype(hidden: Tensor, first_layer: GemmaLayer) -> Tensor:
    """LeRobot casts a decoder's input to bfloat16 when its first layer is bfloat16."""
    if first_layer.self_attn.q_proj.weight.dtype == torch.bfloat16:
        return hidden.to(torch.bfloat16)
    return hidden


def _init_gemma_weights(model: PaliGemmaWithExpert) -> None:
    """A fresh model's Gemma weights: normal(0, 0.02) projections and embeddings (transformers'
    Gemma initialisation), norms at identity. SigLIP keeps transformers' own initialisation."""
    for name, module in model.named_modules():
        if "vision_tower" in name:
            continue
        if isinstance(module, nn.Linear) and not name.endswith(".dense"):
            nn.init.normal_(module.weight, std=INIT_STD)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=INIT_STD)
