"""Action Chunking Transformer (Zhao et al., 2023, arXiv:2304.13705).

Module and parameter names match LeRobot's `ACTPolicy` (`model.backbone.layer1.0.conv1.weight`,
`model.encoder.layers.0.self_attn.in_proj_weight`, ...) so its model.safetensors loads with
strict keys, and the arithmetic follows it step by step so the same weights give the same
actions. Inputs arrive normalised (the preprocessor's job) and actions leave normalised.

Training (`forward`) follows the paper: the VAE encoder reads [CLS, state, action chunk] and
gives the latent's mean and log-variance; the decoder reconstructs the chunk from a sampled
latent; the loss is L1 over non-padded actions plus `kl_weight` times the KL divergence to a
unit Gaussian. Inference uses the zero latent, unchanged.

Token layout of the transformer encoder, sequence first (S, B, D):
    [latent, (robot state), (env state), (camera 1 feature-map pixels), (camera 2 ...), ...]
The decoder turns `chunk_size` zero queries (plus learned positions) into the action chunk.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from lerobot.policies.act.configuration_act import ACTConfig
from lerobot.policies.action_queue import RowActionQueue, batch_size, select_rows
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.resnet import FrozenBatchNorm2d, feature_channels, resnet_trunk
from lerobot.utils.constants import ACTION, ACTION_IS_PAD, OBS_ENV_STATE, OBS_STATE
from lerobot.utils.not_in_this_build import refused_names

BACKBONE_PREFIX = "model.backbone"


class ACTPolicy(PreTrainedPolicy):
    """Executes `n_action_steps` of each predicted chunk per row, or, with temporal
    ensembling, predicts every step and averages the overlapping chunks per row."""

    config_class = ACTConfig
    name = "act"

    def __init__(self, config: ACTConfig):
        super().__init__(config)
        self.model = ACT(config)
        self._queue = RowActionQueue()
        self._ensembler = (
            TemporalEnsembler(config.temporal_ensemble_coeff, config.chunk_size)
            if config.temporal_ensemble_coeff is not None
            else None
        )

    def get_optim_params(self) -> list[dict[str, Any]]:
        """LeRobot's two groups: the ResNet backbone at `optimizer_lr_backbone`, the rest at the
        optimizer's rate."""
        named = [(n, p) for n, p in self.named_parameters() if p.requires_grad]
        in_backbone = [n.startswith(BACKBONE_PREFIX) for n, _ in named]
        return [
            {"params": [p for (_, p), inside in zip(named, in_backbone, strict=True) if not inside]},
            {
                "params": [p for (_, p), inside in zip(named, in_backbone, strict=True) if inside],
                "lr": self.config.optimizer_lr_backbone,
            },
        ]

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the queued or ensembled actions of `env_ids`; ACT draws no random numbers."""
        if self._ensembler is not None:
            self._ensembler.reset(env_ids)
        self._queue.reset(env_ids)

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        ensembled = self._ensembler.save(rows) if self._ensembler is not None else [None] * len(rows)
        return list(zip(self._queue.save(rows), ensembled, strict=True))

    def restore_rows(self, states: Sequence[Any]) -> None:
        states = [state if state is not None else (None, None) for state in states]
        self._queue.restore([queued for queued, _ in states])
        if self._ensembler is not None:
            self._ensembler.restore([ensembled for _, ensembled in states])

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Training loss for a normalised batch with `action` (B, chunk_size, A) and
        `action_is_pad` (B, chunk_size); returns (loss, {"l1_loss", "kld_loss"})."""
        images = [batch[key] for key in self.config.image_features]
        latent, mu, log_sigma_x2 = None, None, None
        if self.config.use_vae:
            latent, mu, log_sigma_x2 = self.model.encode_latent(batch)
        predicted = self.model(batch, images, latent=latent)
        # The mean over real (not padded) action steps and dimensions, as LeRobot 0.6.1 takes it.
        valid = (~batch[ACTION_IS_PAD]).unsqueeze(-1)
        errors = F.l1_loss(batch[ACTION], predicted, reduction="none") * valid
        l1 = errors.sum() / (valid.sum() * errors.shape[-1]).clamp_min(1)
        info = {"l1_loss": float(l1.detach())}
        if mu is None:
            return l1, info
        kld = (-0.5 * (1 + log_sigma_x2 - mu.pow(2) - log_sigma_x2.exp())).sum(-1).mean()
        info["kld_loss"] = float(kld.detach())
        return l1 + self.config.kl_weight * kld, info

    @torch.no_grad()
    def predict_action_chunk(self, batch: dict[str, Tensor]) -> Tensor:
        """(B, chunk_size, action_dim) normalised actions for a normalised batch."""
        images = [batch[key] for key in self.config.image_features]
        return self.model(batch, images)

    def actions_without_observation(self, n_rows: int) -> Tensor | None:
        """The queued actions while every row is inside its chunk (temporal ensembling reads
        every observation: never)."""
        if self._ensembler is not None or self._queue.empty_rows(n_rows):
            return None
        return self._queue.pop()

    def take_queued_actions(self, n_rows: int) -> list[Tensor] | None:
        """Each row's rest of chunk (temporal ensembling reads every observation: never)."""
        if self._ensembler is not None:
            return None
        return self._queue.take_rest(n_rows)

    def rows_reading_images(self, n_rows: int) -> list[int]:
        """Rows at the end of their chunk (temporal ensembling reads every frame: all rows)."""
        return list(range(n_rows)) if self._ensembler is not None else self._queue.empty_rows(n_rows)

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor]) -> Tensor:
        if self._ensembler is not None:
            return self._ensembler.update(self.predict_action_chunk(batch))
        n_rows = batch_size(batch)
        rows = self._queue.empty_rows(n_rows)
        if rows:
            chunk = self.predict_action_chunk(select_rows(batch, rows, n_rows))
            self._queue.fill(rows, chunk[:, : self.config.n_action_steps], n_rows)
        return self._queue.pop()


class TemporalEnsembler:
    """Algorithm 2 of the ACT paper, per batch row.

    Each step every row gets a new chunk; the action for step t is the weighted average of
    all predictions made for t so far, with weight exp(-coeff * i) for the i-th oldest. The
    running average is updated online, in the same order of operations as LeRobot's
    `ACTTemporalEnsembler`, so results agree to the last bit. Row state (running averages
    `average` and prediction counts `count`) restarts when a row is reset.
    """

    def __init__(self, coeff: float, chunk_size: int):
        self.chunk_size = chunk_size
        self.weights = torch.exp(-coeff * torch.arange(chunk_size))
        self.weights_cumsum = torch.cumsum(self.weights, dim=0)
        self.average: Tensor | None = None  # (B, chunk_size - 1, action_dim)
        self.count: Tensor | None = None  # (B, chunk_size - 1, 1), predictions averaged so far
        self.fresh: Tensor | None = None  # (B,), rows whose next chunk starts a new average

    def reset(self, rows: Sequence[int] | None = None) -> None:
        if rows is None or self.fresh is None:
            self.average = self.count = self.fresh = None
            return
        self.fresh[torch.as_tensor(list(rows), device=self.fresh.device)] = True

    def save(self, rows: Sequence[int]) -> list[tuple[Tensor, Tensor] | None]:
        """Each row's running average and counts (None: the row starts afresh)."""
        if self.fresh is None:
            return [None] * len(rows)
        return [
            None
            if row >= len(self.fresh) or bool(self.fresh[row])
            else (self.average[row].clone(), self.count[row].clone())
            for row in rows
        ]

    def restore(self, states: Sequence[tuple[Tensor, Tensor] | None]) -> None:
        """Rows in the order of `states`, as `save` gave them; None rows start afresh."""
        kept = [state for state in states if state is not None]
        if not kept:
            self.average = self.count = self.fresh = None
            return
        average, count = kept[0]
        self.average = torch.stack([s[0] if s is not None else torch.zeros_like(average) for s in states])
        self.count = torch.stack([s[1] if s is not None else torch.ones_like(count) for s in states])
        self.fresh = torch.tensor([s is None for s in states], device=average.device)

    def update(self, chunk: Tensor) -> Tensor:
        """Fold `chunk` (B, chunk_size, action_dim) into each row's average; pop the next action."""
        n_rows, device = chunk.shape[0], chunk.device
        if self.fresh is None or self.fresh.shape[0] != n_rows:
            self._start(chunk)
        weights, cumsum = self.weights.to(device), self.weights_cumsum.to(device)
        continued = self.average * cumsum[self.count - 1]
        continued = continued + chunk[:, :-1] * weights[self.count]
        continued = continued / cumsum[self.count]
        counts = torch.clamp(self.count + 1, max=self.chunk_size)
        ones = torch.ones_like(counts[:, :1])
        merged = torch.cat([continued, chunk[:, -1:]], dim=1)
        merged_counts = torch.cat([counts, ones], dim=1)
        fresh = self.fresh.view(-1, 1, 1)
        merged = torch.where(fresh, chunk, merged)
        merged_counts = torch.where(fresh, torch.ones_like(merged_counts), merged_counts)
        self.average, self.count = merged[:, 1:], merged_counts[:, 1:]
        self.fresh = torch.zeros_like(self.fresh)
        return merged[:, 0]

    def _start(self, chunk: Tensor) -> None:
        n_rows, _, action_dim = chunk.shape
        shape = (n_rows, self.chunk_size - 1)
        self.average = chunk.new_zeros((*shape, action_dim))
        self.count = torch.ones((*shape, 1), dtype=torch.long, device=chunk.device)
        self.fresh = torch.ones(n_rows, dtype=torch.bool, device=chunk.device)


class ACT(nn.Module):
    """The network: backbone, input projections, transformer, action head."""

    def __init__(self, config: ACTConfig):
        super().__init__()
        self.config = config
        dim = config.dim_model
        state, env_state = config.robot_state_feature, config.env_state_feature
        action_dim = config.action_feature.shape[0]
        if config.use_vae:
            self._add_vae_encoder(config, state, action_dim)
        if config.image_features:
            trunk = resnet_trunk(
                config.vision_backbone, FrozenBatchNorm2d, bool(config.replace_final_stride_with_dilation)
            )
            self.backbone = nn.Sequential(trunk)
        self.encoder = ACTEncoder(config, config.n_encoder_layers)
        self.decoder = ACTDecoder(config)
        if state is not None:
            self.encoder_robot_state_input_proj = nn.Linear(state.shape[0], dim)
        if env_state is not None:
            self.encoder_env_state_input_proj = nn.Linear(env_state.shape[0], dim)
        self.encoder_latent_input_proj = nn.Linear(config.latent_dim, dim)
        if config.image_features:
            self.encoder_img_feat_input_proj = nn.Conv2d(feature_channels(config.vision_backbone), dim, 1)
        n_1d_tokens = 1 + (state is not None) + (env_state is not None)
        self.encoder_1d_feature_pos_embed = nn.Embedding(n_1d_tokens, dim)
        if config.image_features:
            self.encoder_cam_feat_pos_embed = SinusoidalPositionEmbedding2d(dim // 2)
        self.decoder_pos_embed = nn.Embedding(config.chunk_size, dim)
        self.action_head = nn.Linear(dim, action_dim)

    def _add_vae_encoder(self, config: ACTConfig, state, action_dim: int) -> None:
        """Training-only modules; present so that checkpoints load with strict keys."""
        dim = config.dim_model
        self.vae_encoder = ACTEncoder(config, config.n_vae_encoder_layers)
        self.vae_encoder_cls_embed = nn.Embedding(1, dim)
        if state is not None:
            self.vae_encoder_robot_state_input_proj = nn.Linear(state.shape[0], dim)
        self.vae_encoder_action_input_proj = nn.Linear(action_dim, dim)
        self.vae_encoder_latent_output_proj = nn.Linear(dim, config.latent_dim * 2)
        n_tokens = 1 + config.chunk_size + (state is not None)
        self.register_buffer("vae_encoder_pos_enc", sinusoidal_table(n_tokens, dim).unsqueeze(0))

    def encode_latent(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """(sampled latent, mean, log variance), each (B, latent_dim), from the action chunk."""
        actions = batch[ACTION]
        n_rows = actions.shape[0]
        tokens = [self.vae_encoder_cls_embed.weight.unsqueeze(0).expand(n_rows, -1, -1)]
        if self.config.robot_state_feature is not None:
            tokens.append(self.vae_encoder_robot_state_input_proj(batch[OBS_STATE]).unsqueeze(1))
        tokens.append(self.vae_encoder_action_input_proj(actions))
        tokens_in = torch.cat(tokens, dim=1).permute(1, 0, 2)  # (S, B, D)
        n_prefix = tokens_in.shape[0] - actions.shape[1]
        prefix_pad = torch.zeros((n_rows, n_prefix), dtype=torch.bool, device=actions.device)
        padding = torch.cat([prefix_pad, batch[ACTION_IS_PAD]], dim=1)
        positions = self.vae_encoder_pos_enc.permute(1, 0, 2)  # (S, 1, D)
        cls_out = self.vae_encoder(tokens_in, pos_embed=positions, key_padding_mask=padding)[0]
        stats = self.vae_encoder_latent_output_proj(cls_out)
        mu, log_sigma_x2 = stats[:, : self.config.latent_dim], stats[:, self.config.latent_dim :]
        latent = mu + (log_sigma_x2 / 2).exp() * torch.randn_like(mu)
        return latent, mu, log_sigma_x2

    def forward(self, batch: dict[str, Tensor], images: list[Tensor], latent: Tensor | None = None) -> Tensor:
        """(B, chunk_size, action_dim) from normalised inputs; the latent is zero unless given
        (training passes the VAE encoder's sample)."""
        reference = images[0] if images else batch[OBS_ENV_STATE]
        n_rows = reference.shape[0]
        if latent is None:
            latent = torch.zeros(
                (n_rows, self.config.latent_dim), dtype=torch.float32, device=reference.device
            )
        tokens = [self.encoder_latent_input_proj(latent).unsqueeze(0)]
        if self.config.robot_state_feature is not None:
            tokens.append(self.encoder_robot_state_input_proj(batch[OBS_STATE]).unsqueeze(0))
        if self.config.env_state_feature is not None:
            tokens.append(self.encoder_env_state_input_proj(batch[OBS_ENV_STATE]).unsqueeze(0))
        positions = [self.encoder_1d_feature_pos_embed.weight.unsqueeze(1)]
        for image in images:
            features = self.backbone(image)
            position = self.encoder_cam_feat_pos_embed(features).to(dtype=features.dtype)
            features = self.encoder_img_feat_input_proj(features)
            tokens.append(_pixels_as_tokens(features))  # (h*w, B, D)
            positions.append(_pixels_as_tokens(position))  # (h*w, 1, D)
        tokens_in, positions_in = torch.cat(tokens), torch.cat(positions)
        encoded = self.encoder(tokens_in, pos_embed=positions_in)
        queries = torch.zeros(
            (self.config.chunk_size, n_rows, self.config.dim_model),
            dtype=positions_in.dtype,
            device=positions_in.device,
        )
        decoded = self.decoder(
            queries,
            encoded,
            encoder_pos_embed=positions_in,
            decoder_pos_embed=self.decoder_pos_embed.weight.unsqueeze(1),
        )
        return self.action_head(decoded.transpose(0, 1))


def _pixels_as_tokens(feature_map: Tensor) -> Tensor:
    """(B, C, H, W) -> (H*W, B, C), row-major over pixels."""
    return feature_map.flatten(2).permute(2, 0, 1)


class ACTEncoder(nn.Module):
    """A stack of encoder layers, then a final norm in the pre-norm variant."""

    def __init__(self, config: ACTConfig, n_layers: int):
        super().__init__()
        self.layers = nn.ModuleList([ACTEncoderLayer(config) for _ in range(n_layers)])
        self.norm = nn.LayerNorm(config.dim_model) if config.pre_norm else nn.Identity()

    def forward(
        self, x: Tensor, pos_embed: Tensor | None = None, key_padding_mask: Tensor | None = None
    ) -> Tensor:
        for layer in self.layers:
            x = layer(x, pos_embed, key_padding_mask)
        return self.norm(x)


class ACTEncoderLayer(nn.Module):
    """Self-attention (positions added to queries and keys only) and a feed-forward block."""

    def __init__(self, config: ACTConfig):
        super().__init__()
        dim = config.dim_model
        self.self_attn = nn.MultiheadAttention(dim, config.n_heads, dropout=config.dropout)
        self.linear1 = nn.Linear(dim, config.dim_feedforward)
        self.dropout = nn.Dropout(config.dropout)
        self.linear2 = nn.Linear(config.dim_feedforward, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.dropout1 = nn.Dropout(config.dropout)
        self.dropout2 = nn.Dropout(config.dropout)
        self.activation = activation_fn(config.feedforward_activation)
        self.pre_norm = config.pre_norm

    def forward(self, x: Tensor, pos_embed: Tensor | None, key_padding_mask: Tensor | None = None) -> Tensor:
        if self.pre_norm:
            h = self.norm1(x)
            x = x + self.dropout1(self._attend(h, pos_embed, key_padding_mask))
            return x + self.dropout2(self._feed_forward(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self._attend(x, pos_embed, key_padding_mask)))
        return self.norm2(x + self.dropout2(self._feed_forward(x)))

    def _attend(self, x: Tensor, pos_embed: Tensor | None, key_padding_mask: Tensor | None = None) -> Tensor:
        qk = x if pos_embed is None else x + pos_embed
        return self.self_attn(qk, qk, value=x, key_padding_mask=key_padding_mask)[0]

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class ACTDecoder(nn.Module):
    def __init__(self, config: ACTConfig):
        super().__init__()
        self.layers = nn.ModuleList([ACTDecoderLayer(config) for _ in range(config.n_decoder_layers)])
        self.norm = nn.LayerNorm(config.dim_model)

    def forward(
        self, x: Tensor, encoded: Tensor, encoder_pos_embed: Tensor, decoder_pos_embed: Tensor
    ) -> Tensor:
        for layer in self.layers:
            x = layer(x, encoded, encoder_pos_embed, decoder_pos_embed)
        return self.norm(x)


class ACTDecoderLayer(nn.Module):
    """Self-attention over the queries, cross-attention to the encoder, feed-forward."""

    def __init__(self, config: ACTConfig):
        super().__init__()
        dim = config.dim_model
        self.self_attn = nn.MultiheadAttention(dim, config.n_heads, dropout=config.dropout)
        self.multihead_attn = nn.MultiheadAttention(dim, config.n_heads, dropout=config.dropout)
        self.linear1 = nn.Linear(dim, config.dim_feedforward)
        self.dropout = nn.Dropout(config.dropout)
        self.linear2 = nn.Linear(config.dim_feedforward, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.norm3 = nn.LayerNorm(dim)
        self.dropout1 = nn.Dropout(config.dropout)
        self.dropout2 = nn.Dropout(config.dropout)
        self.dropout3 = nn.Dropout(config.dropout)
        self.activation = activation_fn(config.feedforward_activation)
        self.pre_norm = config.pre_norm

    def forward(self, x: Tensor, encoded: Tensor, encoder_pos: Tensor, decoder_pos: Tensor) -> Tensor:
        keys = encoded + encoder_pos
        if self.pre_norm:
            h = self.norm1(x)
            x = x + self.dropout1(self.self_attn(h + decoder_pos, h + decoder_pos, value=h)[0])
            h = self.norm2(x)
            x = x + self.dropout2(self.multihead_attn(h + decoder_pos, keys, value=encoded)[0])
            return x + self.dropout3(self._feed_forward(self.norm3(x)))
        x = self.norm1(x + self.dropout1(self.self_attn(x + decoder_pos, x + decoder_pos, value=x)[0]))
        x = self.norm2(x + self.dropout2(self.multihead_attn(x + decoder_pos, keys, value=encoded)[0]))
        return self.norm3(x + self.dropout3(self._feed_forward(x)))

    def _feed_forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class SinusoidalPositionEmbedding2d(nn.Module):
    """Fixed 2-D sine/cosine positions for a feature map, as in DETR.

    Row and column indices 1..H and 1..W are scaled to (0, 2*pi]; channel pair (2i, 2i+1)
    holds sin and cos at frequency 1 / 10000^(2i / dimension). Output: (1, 2 * dimension, H, W),
    the y half first.
    """

    def __init__(self, dimension: int):
        super().__init__()
        self.dimension = dimension

    def forward(self, feature_map: Tensor) -> Tensor:
        _, _, height, width = feature_map.shape
        device = feature_map.device
        rows = torch.arange(1, height + 1, dtype=torch.float32, device=device).view(1, height, 1)
        cols = torch.arange(1, width + 1, dtype=torch.float32, device=device).view(1, 1, width)
        rows = (rows / (height + 1e-6) * (2 * math.pi)).expand(1, height, width)
        cols = (cols / (width + 1e-6) * (2 * math.pi)).expand(1, height, width)
        channel = torch.arange(self.dimension, dtype=torch.float32, device=device)
        frequency = 10000 ** (2 * (channel // 2) / self.dimension)
        return torch.cat([self._encode(rows, frequency), self._encode(cols, frequency)], dim=3).permute(
            0, 3, 1, 2
        )

    @staticmethod
    def _encode(angles: Tensor, frequency: Tensor) -> Tensor:
        """(1, H, W) -> (1, H, W, dimension), sin and cos interleaved."""
        phase = angles.unsqueeze(-1) / frequency
        return torch.stack((phase[..., 0::2].sin(), phase[..., 1::2].cos()), dim=-1).flatten(3)


def sinusoidal_table(n_positions: int, dimension: int) -> Tensor:
    """(n_positions, dimension) 1-D sine/cosine positions of "Attention Is All You Need"."""
    positions = np.arange(n_positions, dtype=np.float64)[:, None]
    exponents = 2 * (np.arange(dimension) // 2) / dimension
    table = positions / np.power(10000, exponents)[None, :]
    table[:, 0::2] = np.sin(table[:, 0::2])
    table[:, 1::2] = np.cos(table[:, 1::2])
    return torch.from_numpy(table).float()


def activation_fn(name: str) -> Callable[[Tensor], Tensor]:
    return {"relu": F.relu, "gelu": F.gelu, "glu": F.glu}[name]


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
