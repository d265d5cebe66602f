"""Diffusion Policy settings, under the names of LeRobot's `diffusion` config.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from lerobot.configs.optim import DIFFUSER_SCHEDULES, AdamConfig, DiffuserSchedulerConfig
from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.configs.types import NormalizationMode
from lerobot.policies.backbones import RESNETS
from lerobot.utils.errors import ConfigError, require_choice

SCHEDULERS = ("DDPM", "DDIM")
PREDICTION_TYPES = ("epsilon", "sample")
BETA_SCHEDULES = ("linear", "scaled_linear", "squaredcos_cap_v2")


@PreTrainedConfig.register_subclass("diffusion")
@dataclass
class DiffusionConfig(CheckpointPolicyConfig):
    """Diffusion Policy (Chi et al., 2023): a 1-D conditional UNet denoises `horizon` future
    actions from Gaussian noise, conditioned on the last `n_obs_steps` observations (ResNet
    keypoint features per camera, state, env state); `n_action_steps` of them are executed,
    starting at the current step.
    """

    fields_lerobot_lacks: ClassVar[frozenset[str]] = frozenset({"empty_cameras"})

    n_obs_steps: int = 2
    """Observations (current and past) each call is conditioned on."""
    horizon: int = 64
    """Actions generated per call, counted from the oldest observation in the history."""
    n_action_steps: int = 32
    """Actions executed from each generated sequence before the next call."""
    normalization_mapping: dict[str, NormalizationMode] = field(
        default_factory=lambda: {
            "VISUAL": NormalizationMode.MEAN_STD,
            "STATE": NormalizationMode.MIN_MAX,
            "ACTION": NormalizationMode.MIN_MAX,
        }
    )
    """How each feature kind is scaled with the dataset statistics (VISUAL, STATE, ACTION)."""
    vision_backbone: str = "resnet18"
    """ResNet variant reading the cameras; its weights always come from the checkpoint."""
    pretrained_backbone_weights: str | None = None
    """Kept for config.json compatibility; nothing is ever downloaded."""
    resize_shape: tuple[int, int] | None = None
    """(H, W) to resize camera images to (bilinear, antialiased) before cropping."""
    crop_ratio: float = 1.0
    """With resize_shape: crop to int(resize * ratio) when below 1."""
    crop_shape: tuple[int, int] | None = None
    """(H, W) of the centre crop applied at evaluation (random crops are for training)."""
    crop_is_random: bool = True
    """Training-time setting; evaluation always crops the centre."""
    use_group_norm: bool = False
    """The backbone uses GroupNorm (channels // 16 groups) instead of BatchNorm."""
    spatial_softmax_num_keypoints: int = 32
    """Keypoints the spatial softmax extracts from each camera's features."""
    use_separate_rgb_encoder_per_camera: bool = True
    """One ResNet per camera (True) or one shared by all cameras."""
    down_dims: tuple[int, ...] = (512, 1024, 2048)
    """Channels of the UNet's downsampling stages."""
    kernel_size: int = 5
    """Kernel size of the UNet's 1-D convolutions."""
    n_groups: int = 8
    """Groups of the UNet's GroupNorm layers."""
    diffusion_step_embed_dim: int = 128
    """Size of the denoising-step embedding."""
    use_film_scale_modulation: bool = True
    """FiLM conditioning scales as well as shifts the UNet features."""
    noise_scheduler_type: str = "DDPM"
    """Sampler: DDPM or DDIM."""
    num_train_timesteps: int = 100
    """Denoising steps of the noise schedule."""
    beta_schedule: str = "squaredcos_cap_v2"
    """Noise schedule: linear, scaled_linear or squaredcos_cap_v2."""
    beta_start: float = 0.0001
    """First beta of the linear schedules."""
    beta_end: float = 0.02
    """Last beta of the linear schedules."""
    prediction_type: str = "epsilon"
    """What the UNet predicts: the noise (epsilon) or the clean actions (sample)."""
    clip_sample: bool = True
    """Clip each denoised sample to [-clip_sample_range, clip_sample_range]."""
    clip_sample_range: float = 1.0
    """Bound of clip_sample, in normalised action units."""
    num_inference_steps: int | None = None
    """Denoising steps per call; None uses num_train_timesteps."""
    do_mask_loss_for_padding: bool = False
    """Training: leave actions past the episode end out of the loss."""
    optimizer_lr: float = 1e-4
    """Adam learning rate `lerobot-train` uses for this policy (LeRobot's preset)."""
    optimizer_betas: tuple[float, float] = (0.95, 0.999)
    """Adam's betas."""
    optimizer_eps: float = 1e-8
    """Adam's eps."""
    optimizer_weight_decay: float = 1e-6
    """Adam weight decay `lerobot-train` uses for this policy."""
    scheduler_name: str = "cosine"
    """The learning-rate schedule, by diffusers' name (cosine, linear, constant, constant_with_warmup)."""
    scheduler_warmup_steps: int = 500
    """Linear warm-up steps of the schedule."""
    drop_n_last_frames: int = 7
    """Training never starts a window in an episode's last N frames (LeRobot's 7: horizon -
    n_action_steps - n_obs_steps + 1 with the defaults), so few windows are mostly padding."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.optimizer_betas = tuple(self.optimizer_betas)
        if self.drop_n_last_frames < 0:
            raise ConfigError(f"--policy.drop_n_last_frames={self.drop_n_last_frames}: must be 0 or more")
        require_choice("--policy.scheduler_name", self.scheduler_name, DIFFUSER_SCHEDULES)
        require_choice("--policy.vision_backbone", self.vision_backbone, RESNETS)
        require_choice("--policy.noise_scheduler_type", self.noise_scheduler_type, SCHEDULERS)
        require_choice("--policy.prediction_type", self.prediction_type, PREDICTION_TYPES)
        require_choice("--policy.beta_schedule", self.beta_schedule, BETA_SCHEDULES)
        if self.input_features and self.robot_state_feature is None:
            raise ConfigError("--policy.input_features: Diffusion Policy needs an 'observation.state' input")
        if not 0 < self.crop_ratio <= 1.0:
            raise ConfigError(f"--policy.crop_ratio={self.crop_ratio}: must be in (0, 1]")
        if self.resize_shape is not None:
            self.resize_shape = tuple(self.resize_shape)
            self.crop_shape = self._crop_from_ratio()
        if self.horizon % 2 ** len(self.down_dims):
            raise ConfigError(
                f"--policy.horizon={self.horizon}: must be a multiple of 2^len(down_dims) = {2 ** len(self.down_dims)}"
            )
        if self.n_action_steps < 1 or self.n_obs_steps < 1:
            raise ConfigError(
                f"--policy.n_action_steps={self.n_action_steps}, --policy.n_obs_steps={self.n_obs_steps}: "
                "both must be at least 1"
            )
        steps = self.resolved_inference_steps
        if not 1 <= steps <= self.num_train_timesteps:
            raise ConfigError(
                f"--policy.num_inference_steps={steps}: must be between 1 and num_train_timesteps={self.num_train_timesteps}"
            )

    def get_optimizer_preset(self) -> AdamConfig:
        """LeRobot's preset: Adam at `optimizer_lr` with its betas, eps and weight decay, clip 10."""
        return AdamConfig(
            lr=self.optimizer_lr,
            betas=tuple(self.optimizer_betas),
            eps=self.optimizer_eps,
            weight_decay=self.optimizer_weight_decay,
        )

    def get_scheduler_preset(self) -> DiffuserSchedulerConfig:
        """LeRobot's preset: diffusers' `scheduler_name` schedule after `scheduler_warmup_steps`."""
        return DiffuserSchedulerConfig(name=self.scheduler_name, num_warmup_steps=self.scheduler_warmup_steps)

    def _crop_from_ratio(self) -> tuple[int, int] | None:
        """LeRobot derives the crop from resize_shape and crop_ratio whenever resizing."""
        if self.crop_ratio >= 1.0:
            return None
        return int(self.resize_shape[0] * self.crop_ratio), int(self.resize_shape[1] * self.crop_ratio)

    @property
    def observation_delta_indices(self) -> list[int]:
        """The last `n_obs_steps` frames, the current one last."""
        return list(range(1 - self.n_obs_steps, 1))

    @property
    def action_delta_indices(self) -> list[int]:
        """`horizon` actions from the first observed frame on."""
        first = 1 - self.n_obs_steps
        return list(range(first, first + self.horizon))

    @property
    def resolved_inference_steps(self) -> int:
        return self.num_train_timesteps if self.num_inference_steps is None else self.num_inference_steps

    @property
    def encoder_image_size(self) -> tuple[int, int]:
        """(H, W) that reaches the backbone: the crop, else the resize, else the raw image."""
        if self.crop_shape is not None:
            return tuple(self.crop_shape)
        if self.resize_shape is not None:
            return tuple(self.resize_shape)
        first = next(iter(self.image_features.values()))
        return first.shape[1], first.shape[2]
