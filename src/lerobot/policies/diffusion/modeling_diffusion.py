"""Diffusion Policy (Chi et al., 2023, arXiv:2303.04137).

Module and parameter names match LeRobot's `DiffusionPolicy` (`diffusion.rgb_encoder.0.backbone.4.0.conv1.weight`,
`diffusion.unet.down_modules.0.0.cond_encoder.1.weight`, ...) so its model.safetensors loads
with strict keys, and each step follows its arithmetic so the same weights and noise give the
same actions. Inputs arrive normalised and actions leave normalised.

Randomness is per batch row: `reset(env_ids, seeds)` gives each row a CPU generator seeded with
its episode seed, which draws that row's initial noise and DDPM step noise. An episode's
actions then depend on its seed only, not on the batch it ran in or the device; with one row
they equal LeRobot's after `torch.manual_seed(seed)` on the CPU.

Training (`forward`) noises the action sequence at a random timestep and regresses the noise
("epsilon") or the clean sequence ("sample"), per `prediction_type`, with MSE. While training,
with `crop_is_random`, each encoder call crops at one random position drawn from torch's
generator, as LeRobot's (torchvision's RandomCrop) does; evaluation crops centrally.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from lerobot.policies.action_queue import RowActionQueue, batch_size
from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
from lerobot.policies.diffusion.schedulers import Generators, draw_noise, make_scheduler
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.resnet import feature_channels, feature_map_size, resnet_trunk
from lerobot.utils.constants import ACTION, ACTION_IS_PAD, OBS_ENV_STATE, OBS_IMAGES, OBS_STATE


class DiffusionPolicy(PreTrainedPolicy):
    """Keeps the last `n_obs_steps` observations and the queued actions of every row."""

    config_class = DiffusionConfig
    name = "diffusion"

    def __init__(self, config: DiffusionConfig):
        super().__init__(config)
        self.diffusion = DiffusionModel(config)
        self._history = ObservationHistory(config.n_obs_steps)
        self._queue = RowActionQueue()
        self._generators: dict[int, torch.Generator] = {}

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        """Forget the history and queued actions of `env_ids`; reseed their noise generators."""
        self._history.reset(env_ids)
        self._queue.reset(env_ids)
        if env_ids is None:
            self._generators.clear()
            return
        seeds = list(seeds) if seeds is not None else [None] * len(env_ids)
        for row, seed in zip(env_ids, seeds, strict=True):
            self._generators[row] = _generator(seed)

    def save_rows(self, rows: Sequence[int]) -> list[Any]:
        generators = [self._generators.get(row) for row in rows]
        return list(zip(self._history.save(rows), self._queue.save(rows), generators, strict=True))

    def restore_rows(self, states: Sequence[Any]) -> None:
        states = [state if state is not None else (None, None, None) for state in states]
        self._history.restore([history for history, _, _ in states])
        self._queue.restore([queued for _, queued, _ in states])
        self._generators = {row: state[2] for row, state in enumerate(states) if state[2] is not None}

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor], noise: Tensor | None = None) -> Tensor:
        """The next action of every row; rows whose queue ran out plan a new chunk together.

        `noise` (B, horizon, action_dim) is LeRobot's: the initial sample of the rows that plan
        at this step (each takes its own row of it); DDPM's later steps still draw from each
        row's generator.
        """
        n_rows = batch_size(batch)
        self._history.push(self._stack_cameras(batch))
        rows = self._queue.empty_rows(n_rows)
        if rows:
            generators = [self._generators.setdefault(row, _generator(None)) for row in rows]
            rows_noise = noise[rows] if noise is not None else None
            actions = self.diffusion.generate_actions(
                self._history.rows(rows), noise=rows_noise, generator=generators
            )
            self._queue.fill(rows, actions, n_rows)
        return self._queue.pop()

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Training loss for a normalised batch: observations (B, n_obs_steps, ...), `action`
        (B, horizon, A) and `action_is_pad` (B, horizon); returns (loss, {"mse_loss"})."""
        loss = self.diffusion.compute_loss(self._stack_cameras(batch), batch[ACTION], batch[ACTION_IS_PAD])
        return loss, {"mse_loss": float(loss.detach())}

    @torch.no_grad()
    def predict_action_chunk(
        self, batch: dict[str, Tensor], noise: Tensor | None = None, *, generator: Generators = None
    ) -> Tensor:
        """(B, n_action_steps, action_dim): the actions from the current step on.

        As in LeRobot, the observations are those `select_action` keeps when it holds every
        row's history (the batch's values are then not read), else the batch's own, shaped
        (B, n_obs_steps, ...) per key (a camera's (B, C, H, W) counts as one step). `noise`
        (B, horizon, action_dim) fixes the initial sample; `generator` draws DDPM's step noise
        (torch's global generator when None, as LeRobot's does).
        """
        observations = self._history.complete(batch_size(batch))
        if observations is None:
            observations = self._stack_cameras(_with_step_axis(batch, self.config.image_features))
        return self.diffusion.generate_actions(observations, noise=noise, generator=generator)

    def _stack_cameras(self, batch: dict[str, Tensor]) -> dict[str, Tensor]:
        """The model's inputs: state, env state, and all cameras stacked on dim -4."""
        inputs = {key: batch[key] for key in (OBS_STATE, OBS_ENV_STATE) if key in batch}
        if self.config.image_features:
            inputs[OBS_IMAGES] = torch.stack([batch[key] for key in self.config.image_features], dim=-4)
        return inputs


def _with_step_axis(batch: dict[str, Tensor], cameras: Sequence[str]) -> dict[str, Tensor]:
    """The batch with single-step camera frames (B, C, H, W) as histories of one step."""
    return {
        key: value.unsqueeze(1) if key in cameras and value.ndim == 4 else value
        for key, value in batch.items()
    }


def _generator(seed: int | None) -> torch.Generator:
    """A CPU generator; unseeded rows draw their seed from torch's global generator."""
    if seed is None:
        seed = int(torch.randint(0, 2**62, ()).item())
    return torch.Generator().manual_seed(int(seed))


class ObservationHistory:
    """The last n observations of every row; a row's first observation fills all n slots."""

    def __init__(self, n_steps: int):
        self.n_steps = n_steps
        self.steps: dict[str, Tensor] = {}  # key -> (B, n_steps, ...)
        self.pending: set[int] = set()

    def reset(self, rows: Sequence[int] | None = None) -> None:
        if rows is None:
            self.steps, self.pending = {}, set()
        else:
            self.pending.update(rows)

    def push(self, observation: dict[str, Tensor]) -> None:
        n_rows = batch_size(observation)
        repeated = {key: self._repeat(value) for key, value in observation.items()}
        if not self.steps or next(iter(self.steps.values())).shape[0] != n_rows:
            self.steps, self.pending = repeated, set()
            return
        restart = torch.zeros(n_rows, dtype=torch.bool)
        restart[sorted(r for r in self.pending if r < n_rows)] = True
        for key, value in observation.items():
            shifted = torch.cat([self.steps[key][:, 1:], value.unsqueeze(1)], dim=1)
            mask = restart.to(value.device).view(-1, *([1] * (shifted.ndim - 1)))
            self.steps[key] = torch.where(mask, repeated[key], shifted)
        self.pending.clear()

    def save(self, rows: Sequence[int]) -> list[dict[str, Tensor] | None]:
        """Each row's last n observations (None: the row's next observation starts afresh)."""
        if not self.steps:
            return [None] * len(rows)
        n_rows = next(iter(self.steps.values())).shape[0]
        return [
            None
            if row in self.pending or row >= n_rows
            else {k: v[row].clone() for k, v in self.steps.items()}
            for row in rows
        ]

    def restore(self, states: Sequence[dict[str, Tensor] | None]) -> None:
        """Rows in the order of `states`, as `save` gave them; None rows start afresh."""
        kept = [state for state in states if state is not None]
        if not kept:
            self.steps, self.pending = {}, set()
            return
        self.steps = {
            key: torch.stack([s[key] if s is not None else torch.zeros_like(value) for s in states])
            for key, value in kept[0].items()
        }
        self.pending = {row for row, state in enumerate(states) if state is None}

    def complete(self, n_rows: int) -> dict[str, Tensor] | None:
        """Every row's last n observations when all `n_rows` rows have them, else None."""
        if not self.steps or self.pending or next(iter(self.steps.values())).shape[0] != n_rows:
            return None
        return dict(self.steps)

    def rows(self, rows: Sequence[int]) -> dict[str, Tensor]:
        index = list(rows)
        return {key: value[torch.as_tensor(index, device=value.device)] for key, value in self.steps.items()}

    def _repeat(self, value: Tensor) -> Tensor:
        return value.unsqueeze(1).expand(value.shape[0], self.n_steps, *value.shape[1:]).clone()


class DiffusionModel(nn.Module):
    """Observation encoders, the conditional UNet and the noise scheduler."""

    def __init__(self, config: DiffusionConfig):
        super().__init__()
        self.config = config
        cond_dim = config.robot_state_feature.shape[0]
        n_cameras = len(config.image_features)
        if n_cameras:
            if config.use_separate_rgb_encoder_per_camera:
                self.rgb_encoder = nn.ModuleList([DiffusionRgbEncoder(config) for _ in range(n_cameras)])
                cond_dim += self.rgb_encoder[0].feature_dim * n_cameras
            else:
                self.rgb_encoder = DiffusionRgbEncoder(config)
                cond_dim += self.rgb_encoder.feature_dim * n_cameras
        if config.env_state_feature is not None:
            cond_dim += config.env_state_feature.shape[0]
        self.unet = DiffusionConditionalUnet1d(config, global_cond_dim=cond_dim * config.n_obs_steps)
        self.noise_scheduler = make_scheduler(
            config.noise_scheduler_type,
            num_train_timesteps=config.num_train_timesteps,
            beta_schedule=config.beta_schedule,
            beta_start=config.beta_start,
            beta_end=config.beta_end,
            prediction_type=config.prediction_type,
            clip_sample=config.clip_sample,
            clip_sample_range=config.clip_sample_range,
        )

    def generate_actions(
        self, batch: dict[str, Tensor], noise: Tensor | None = None, generator: Generators = None
    ) -> Tensor:
        """(B, n_action_steps, action_dim): the denoised sequence from the current step on."""
        n_rows, n_obs = batch[OBS_STATE].shape[:2]
        if n_obs != self.config.n_obs_steps:
            raise ValueError(f"expected {self.config.n_obs_steps} observation steps, got {n_obs}")
        global_cond = self._global_conditioning(batch)
        sample = self._sample(n_rows, global_cond, noise, generator)
        start = n_obs - 1
        return sample[:, start : start + self.config.n_action_steps]

    def compute_loss(self, batch: dict[str, Tensor], actions: Tensor, action_is_pad: Tensor) -> Tensor:
        """MSE of the UNet's prediction at a random timestep per row (DDPM forward process)."""
        global_cond = self._global_conditioning(batch)
        noise = torch.randn_like(actions)
        n_rows = actions.shape[0]
        steps = torch.randint(0, self.config.num_train_timesteps, (n_rows,), device=actions.device)
        alpha_bar = self.noise_scheduler.alphas_cumprod.to(actions.device)[steps].view(-1, 1, 1)
        noisy = alpha_bar.sqrt() * actions + (1 - alpha_bar).sqrt() * noise
        predicted = self.unet(noisy, steps, global_cond=global_cond)
        target = noise if self.config.prediction_type == "epsilon" else actions
        loss = F.mse_loss(predicted, target, reduction="none")
        if self.config.do_mask_loss_for_padding:
            loss = loss * (~action_is_pad).unsqueeze(-1)
        return loss.mean()

    def _sample(
        self, n_rows: int, global_cond: Tensor, noise: Tensor | None, generator: Generators
    ) -> Tensor:
        reference = next(self.parameters())
        shape = (n_rows, self.config.horizon, self.config.action_feature.shape[0])
        sample = (
            noise if noise is not None else draw_noise(shape, generator, reference.device, reference.dtype)
        )
        timesteps = self.noise_scheduler.timesteps(self.config.resolved_inference_steps)
        for i, t in enumerate(timesteps):
            prev_t = timesteps[i + 1] if i + 1 < len(timesteps) else -1
            step = torch.full((n_rows,), t, dtype=torch.long, device=sample.device)
            model_output = self.unet(sample, step, global_cond=global_cond)
            sample = self.noise_scheduler.step(model_output, t, prev_t, sample, generator)
        return sample

    def _global_conditioning(self, batch: dict[str, Tensor]) -> Tensor:
        """(B, n_obs_steps * (state + cameras * keypoint features + env state)), flattened per row."""
        n_rows, n_obs = batch[OBS_STATE].shape[:2]
        parts = [batch[OBS_STATE]]
        if self.config.image_features:
            parts.append(self._image_features(batch[OBS_IMAGES], n_rows, n_obs))
        if self.config.env_state_feature is not None:
            parts.append(batch[OBS_ENV_STATE])
        return torch.cat(parts, dim=-1).flatten(start_dim=1)

    def _image_features(self, images: Tensor, n_rows: int, n_obs: int) -> Tensor:
        """images (B, S, n_cameras, C, H, W) -> (B, S, n_cameras * feature_dim), cameras in order."""
        flat = images.flatten(0, 1)  # (B*S, n_cameras, C, H, W)
        if isinstance(self.rgb_encoder, nn.ModuleList):
            per_camera = [encoder(flat[:, i]) for i, encoder in enumerate(self.rgb_encoder)]
            features = torch.stack(per_camera, dim=1)  # (B*S, n_cameras, F)
        else:
            features = self.rgb_encoder(flat.flatten(0, 1)).view(flat.shape[0], flat.shape[1], -1)
        return features.reshape(n_rows, n_obs, -1)


class DiffusionRgbEncoder(nn.Module):
    """Resize and crop, ResNet trunk, spatial soft-argmax keypoints, linear + ReLU."""

    def __init__(self, config: DiffusionConfig):
        super().__init__()
        self.resize_shape = tuple(config.resize_shape) if config.resize_shape is not None else None
        self.crop_shape = tuple(config.crop_shape) if config.crop_shape is not None else None
        self.crop_is_random = config.crop_is_random
        norm = _group_norm if config.use_group_norm else nn.BatchNorm2d
        self.backbone = nn.Sequential(*resnet_trunk(config.vision_backbone, norm).values())
        height, width = config.encoder_image_size
        feature_shape = (
            feature_channels(config.vision_backbone),
            feature_map_size(height),
            feature_map_size(width),
        )
        self.pool = SpatialSoftmax(feature_shape, num_kp=config.spatial_softmax_num_keypoints)
        self.feature_dim = config.spatial_softmax_num_keypoints * 2
        self.out = nn.Linear(config.spatial_softmax_num_keypoints * 2, self.feature_dim)
        self.relu = nn.ReLU()

    def forward(self, images: Tensor) -> Tensor:
        """(N, C, H, W) in normalised pixel space -> (N, feature_dim)."""
        if self.resize_shape is not None:
            images = resize(images, self.resize_shape)
        if self.crop_shape is not None and self.training and self.crop_is_random:
            images = random_crop(images, self.crop_shape)
        elif self.crop_shape is not None:
            images = center_crop(images, self.crop_shape)
        keypoints = self.pool(self.backbone(images))
        return self.relu(self.out(torch.flatten(keypoints, start_dim=1)))


def _group_norm(channels: int) -> nn.GroupNorm:
    """LeRobot's replacement for BatchNorm when `use_group_norm`: groups of 16 channels."""
    return nn.GroupNorm(num_groups=channels // 16, num_channels=channels)


def resize(images: Tensor, size: tuple[int, int]) -> Tensor:
    """Bilinear, antialiased resize, as torchvision's `Resize` does for float tensors."""
    if tuple(images.shape[-2:]) == tuple(size):
        return images
    return F.interpolate(images, size=list(size), mode="bilinear", align_corners=False, antialias=True)


def random_crop(images: Tensor, size: tuple[int, int]) -> Tensor:
    """One crop of `size` at a random position for all of `images`, the row then the column
    drawn from torch's generator as torchvision's RandomCrop draws them."""
    height, width = images.shape[-2:]
    crop_h, crop_w = size
    if (crop_h, crop_w) == (height, width):
        return images
    top = int(torch.randint(0, height - crop_h + 1, size=(1,)).item())
    left = int(torch.randint(0, width - crop_w + 1, size=(1,)).item())
    return images[..., top : top + crop_h, left : left + crop_w]


def center_crop(images: Tensor, size: tuple[int, int]) -> Tensor:
    """torchvision's `CenterCrop`: zero-pad when too small, offsets rounded half to even."""
    crop_h, crop_w = size
    height, width = images.shape[-2:]
    if crop_h > height or crop_w > width:
        pad_w, pad_h = max(crop_w - width, 0), max(crop_h - height, 0)
        images = F.pad(images, [pad_w // 2, (pad_w + 1) // 2, pad_h // 2, (pad_h + 1) // 2])
        height, width = images.shape[-2:]
    top = int(round((height - crop_h) / 2.0))
    left = int(round((width - crop_w) / 2.0))
    return images[..., top : top + crop_h, left : left + crop_w]


class SpatialSoftmax(nn.Module):
    """Keypoints as the softmax-weighted mean pixel position of each channel (Levine et al., 2016).

    A 1x1 convolution first maps the C feature channels to `num_kp` keypoint channels; the
    pixel grid runs from -1 to 1 in x (columns) and y (rows).
    """

    def __init__(self, input_shape: tuple[int, int, int], num_kp: int):
        super().__init__()
        channels, self.height, self.width = input_shape
        self.nets = nn.Conv2d(channels, num_kp, kernel_size=1)
        self.num_kp = num_kp
        grid_x, grid_y = np.meshgrid(np.linspace(-1.0, 1.0, self.width), np.linspace(-1.0, 1.0, self.height))
        grid = np.stack([grid_x.reshape(-1), grid_y.reshape(-1)], axis=1)
        self.register_buffer("pos_grid", torch.from_numpy(grid).float())  # (H*W, 2)

    def forward(self, features: Tensor) -> Tensor:
        """(N, C, H, W) -> (N, num_kp, 2) expected (x, y) per keypoint."""
        logits = self.nets(features).reshape(-1, self.height * self.width)
        return (F.softmax(logits, dim=-1) @ self.pos_grid).view(-1, self.num_kp, 2)


class DiffusionSinusoidalPosEmb(nn.Module):
    """Sine/cosine embedding of the diffusion timestep (first half sines, second half cosines)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, timesteps: Tensor) -> Tensor:
        half = self.dim // 2
        rate = math.log(10000) / (half - 1)
        frequencies = torch.exp(torch.arange(half, device=timesteps.device) * -rate)
        angles = timesteps.unsqueeze(-1) * frequencies.unsqueeze(0)
        return torch.cat((angles.sin(), angles.cos()), dim=-1)


class DiffusionConv1dBlock(nn.Module):
    """Conv1d, GroupNorm, Mish."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, n_groups: int = 8):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2),
            nn.GroupNorm(n_groups, out_channels),
            nn.Mish(),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.block(x)


class DiffusionConditionalResidualBlock1d(nn.Module):
    """Two conv blocks with FiLM conditioning in between (per-channel bias, and scale if enabled)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        cond_dim: int,
        kernel_size: int,
        n_groups: int,
        use_film_scale_modulation: bool,
    ):
        super().__init__()
        self.out_channels = out_channels
        self.use_film_scale_modulation = use_film_scale_modulation
        self.conv1 = DiffusionConv1dBlock(in_channels, out_channels, kernel_size, n_groups)
        film_channels = out_channels * 2 if use_film_scale_modulation else out_channels
        self.cond_encoder = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, film_channels))
        self.conv2 = DiffusionConv1dBlock(out_channels, out_channels, kernel_size, n_groups)
        self.residual_conv = (
            nn.Conv1d(in_channels, out_channels, 1) if in_channels != out_channels else nn.Identity()
        )

    def forward(self, x: Tensor, cond: Tensor) -> Tensor:
        out = self.conv1(x)
        film = self.cond_encoder(cond).unsqueeze(-1)  # (B, film_channels, 1)
        if self.use_film_scale_modulation:
            out = film[:, : self.out_channels] * out + film[:, self.out_channels :]
        else:
            out = out + film
        return self.conv2(out) + self.residual_conv(x)


class DiffusionConditionalUnet1d(nn.Module):
    """A 1-D UNet over the action sequence, conditioned on timestep and observations by FiLM.

    Encoder stages halve the sequence (all but the last); decoder stages, one fewer, double it
    and read the matching encoder output through a skip connection. The first encoder stage's
    output is not used by the decoder, as in LeRobot's (and the original) implementation.
    """

    def __init__(self, config: DiffusionConfig, global_cond_dim: int):
        super().__init__()
        step_dim = config.diffusion_step_embed_dim
        self.diffusion_step_encoder = nn.Sequential(
            DiffusionSinusoidalPosEmb(step_dim),
            nn.Linear(step_dim, step_dim * 4),
            nn.Mish(),
            nn.Linear(step_dim * 4, step_dim),
        )
        action_dim = config.action_feature.shape[0]
        dims = [action_dim, *config.down_dims]
        stages = list(zip(dims[:-1], dims[1:], strict=True))

        def block(in_ch: int, out_ch: int) -> DiffusionConditionalResidualBlock1d:
            return DiffusionConditionalResidualBlock1d(
                in_ch,
                out_ch,
                cond_dim=step_dim + global_cond_dim,
                kernel_size=config.kernel_size,
                n_groups=config.n_groups,
                use_film_scale_modulation=config.use_film_scale_modulation,
            )

        self.down_modules = nn.ModuleList(
            nn.ModuleList(
                [
                    block(in_ch, out_ch),
                    block(out_ch, out_ch),
                    nn.Conv1d(out_ch, out_ch, 3, 2, 1) if i < len(stages) - 1 else nn.Identity(),
                ]
            )
            for i, (in_ch, out_ch) in enumerate(stages)
        )
        widest = config.down_dims[-1]
        self.mid_modules = nn.ModuleList([block(widest, widest), block(widest, widest)])
        self.up_modules = nn.ModuleList(
            nn.ModuleList(
                [block(wide * 2, narrow), block(narrow, narrow), nn.ConvTranspose1d(narrow, narrow, 4, 2, 1)]
            )
            for narrow, wide in reversed(stages[1:])
        )
        first = config.down_dims[0]
        self.final_conv = nn.Sequential(
            DiffusionConv1dBlock(first, first, kernel_size=config.kernel_size),
            nn.Conv1d(first, action_dim, 1),
        )

    def forward(self, x: Tensor, timestep: Tensor, global_cond: Tensor) -> Tensor:
        """x (B, T, action_dim), timestep (B,), global_cond (B, D) -> (B, T, action_dim)."""
        x = x.transpose(1, 2)
        cond = torch.cat([self.diffusion_step_encoder(timestep), global_cond], dim=-1)
        skips = []
        for first, second, downsample in self.down_modules:
            x = second(first(x, cond), cond)
            skips.append(x)
            x = downsample(x)
        for middle in self.mid_modules:
            x = middle(x, cond)
        for first, second, upsample in self.up_modules:
            x = torch.cat((x, skips.pop()), dim=1)
            x = upsample(second(first(x, cond), cond))
        return self.final_conv(x).transpose(1, 2)
