"""SmolVLA settings, under the names and defaults of LeRobot's `smolvla` config.json.

Importing this module must stay cheap: it registers `--policy.type=smolvla` whenever
`lerobot.policies` is imported, so nothing here touches transformers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from lerobot.configs.policies import CheckpointPolicyConfig, PreTrainedConfig
from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.policies.flow.vla_config import EMPTY_CAMERA_PREFIX, VLAConfigMixin
from lerobot.utils.errors import ConfigError, require_choice

logger = logging.getLogger(__name__)

ATTENTION_MODES = ("cross_attn", "self_attn")
PADDINGS = ("longest", "max_length")
# LeRobot's shape for the blank cameras `empty_cameras` declares (only the channels are read).
EMPTY_CAMERA_SHAPE = (3, 480, 640)


@PreTrainedConfig.register_subclass("smolvla")
@dataclass
class SmolVLAConfig(VLAConfigMixin, CheckpointPolicyConfig):
    """SmolVLA (Shukor et al., 2025, arXiv:2506.01844): a small VLM (SmolVLM2) reads the
    cameras, the instruction and the state; a smaller "action expert" transformer that attends
    to the VLM's keys and values turns noise into a chunk of `chunk_size` actions by flow
    matching (`num_steps` Euler steps); the first `n_action_steps` are executed.

    State and actions are zero-padded to `max_state_dim` / `max_action_dim`, so one network
    serves robots of different sizes.
    """

    blank_cameras_in_preprocessor: ClassVar[bool] = False
    """Missing cameras are the model's business: it feeds -1 images whose tokens are masked."""
    extra: ClassVar[str] = "smolvla"
    extra_modules: ClassVar[tuple[str, ...]] = ("transformers",)

    chunk_size: int = 50
    """Actions predicted per model call."""
    n_action_steps: int = 50
    """Actions executed from each chunk before the model is called again (LeRobot's LIBERO
    checkpoint ships 50; the SmolVLA paper evaluated with 10)."""
    normalization_mapping: dict[str, NormalizationMode] = field(
        default_factory=lambda: {
            "VISUAL": NormalizationMode.IDENTITY,
            "STATE": NormalizationMode.MEAN_STD,
            "ACTION": NormalizationMode.MEAN_STD,
        }
    )
    max_state_dim: int = 32
    """The state is zero-padded to this length before the state projection."""
    max_action_dim: int = 32
    """Actions are predicted at this length; the first action_dim entries are kept."""
    resize_imgs_with_padding: tuple[int, int] | None = (512, 512)
    """(width, height) every camera is resized to, keeping its aspect ratio and padding the
    top and left with black; None feeds images as they come."""
    adapt_to_pi_aloha: bool = False
    """Convert Aloha joint and gripper conventions to those of the pi runtime (Aloha models)."""
    use_delta_joint_actions_aloha: bool = False
    """Not supported (as in LeRobot); must stay false."""
    tokenizer_max_length: int = 48
    """Instructions are truncated (and with max_length padding, padded) to this many tokens."""
    num_steps: int = 10
    """Euler steps of the flow-matching sampler, from t=1 (noise) to t=0 (actions)."""
    use_cache: bool = True
    """Compute the VLM's keys and values of the prefix once per chunk (LeRobot cannot sample
    without this either)."""
    freeze_vision_encoder: bool = True
    """Training: keep the vision encoder's weights fixed."""
    train_expert_only: bool = True
    """Training: keep the whole VLM fixed and train the action expert and projections."""
    train_state_proj: bool = True
    """Training: train the state projection."""
    optimizer_lr: float = 1e-4
    """AdamW peak learning rate `lerobot-train` uses for this policy (LeRobot's preset)."""
    optimizer_betas: tuple[float, float] = (0.9, 0.95)
    """AdamW betas (LeRobot's preset)."""
    optimizer_eps: float = 1e-8
    """AdamW epsilon (LeRobot's preset)."""
    optimizer_weight_decay: float = 1e-10
    """AdamW weight decay (LeRobot's preset)."""
    optimizer_grad_clip_norm: float = 10
    """Kept for config.json compatibility; `--grad_clip_norm` clips."""
    scheduler_warmup_steps: int = 1_000
    """Linear warm-up steps of the learning rate (scaled down when --steps is shorter than
    scheduler_decay_steps, as LeRobot does)."""
    scheduler_decay_steps: int = 30_000
    """Cosine decay steps from the peak to scheduler_decay_lr."""
    scheduler_decay_lr: float = 2.5e-6
    """Learning rate at the end of the cosine decay."""
    vlm_model_name: str = "HuggingFaceTB/SmolVLM2-500M-Video-Instruct"
    """Where the VLM's config and tokenizer come from: a local directory or a hub repo id
    (read from the hub cache, fetched when online). Weights always come from the checkpoint."""
    load_vlm_weights: bool = False
    """LeRobot then holds the VLM and the expert in bfloat16 (so does this build, for the same
    numbers); for a policy trained from scratch it also starts from the VLM's pretrained weights."""
    add_image_special_tokens: bool = False
    """Surround each camera's tokens with SmolVLM's image start and end tokens."""
    attention_mode: str = "cross_attn"
    """"cross_attn": between self-attention layers the expert attends to the VLM's keys and
    values only; "self_attn": every layer attends over VLM and expert tokens together."""
    prefix_length: int = -1
    """Pad the VLM's token sequence to this length (-1 or 0: no padding)."""
    pad_language_to: str = "longest"
    """Tokenizer padding: "longest" in the batch or "max_length" (tokenizer_max_length)."""
    num_expert_layers: int = -1
    """Expert layers; 0 or less: as many as the VLM layers used."""
    num_vlm_layers: int = 16
    """The VLM's first num_vlm_layers text layers are used; the rest are dropped."""
    self_attn_every_n_layers: int = 2
    """In cross_attn mode, layers 0, n, 2n, ... attend over VLM and expert tokens together."""
    expert_width_multiplier: float = 0.75
    """The expert's hidden size relative to the VLM's."""
    min_period: float = 4e-3
    """Shortest period of the sine-cosine embedding of the flow-matching time."""
    max_period: float = 4.0
    """Longest period of the sine-cosine embedding of the flow-matching time."""
    compile_model: bool = False
    """Accepted for config.json compatibility; this build runs the model eagerly."""
    compile_mode: str = "max-autotune"
    """Accepted for config.json compatibility (torch.compile mode); unused here."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_ranges()
        self._check_choices()
        if self.use_delta_joint_actions_aloha:
            raise ConfigError(
                "--policy.use_delta_joint_actions_aloha=true: not supported (LeRobot 0.6.1 refuses it too)"
            )
        if self.compile_model:
            logger.warning("--policy.compile_model=true: ignored; SmolVLA runs eagerly here")

    @property
    def observation_delta_indices(self) -> list[int]:
        """The current frame (LeRobot's SmolVLA asks for it as a one-step window)."""
        return [0]

    @property
    def action_delta_indices(self) -> list[int]:
        """The chunk from the current frame on."""
        return list(range(self.chunk_size))

    def resizes_images(self) -> bool:
        """SmolVLA pads and resizes every camera to --policy.resize_imgs_with_padding itself."""
        return self.resize_imgs_with_padding is not None

    def _check_ranges(self) -> None:
        positive = ("num_steps", "tokenizer_max_length", "max_state_dim", "max_action_dim", "num_vlm_layers")
        self.check_chunk_ranges(positive, "SmolVLA")
        if not self.use_cache:
            raise ConfigError(
                "--policy.use_cache=false: SmolVLA samples with the prefix's keys and values cached "
                "(LeRobot 0.6.1 cannot sample without them either); use true"
            )
        if self.resize_imgs_with_padding is not None and min(self.resize_imgs_with_padding) < 1:
            raise ConfigError(
                f"--policy.resize_imgs_with_padding={list(self.resize_imgs_with_padding)}: "
                "needs a positive [width, height]"
            )

    def _check_choices(self) -> None:
        require_choice("--policy.attention_mode", self.attention_mode, ATTENTION_MODES)
        require_choice("--policy.pad_language_to", self.pad_language_to, PADDINGS)
        self._check_layer_layout()

    def _check_layer_layout(self) -> None:
        """LeRobot picks the expert's layers by VLM layer and their kind by expert layer; only
        layouts where both agree run (otherwise its forward fails on a shape mismatch)."""
        n_expert = self.num_expert_layers if self.num_expert_layers > 0 else self.num_vlm_layers
        if self.num_vlm_layers % n_expert:
            raise ConfigError(
                f"--policy.num_expert_layers={self.num_expert_layers}: must divide "
                f"--policy.num_vlm_layers={self.num_vlm_layers}"
            )
        if n_expert == self.num_vlm_layers:
            return
        if "cross" not in self.attention_mode:
            raise ConfigError(
                f"--policy.num_expert_layers={self.num_expert_layers}: --policy.attention_mode=self_attn "
                "needs an expert layer for every VLM layer; use 0"
            )
        stride, every = self.num_vlm_layers // n_expert, self.self_attn_every_n_layers
        for vlm_layer in range(self.num_vlm_layers):
            self_attends = every > 0 and vlm_layer % every == 0
            has_expert = vlm_layer % stride == 0
            expert_self = every > 0 and (vlm_layer // stride) % every == 0
            if (self_attends and not has_expert) or (has_expert and self_attends != expert_self):
                raise ConfigError(
                    f"--policy.self_attn_every_n_layers={every}: with --policy.num_expert_layers="
                    f"{self.num_expert_layers} VLM layer {vlm_layer} cannot get a matching expert layer; "
                    "choose a layout where every self-attention layer has an expert layer of the same kind"
                )

    def add_empty_camera_features(self) -> None:
        """Declare `observation.images.empty_camera_<i>` for each blank camera, as LeRobot's
        `validate_features` does when the policy is built: they are never in a batch, so the
        model always adds exactly `empty_cameras` masked blank images after the cameras it has."""
        for i in range(self.empty_cameras):
            self.input_features.setdefault(
                f"{EMPTY_CAMERA_PREFIX}{i}", PolicyFeature(FeatureType.VISUAL, EMPTY_CAMERA_SHAPE)
            )

    def dropped_cameras_message(self, dropped: Sequence[str]) -> str:
        return (
            f"cameras {', '.join(dropped)} are not provided: the policy runs without them and adds "
            f"{self.empty_cameras} blank camera(s) (--policy.empty_cameras), as LeRobot does"
        )

    def task_steps(self) -> list:
        """LeRobot's instruction steps for a fresh SmolVLA: newline, then its VLM's tokenizer."""
        from lerobot.processor.newline_task_processor import NewLineTaskProcessorStep
        from lerobot.processor.tokenizer_processor import TokenizerProcessorStep

        tokenizer = TokenizerProcessorStep(
            tokenizer_name=self.vlm_model_name,
            max_length=self.tokenizer_max_length,
            padding=self.pad_language_to,
            padding_side="right",
        )
        return [NewLineTaskProcessorStep(), tokenizer]
