"""DDPM and DDIM reverse-diffusion steps, numerically as in the diffusers schedulers.

LeRobot's Diffusion Policy samples with diffusers' `DDPMScheduler` (variance "fixed_small")
or `DDIMScheduler` (eta 0, final alpha 1), "leading" timestep spacing, no thresholding. The
formulas below are those of Ho et al. (2020) and Song et al. (2021); every coefficient is a
float32 scalar tensor computed in diffusers' order of operations, so the same model outputs
and noise give the same samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

MAX_BETA = 0.999
Generators = torch.Generator | Sequence[torch.Generator] | None


def make_betas(schedule: str, n_steps: int, beta_start: float, beta_end: float) -> Tensor:
    """The forward-process variances beta_1..beta_T (float32)."""
    if schedule == "linear":
        return torch.linspace(beta_start, beta_end, n_steps, dtype=torch.float32)
    if schedule == "scaled_linear":
        return torch.linspace(beta_start**0.5, beta_end**0.5, n_steps, dtype=torch.float32) ** 2
    if schedule == "squaredcos_cap_v2":
        return _cosine_betas(n_steps)
    raise ValueError(f"unknown beta schedule {schedule!r}")


def _cosine_betas(n_steps: int) -> Tensor:
    """Nichol & Dhariwal (2021): alpha_bar(t) = cos^2((t + 0.008) / 1.008 * pi / 2), capped betas."""

    def alpha_bar(t: float) -> float:
        return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2

    betas = [min(1 - alpha_bar((i + 1) / n_steps) / alpha_bar(i / n_steps), MAX_BETA) for i in range(n_steps)]
    return torch.tensor(betas, dtype=torch.float32)


class NoiseScheduler:
    """Shared state: cumulative alphas and the inference timesteps."""

    def __init__(
        self,
        num_train_timesteps: int,
        beta_schedule: str,
        beta_start: float,
        beta_end: float,
        prediction_type: str,
        clip_sample: bool,
        clip_sample_range: float,
    ):
        self.num_train_timesteps = num_train_timesteps
        self.alphas_cumprod = torch.cumprod(
            1.0 - make_betas(beta_schedule, num_train_timesteps, beta_start, beta_end), 0
        )
        self.one = torch.tensor(1.0)
        self.prediction_type = prediction_type
        self.clip_sample = clip_sample
        self.clip_sample_range = clip_sample_range

    def timesteps(self, num_inference_steps: int) -> list[int]:
        """Descending timesteps, "leading" spacing: k * (T // n) for k = n-1 .. 0."""
        ratio = self.num_train_timesteps // num_inference_steps
        return [k * ratio for k in reversed(range(num_inference_steps))]

    def _predict_original(self, model_output: Tensor, sample: Tensor, alpha_prod_t: Tensor) -> Tensor:
        """x_0 from the model output, clipped to [-range, range] when configured."""
        if self.prediction_type == "epsilon":
            original = (sample - (1 - alpha_prod_t) ** 0.5 * model_output) / alpha_prod_t**0.5
        else:
            original = model_output
        if self.clip_sample:
            original = original.clamp(-self.clip_sample_range, self.clip_sample_range)
        return original

    def _alpha_products(self, t: int, prev_t: int) -> tuple[Tensor, Tensor]:
        """Cumulative alpha products at t and at the previous step (1 before the first)."""
        alpha_prod_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one
        return self.alphas_cumprod[t], alpha_prod_prev


class DDPMScheduler(NoiseScheduler):
    """Ancestral sampling; adds fresh Gaussian noise at every step but the last."""

    def step(
        self, model_output: Tensor, t: int, prev_t: int, sample: Tensor, generator: Generators
    ) -> Tensor:
        alpha_prod_t, alpha_prod_prev = self._alpha_products(t, prev_t)
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_prev = 1 - alpha_prod_prev
        current_alpha = alpha_prod_t / alpha_prod_prev
        current_beta = 1 - current_alpha
        original = self._predict_original(model_output, sample, alpha_prod_t)
        original_coeff = (alpha_prod_prev**0.5 * current_beta) / beta_prod_t
        sample_coeff = current_alpha**0.5 * beta_prod_prev / beta_prod_t
        previous = original_coeff * original + sample_coeff * sample
        if t > 0:
            noise = draw_noise(model_output.shape, generator, model_output.device, model_output.dtype)
            previous = previous + self._variance(alpha_prod_t, alpha_prod_prev) ** 0.5 * noise
        return previous

    @staticmethod
    def _variance(alpha_prod_t: Tensor, alpha_prod_prev: Tensor) -> Tensor:
        """The posterior variance beta~_t ("fixed_small")."""
        current_beta = 1 - alpha_prod_t / alpha_prod_prev
        variance = (1 - alpha_prod_prev) / (1 - alpha_prod_t) * current_beta
        return torch.clamp(variance, min=1e-20)


class DDIMScheduler(NoiseScheduler):
    """Deterministic sampling (eta = 0): the next sample follows the predicted noise direction."""

    def step(
        self, model_output: Tensor, t: int, prev_t: int, sample: Tensor, generator: Generators
    ) -> Tensor:
        alpha_prod_t, alpha_prod_prev = self._alpha_products(t, prev_t)
        beta_prod_t = 1 - alpha_prod_t
        original = self._predict_original(model_output, sample, alpha_prod_t)
        if self.prediction_type == "epsilon":
            epsilon = model_output
        else:
            epsilon = (sample - alpha_prod_t**0.5 * original) / beta_prod_t**0.5
        direction = (1 - alpha_prod_prev) ** 0.5 * epsilon
        return alpha_prod_prev**0.5 * original + direction


def make_scheduler(kind: str, **settings) -> NoiseScheduler:
    return {"DDPM": DDPMScheduler, "DDIM": DDIMScheduler}[kind](**settings)


def draw_noise(
    shape: Sequence[int], generator: Generators, device: torch.device, dtype: torch.dtype
) -> Tensor:
    """Standard normal noise as diffusers' `randn_tensor` draws it.

    A list of generators draws row i from generator i (so a row's noise does not depend on the
    other rows); CPU generators draw on the CPU and the result moves to `device`, which makes a
    seeded episode reproducible on any device.
    """
    shape = tuple(shape)
    if isinstance(generator, Sequence) and len(generator) == 1:
        generator = generator[0]
    if isinstance(generator, Sequence):
        rows = [torch.randn((1, *shape[1:]), generator=g, device=g.device, dtype=dtype) for g in generator]
        return torch.cat(rows).to(device)
    if generator is None:
        return torch.randn(shape, device=device, dtype=dtype)
    return torch.randn(shape, generator=generator, device=generator.device, dtype=dtype).to(device)
