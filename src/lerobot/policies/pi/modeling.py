"""The π family (π0, π0.5): flow matching on top of PaliGemma, what both types share.

Module and parameter names match LeRobot's `PI0Policy` and `PI05Policy`
(`model.paligemma_with_expert...`, `model.action_in_proj.weight`, ...) so their
model.safetensors load with strict keys, and each step follows their arithmetic, so the same
weights, inputs and noise give the same actions. Inputs arrive preprocessed (normalised state,
tokenised instruction: see lerobot.processor.language) and actions leave normalised.

Inference, per chunk:
    prefix = [SigLIP tokens of each camera (224 px, centred padding) ..., instruction tokens (x sqrt(width))]
    the VLM runs once over the prefix and caches each layer's keys and values;
    suffix = the noisy actions' tokens with the time, as each type embeds them (`embed_suffix`:
        lerobot.policies.pi0.modeling_pi0, lerobot.policies.pi05.modeling_pi05)
    x = noise; for t = 1, 1 - 1/n, ..., 1/n:  x += -1/n * expert(suffix(x, t) | cache)
Training regresses the expert's velocity on noise - actions at x_t = t * noise + (1 - t) * actions,
t ~ Beta(1.5, 1) * 0.999 + 0.001; the loss is the mean over every step and real action dimension
(LeRobot 0.6.1 does not mask padded steps).

Randomness is per batch row (lerobot.policies.flow.matching.RowNoise): with one seeded row the
actions equal LeRobot's after `torch.manual_seed(seed)`; unseeded rows draw from torch's global
generator in LeRobot's order, so a whole unseeded batch equals LeRobot's batch too.
"""

from __future__ import annotations

import abc
import logging
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from lerobot.configs.policies import PreTrainedConfig
from lerobot.policies.flow.matching import pad_vector, sample_time, sinusoidal_time_embedding
from lerobot.policies.flow.network import FlowMatchingNetwork, TokenSequence, VLAInputs
from lerobot.policies.flow.sampling_policy import RTC_KEYWORDS, FlowSamplingPolicy
from lerobot.policies.pi.configuration import GEMMA_VARIANTS, PiFlowConfig
from lerobot.policies.pi.gemma import PaliGemmaWithExpert, additive_mask
from lerobot.utils.constants import ACTION, OBS_STATE

logger = logging.getLogger(__name__)


class PiFlowPolicy(FlowSamplingPolicy):
    """What the π0 and π0.5 policies share beyond flow/'s sampling policy: image and state
    preparation, the loss's reduction, the compiled and autocast sampler.

    Executes `n_action_steps` of each sampled chunk per row; a row samples a new chunk when its
    queue is empty, all such rows in one forward pass.
    """

    config: PiFlowConfig
    chunk_keywords = RTC_KEYWORDS | {"num_steps"}

    def __init__(self, config: PiFlowConfig):
        super().__init__(config)
        self._sample = self.model.sample_actions
        if config.compile_model:
            self._sample = self._compiled_sampler()

    @staticmethod
    @abc.abstractmethod
    def network_class() -> type[PiFlowMatching]:
        """The type's network (its suffix)."""

    def build_network(self, config: PiFlowConfig) -> PiFlowMatching:
        return self.network_class()(config)

    def restore_unsaved_buffers(self) -> None:
        """SigLIP's position ids."""
        self.model.paligemma_with_expert.reset_buffers()

    @classmethod
    def from_pretrained(
        cls,
        pretrained_name_or_path: str | Path,
        *,
        config: PreTrainedConfig | None = None,
        force_download: bool = False,
        resume_download: bool | None = None,
        proxies: dict | None = None,
        token: str | bool | None = None,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        revision: str | None = None,
        strict: bool = True,
        **kwargs: Any,
    ) -> PiFlowPolicy:
        """Every policy's `from_pretrained`, with the default LeRobot's π classes give `strict`
        (True). π checkpoints load every tensor by name whatever it says (`load_checkpoint`)."""
        return super().from_pretrained(
            pretrained_name_or_path,
            config=config,
            force_download=force_download,
            resume_download=resume_download,
            proxies=proxies,
            token=token,
            cache_dir=cache_dir,
            local_files_only=local_files_only,
            revision=revision,
            strict=strict,
            **kwargs,
        )

    def forward(
        self,
        batch: dict[str, Tensor],
        reduction: str = "mean",
        *,
        noise: Tensor | None = None,
        time: Tensor | None = None,
    ) -> tuple[Tensor, dict]:
        """Training loss for a preprocessed batch with normalised `action` (B, chunk_size, A):
        the squared velocity error, averaged over steps and real action dimensions ("none": per
        sample). Noise, then time, are drawn from torch's generator if None, as LeRobot does;
        LeRobot's π takes neither, so they come by keyword only, after its `reduction`."""
        actions = pad_vector(batch[ACTION], self.config.max_action_dim)
        losses = self.model(self.prepare_inputs(batch), actions, noise, time)
        losses = losses[:, :, : self.config.action_feature.shape[0]]
        info = {"loss_per_dim": losses.mean(dim=[0, 1]).detach().cpu().tolist()}
        loss = losses.mean(dim=(1, 2)) if reduction == "none" else losses.mean()
        info["loss"] = float(loss.detach().mean())
        return loss, info

    def prepare_state(self, batch: dict[str, Tensor]) -> Tensor:
        """The last state step, zero-padded to max_state_dim."""
        state = batch[OBS_STATE]
        state = state[:, -1, :] if state.ndim > 2 else state
        return pad_vector(state, self.config.max_state_dim)

    def prepare_images(self, batch: dict[str, Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """The cameras present (in config order), resized with centred padding to
        image_resolution and scaled to [-1, 1]; then a blank (-1) image with a masked-out token
        block for every camera the batch lacks (declared blank ones included), as in LeRobot."""
        features = self.config.image_features
        present = [key for key in features if key in batch]
        if not present:
            raise ValueError(
                f"the batch holds none of the policy's cameras ({', '.join(features)}); "
                "map the env's cameras with --rename_map"
            )
        images, masks = [], []
        for key in present:
            image = batch[key][:, -1] if batch[key].ndim == 5 else batch[key]
            images.append(prepare_image(image.to(torch.float32), tuple(self.config.image_resolution)))
            masks.append(torch.ones(image.shape[0], dtype=torch.bool, device=image.device))
        for _ in range(len(features) - len(present)):
            images.append(torch.ones_like(images[-1]) * -1)
            masks.append(torch.zeros_like(masks[-1]))
        return images, masks

    def sample_chunk(self, inputs: VLAInputs, noise: Tensor | None, num_steps: int | None = None) -> Tensor:
        """Through torch.compile with compile_model; under bfloat16 autocast with use_amp."""
        with self._amp():
            return self._sample(inputs, noise, num_steps)

    def _amp(self):
        """`--policy.use_amp=true` on CUDA: bfloat16 autocast (Gemma overflows float16)."""
        device = next(self.parameters()).device
        if self.config.use_amp and device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()

    def _compiled_sampler(self):
        device = self.config.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if not str(device).startswith("cuda"):
            logger.warning(
                "--policy.compile_model=true: compiled only on CUDA; running eagerly on %s", device
            )
            return self.model.sample_actions
        return torch.compile(self.model.sample_actions, mode=self.config.compile_mode, dynamic=True)


class PiFlowMatching(FlowMatchingNetwork):
    """The π network: PaliGemma with its expert, and the projections around them; each type
    adds the time (and maybe state) projections of its suffix (`add_time_projections`,
    `embed_suffix`). Sampling and the loss are flow/'s (`FlowMatchingNetwork`), over an
    additive attention mask."""

    def __init__(self, config: PiFlowConfig):
        super().__init__()
        self.config = config
        self.paligemma_with_expert = PaliGemmaWithExpert(
            config.paligemma_variant,
            config.action_expert_variant,
            image_size=config.image_resolution[0],
            adaptive_expert=config.adaptive_expert_norms,
            dtype=config.dtype,
        )
        self.paligemma_with_expert.gradient_checkpointing = config.gradient_checkpointing
        width = GEMMA_VARIANTS[config.action_expert_variant].width
        self.action_in_proj = nn.Linear(config.max_action_dim, width)
        self.action_out_proj = nn.Linear(width, config.max_action_dim)
        self.add_time_projections(config, width)
        self.set_requires_grad()

    @abc.abstractmethod
    def add_time_projections(self, config: PiFlowConfig, width: int) -> None:
        """The layers that bring the time (and the state) into the suffix."""

    @property
    def backbone(self) -> PaliGemmaWithExpert:
        return self.paligemma_with_expert

    @property
    def num_denoising_steps(self) -> int:
        return self.config.num_inference_steps

    def attention_mask(self, allowed: Tensor) -> Tensor:
        return additive_mask(allowed)

    def sample_time(self, n_rows: int, device: torch.device) -> Tensor:
        c = self.config
        return sample_time(
            n_rows,
            device,
            alpha=c.time_sampling_beta_alpha,
            beta=c.time_sampling_beta_beta,
            scale=c.time_sampling_scale,
            offset=c.time_sampling_offset,
        )

    def set_requires_grad(self) -> None:
        """LeRobot's fine-tuning switches: what the optimizer may change."""
        paligemma = self.paligemma_with_expert.paligemma
        if self.config.freeze_vision_encoder:
            paligemma.model.vision_tower.requires_grad_(False)
        if self.config.train_expert_only:
            paligemma.requires_grad_(False)

    def train(self, mode: bool = True) -> PiFlowMatching:
        """Frozen parts stay in eval mode while training, as in LeRobot."""
        super().train(mode)
        paligemma = self.paligemma_with_expert.paligemma
        if self.config.freeze_vision_encoder:
            paligemma.model.vision_tower.eval()
        if self.config.train_expert_only:
            paligemma.eval()
        return self

    # -- token sequences ---------------------------------------------------------------------

    def embed_prefix(self, inputs: VLAInputs) -> TokenSequence:
        """(embeddings, padding mask, block starts) of the VLM's tokens: every camera's and the
        instruction's tokens form one block, attending to each other. The state is not among
        them (π0: in the suffix; π0.5: in the prompt)."""
        embs, pad_masks = [], []
        for image, image_mask in zip(inputs.images, inputs.image_masks, strict=True):
            image_emb = self.paligemma_with_expert.embed_image(image)
            n_rows, n_tokens = image_emb.shape[:2]
            embs.append(image_emb)
            pad_masks.append(image_mask[:, None].expand(n_rows, n_tokens))
        embs.append(self.paligemma_with_expert.embed_language_tokens(inputs.tokens))
        pad_masks.append(inputs.token_masks)
        embs, pad_masks = torch.cat(embs, dim=1), torch.cat(pad_masks, dim=1)
        blocks = torch.zeros(pad_masks.shape, dtype=torch.bool, device=pad_masks.device)
        return embs, pad_masks, blocks

    @abc.abstractmethod
    def embed_suffix(
        self, state: Tensor, noisy_actions: Tensor, time: Tensor
    ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """(embeddings, padding mask, block starts, the expert's norm condition or None)."""

    def time_embedding(self, time: Tensor) -> Tensor:
        width = self.action_in_proj.out_features
        embedding = sinusoidal_time_embedding(time, width, self.config.min_period, self.config.max_period)
        return embedding.type(dtype=time.dtype)

    def suffix_masks(self, embs: Tensor, n_leading: int) -> tuple[Tensor, Tensor]:
        """Every suffix token is real; blocks start at each of the `n_leading` tokens and at the
        first action token."""
        n_rows, length = embs.shape[:2]
        pad = torch.ones(n_rows, length, dtype=torch.bool, device=embs.device)
        starts = [True] * n_leading + [True] + [False] * (self.config.chunk_size - 1)
        blocks = torch.tensor(starts, dtype=torch.bool, device=embs.device)[None, :].expand(n_rows, -1)
        return pad, blocks


def prepare_image(image: Tensor, resolution: tuple[int, int]) -> Tensor:
    """(B, C, H, W) in [0, 1] -> (B, C, h, w) in [-1, 1]: resized with centred padding when the
    size differs from `resolution` (h, w), in openpi's channels-last order of operations."""
    channels_last = image.permute(0, 2, 3, 1)
    if tuple(channels_last.shape[1:3]) != resolution:
        channels_last = resize_with_center_pad(channels_last, *resolution)
    return (channels_last * 2.0 - 1.0).permute(0, 3, 1, 2)


def resize_with_center_pad(images: Tensor, height: int, width: int) -> Tensor:
    """(B, H, W, C) float in [0, 1] -> (B, height, width, C): bilinear resize keeping the aspect
    ratio, clamped to [0, 1], then black padding split evenly (the odd pixel bottom/right)."""
    x = images.permute(0, 3, 1, 2)
    current_height, current_width = x.shape[2:]
    ratio = max(current_width / width, current_height / height)
    resized_height, resized_width = int(current_height / ratio), int(current_width / ratio)
    x = F.interpolate(x, size=(resized_height, resized_width), mode="bilinear", align_corners=False)
    x = x.clamp(0.0, 1.0)
    top, extra_height = divmod(height - resized_height, 2)
    left, extra_width = divmod(width - resized_width, 2)
    x = F.pad(x, (left, left + extra_width, top, top + extra_height), mode="constant", value=0.0)
    return x.permute(0, 2, 3, 1)
