"""ACT settings, under the names of LeRobot's `act` config.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from lerobot.configs.optim import AdamWConfig
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.configs.types import NormalizationMode
from lerobot.policies.backbones import RESNETS
from lerobot.utils.errors import ConfigError, require_choice

ACTIVATIONS = ("relu", "gelu", "glu")


@PreTrainedConfig.register_subclass("act")
@dataclass
class ACTConfig(CheckpointPolicyConfig):
    """Action Chunking Transformer (Zhao et al., 2023): a ResNet reads each camera, a
    transformer encoder-decoder turns image features, state and a latent into `chunk_size`
    future actions, of which the first `n_action_steps` are executed.

    At inference the VAE encoder is unused (the latent is zero); its weights are still part of
    the module so that checkpoints load with strict key matching.
    """

    fields_lerobot_lacks: ClassVar[frozenset[str]] = frozenset({"empty_cameras"})

    chunk_size: int = 100
    """Actions predicted per model call."""
    n_action_steps: int = 100
    """Actions executed from each chunk before the model is called again."""
    normalization_mapping: dict[str, NormalizationMode] = field(
        default_factory=lambda: {
            "VISUAL": NormalizationMode.MEAN_STD,
            "STATE": NormalizationMode.MEAN_STD,
            "ACTION": NormalizationMode.MEAN_STD,
        }
    )
    """How each feature kind is scaled with the dataset statistics (VISUAL, STATE, ACTION)."""
    vision_backbone: str = "resnet18"
    """ResNet variant reading the cameras; its weights always come from the checkpoint."""
    pretrained_backbone_weights: str | None = None
    """Kept for config.json compatibility; nothing is ever downloaded."""
    replace_final_stride_with_dilation: bool = False
    """Dilate instead of striding in the ResNet's last stage (Bottleneck ResNets only)."""
    pre_norm: bool = False
    """Layer norm before (True) or after (False) each transformer sub-block."""
    dim_model: int = 512
    """Width of the transformer (and of the image and state tokens)."""
    n_heads: int = 8
    """Attention heads per transformer layer."""
    dim_feedforward: int = 3200
    """Hidden width of each transformer layer's feed-forward block."""
    feedforward_activation: str = "relu"
    """Activation of the feed-forward blocks: relu, gelu or glu."""
    n_encoder_layers: int = 4
    """Transformer encoder layers."""
    n_decoder_layers: int = 1
    """Transformer decoder layers."""
    use_vae: bool = True
    """Whether the checkpoint carries a VAE encoder (used in training only)."""
    latent_dim: int = 32
    """Size of the VAE latent (zero at inference)."""
    n_vae_encoder_layers: int = 4
    """Layers of the VAE encoder (used in training only)."""
    temporal_ensemble_coeff: float | None = None
    """Average the overlapping predictions of every past chunk, weighted exp(-coeff * age_rank);
    needs n_action_steps=1. None executes chunks as they are."""
    dropout: float = 0.1
    """Training-time dropout; inactive at evaluation."""
    kl_weight: float = 10.0
    """Weight of the VAE's KL divergence in the training loss."""
    optimizer_lr: float = 1e-5
    """AdamW learning rate `lerobot-train` uses for this policy (LeRobot's preset)."""
    optimizer_weight_decay: float = 1e-4
    """AdamW weight decay `lerobot-train` uses for this policy."""
    optimizer_lr_backbone: float = 1e-5
    """Learning rate of the ResNet backbone."""

    def get_optimizer_preset(self) -> AdamWConfig:
        """LeRobot's preset: AdamW at a constant `optimizer_lr` (the backbone at its own rate,
        ACTPolicy.get_optim_params), weight decay `optimizer_weight_decay`, clip 10."""
        return AdamWConfig(lr=self.optimizer_lr, weight_decay=self.optimizer_weight_decay)

    def get_scheduler_preset(self) -> None:
        return None

    @property
    def action_delta_indices(self) -> list[int]:
        """The chunk from the current frame on (the observation: the current frame alone)."""
        return list(range(self.chunk_size))

    def __post_init__(self) -> None:
        super().__post_init__()
        require_choice("--policy.vision_backbone", self.vision_backbone, RESNETS)
        if self.replace_final_stride_with_dilation and self.vision_backbone in ("resnet18", "resnet34"):
            raise ConfigError(
                "--policy.replace_final_stride_with_dilation=true: needs a Bottleneck ResNet "
                f"(resnet50, resnet101, resnet152), not {self.vision_backbone}"
            )
        require_choice("--policy.feedforward_activation", self.feedforward_activation, ACTIVATIONS)
        if not 1 <= self.n_action_steps <= self.chunk_size:
            raise ConfigError(
                f"--policy.n_action_steps={self.n_action_steps}: must be between 1 and --policy.chunk_size={self.chunk_size}"
            )
        if self.temporal_ensemble_coeff is not None and self.n_action_steps != 1:
            raise ConfigError(
                f"--policy.n_action_steps={self.n_action_steps}: temporal ensembling "
                f"(--policy.temporal_ensemble_coeff={self.temporal_ensemble_coeff}) needs --policy.n_action_steps=1"
            )
        if self.n_obs_steps != 1:
            raise ConfigError(
                f"--policy.n_obs_steps={self.n_obs_steps}: ACT reads one observation step; use 1"
            )
