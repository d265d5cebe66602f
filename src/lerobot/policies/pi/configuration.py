"""The settings π0 and π0.5 share, under the names and defaults of LeRobot's `pi0` and `pi05`
config.json (`PiFlowConfig`), and the sizes of their Gemma and SigLIP variants.

Importing this module must stay cheap: the two types register their configs whenever
`lerobot.policies` is imported, so nothing here touches torch or transformers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lerobot.configs.policies import CheckpointPolicyConfig
from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.policies.flow.vla_config import EMPTY_CAMERA_PREFIX, VLAConfigMixin
from lerobot.utils.constants import ACTION, OBS_STATE
from lerobot.utils.errors import ConfigError, require_choice

PALIGEMMA_TOKENIZER = "google/paligemma-3b-pt-224"
"""The tokenizer LeRobot's π processors name (a gated hub repo: accept its licence, log in)."""
DTYPES = ("bfloat16", "float32")
DEFAULT_IMAGE_SIZE = 224
"""The side of the square images PaliGemma's SigLIP reads (LeRobot's name)."""


@dataclass(frozen=True)
class GemmaVariant:
    """A Gemma decoder's sizes, as openpi's `gemma.get_config` lists them."""

    width: int
    depth: int
    mlp_dim: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int


@dataclass(frozen=True)
class SiglipSize:
    """The SigLIP tower PaliGemma pairs with a decoder of a given width."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    patch: int


GEMMA_VARIANTS = {
    "gemma_300m": GemmaVariant(1024, 18, 4096, 8, 1, 256, 257_152),
    "gemma_2b": GemmaVariant(2048, 18, 16_384, 8, 1, 256, 257_152),
    # openpi's test-sized Gemma; with a 512-token vocabulary and the tiny SigLIP below it is the
    # variant our fixtures (and any quick experiment) use. LeRobot 0.6.1 does not know it.
    "dummy": GemmaVariant(64, 4, 128, 8, 1, 16, 512),
}
VISION_TOWERS = {
    "gemma_2b": SiglipSize(hidden=1152, intermediate=4304, layers=27, heads=16, patch=14),  # So400m/14
    "dummy": SiglipSize(hidden=32, intermediate=64, layers=1, heads=2, patch=14),
}
"""SigLIP per PaliGemma variant; its projection is as wide as the decoder. LeRobot 0.6.1 builds
the projection 2048 wide whatever the variant, so a gemma_300m PaliGemma cannot run there."""


@dataclass
class PiFlowConfig(VLAConfigMixin, CheckpointPolicyConfig):
    """What π0 and π0.5 share: a PaliGemma VLM (SigLIP + Gemma 2B) reads the cameras and the
    instruction; a smaller Gemma "action expert" attends to its keys and values and turns noise
    into a chunk of `chunk_size` actions by flow matching (`num_inference_steps` Euler steps);
    the first `n_action_steps` are executed. State and actions are zero-padded to
    `max_state_dim` / `max_action_dim`."""

    blank_cameras_in_preprocessor: ClassVar[bool] = False
    """Missing cameras are the model's business: it feeds -1 images whose tokens are masked."""
    adaptive_expert_norms: ClassVar[bool] = False
    """π0.5: the expert's norms are modulated by the flow-matching time (adaRMS)."""
    extra: ClassVar[str] = "pi"
    extra_modules: ClassVar[tuple[str, ...]] = ("transformers",)

    paligemma_variant: str = "gemma_2b"
    """The VLM's Gemma: gemma_2b (every published checkpoint) or dummy (tests)."""
    action_expert_variant: str = "gemma_300m"
    """The action expert's Gemma: gemma_300m, gemma_2b or dummy."""
    dtype: str = "float32"
    """float32, or bfloat16: LeRobot's mixed layout (the Gemma weights in bfloat16; SigLIP, the
    projector and every norm in float32), in which bfloat16 checkpoints were trained."""
    chunk_size: int = 50
    """Actions predicted per model call (openpi's action_horizon)."""
    n_action_steps: int = 50
    """Actions executed from each chunk before the model is called again (openpi evaluates LIBERO
    with 5 of 10 (π0) and 10 of 10 (π0.5); LeRobot's LIBERO numbers use 10)."""
    max_state_dim: int = 32
    """The state is zero-padded to this length."""
    max_action_dim: int = 32
    """Actions are predicted at this length; the first action_dim entries are kept."""
    num_inference_steps: int = 10
    """Euler steps of the flow-matching sampler, from t=1 (noise) to t=0 (actions)."""
    time_sampling_beta_alpha: float = 1.5
    """Training times t ~ Beta(alpha, beta) * scale + offset."""
    time_sampling_beta_beta: float = 1.0
    """See time_sampling_beta_alpha."""
    time_sampling_scale: float = 0.999
    """See time_sampling_beta_alpha."""
    time_sampling_offset: float = 0.001
    """See time_sampling_beta_alpha."""
    min_period: float = 4e-3
    """Shortest period of the sine-cosine embedding of the flow-matching time."""
    max_period: float = 4.0
    """Longest period of the sine-cosine embedding of the flow-matching time."""
    use_relative_actions: bool = False
    """Actions relative to the state (LeRobot 0.6.1); not supported here, must stay false."""
    relative_exclude_joints: list[str] = field(default_factory=lambda: ["gripper"])
    """Kept for config.json compatibility (relative actions only)."""
    action_feature_names: list[str] | None = None
    """Kept for config.json compatibility (relative actions only)."""
    rtc_config: dict[str, Any] | None = None
    """Real-time chunking settings; LeRobot cannot use them in select_action either, so an
    enabled one is refused."""
    image_resolution: tuple[int, int] = (DEFAULT_IMAGE_SIZE, DEFAULT_IMAGE_SIZE)
    """(height, width) cameras are resized to, keeping their aspect ratio and padding both sides
    with black; must be square (PaliGemma's SigLIP)."""
    normalization_mapping: dict[str, NormalizationMode] = field(
        default_factory=lambda: {
            "VISUAL": NormalizationMode.IDENTITY,
            "STATE": NormalizationMode.MEAN_STD,
            "ACTION": NormalizationMode.MEAN_STD,
        }
    )
    gradient_checkpointing: bool = False
    """Training: recompute each layer's activations in the backward pass (less memory)."""
    compile_model: bool = False
    """Run the sampler through torch.compile (CUDA only; see docs/source/pi0.mdx for when it pays)."""
    compile_mode: str = "max-autotune"
    """torch.compile mode of compile_model."""
    freeze_vision_encoder: bool = False
    """Training: keep SigLIP's weights fixed."""
    train_expert_only: bool = False
    """Training: keep the whole PaliGemma fixed; train the expert and the projections."""
    optimizer_lr: float = 2.5e-5
    """AdamW peak learning rate `lerobot-train` uses for this policy (LeRobot's preset)."""
    optimizer_betas: tuple[float, float] = (0.9, 0.95)
    """AdamW betas (LeRobot's preset)."""
    optimizer_eps: float = 1e-8
    """AdamW epsilon (LeRobot's preset)."""
    optimizer_weight_decay: float = 0.01
    """AdamW weight decay (LeRobot's preset)."""
    optimizer_grad_clip_norm: float = 1.0
    """Kept for config.json compatibility; `--grad_clip_norm` clips."""
    scheduler_warmup_steps: int = 1_000
    """Linear warm-up steps of the learning rate (scaled down when --steps is shorter than
    scheduler_decay_steps, as LeRobot does)."""
    scheduler_decay_steps: int = 30_000
    """Cosine decay steps from the peak to scheduler_decay_lr."""
    scheduler_decay_lr: float = 2.5e-6
    """Learning rate at the end of the cosine decay."""
    tokenizer_max_length: int = 48
    """Prompts are truncated and padded to this many tokens."""

    @property
    def action_delta_indices(self) -> list[int]:
        """The chunk from the current frame on (the observation: the current frame alone)."""
        return list(range(self.chunk_size))

    def __post_init__(self) -> None:
        super().__post_init__()
        self.image_resolution = tuple(self.image_resolution)
        self._check_ranges()
        self._check_variants()
        self._check_unsupported()

    def _check_ranges(self) -> None:
        self.check_chunk_ranges(
            ("num_inference_steps", "tokenizer_max_length", "max_state_dim", "max_action_dim"), "π0"
        )
        height, width = self.image_resolution
        if height != width or height < 1:
            raise ConfigError(
                f"--policy.image_resolution={list(self.image_resolution)}: PaliGemma needs a square "
                "positive size, e.g. [224,224]"
            )
        require_choice("--policy.dtype", self.dtype, DTYPES)

    def _check_variants(self) -> None:
        vlm, expert = self.paligemma_variant, self.action_expert_variant
        if vlm not in VISION_TOWERS:
            reason = (
                " (LeRobot 0.6.1 builds its SigLIP projection 2048 wide, which only gemma_2b reads)"
                if vlm in GEMMA_VARIANTS
                else ""
            )
            raise ConfigError(
                f"--policy.paligemma_variant={vlm!r}: must be one of {', '.join(VISION_TOWERS)}{reason}"
            )
        if expert not in GEMMA_VARIANTS:
            raise ConfigError(
                f"--policy.action_expert_variant={expert!r}: must be one of {', '.join(GEMMA_VARIANTS)}"
            )
        a, b = GEMMA_VARIANTS[vlm], GEMMA_VARIANTS[expert]
        if (a.num_heads, a.num_kv_heads, a.head_dim) != (b.num_heads, b.num_kv_heads, b.head_dim):
            raise ConfigError(
                f"--policy.action_expert_variant={expert!r}: its attention heads do not match "
                f"--policy.paligemma_variant={vlm!r}'s (the two attend together); use dummy with dummy"
            )

    def _check_unsupported(self) -> None:
        if self.use_relative_actions:
            raise ConfigError(
                "--policy.use_relative_actions=true: relative actions are not supported by this build; "
                "evaluate checkpoints trained with absolute actions"
            )
        if self.rtc_config and self.rtc_config.get("enabled"):
            raise ConfigError(
                "--policy.rtc_config.enabled=true: real-time chunking is not supported in select_action "
                "(nor in LeRobot 0.6.1's); disable it"
            )

    def add_empty_camera_features(self) -> None:
        """Declare `observation.images.empty_camera_<i>` for each blank camera and the state and
        action features a checkpoint may lack, as LeRobot's `validate_features` does when the
        policy is built."""
        for i in range(self.empty_cameras):
            self.input_features.setdefault(
                f"{EMPTY_CAMERA_PREFIX}{i}",
                PolicyFeature(FeatureType.VISUAL, (3, *self.image_resolution)),
            )
        self.input_features.setdefault(OBS_STATE, PolicyFeature(FeatureType.STATE, (self.max_state_dim,)))
        self.output_features.setdefault(ACTION, PolicyFeature(FeatureType.ACTION, (self.max_action_dim,)))

    def resizes_images(self) -> bool:
        return True

    def dropped_cameras_message(self, dropped: Sequence[str]) -> str:
        return (
            f"cameras {', '.join(dropped)} are not provided: the policy sees a blank, masked image "
            "instead, as LeRobot's does"
        )

    def tokenizer_step(self):
        """LeRobot's tokenizer step for π0 and π0.5: PaliGemma's, padded to the maximum length."""
        from lerobot.processor.tokenizer_processor import TokenizerProcessorStep

        return TokenizerProcessorStep(
            tokenizer_name=PALIGEMMA_TOKENIZER,
            max_length=self.tokenizer_max_length,
            padding="max_length",
            padding_side="right",
        )
