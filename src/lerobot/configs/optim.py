"""LeRobot's optimizer and learning-rate scheduler settings (`--optimizer.*`, `--scheduler.*`).

A policy's training preset (`get_optimizer_preset`, `get_scheduler_preset` on its config) is one
of these, with LeRobot 0.6.1's types, fields and defaults, so `lerobot-train` trains the model
LeRobot's would; `--use_policy_training_preset=false` takes them from the command line instead.
A schedule here is only its factor of the optimizer's rate at each step (`lr_factor`): the
training loop turns it into torch's LambdaLR, and nothing here imports torch.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any

import draccus

from lerobot.utils.errors import ConfigError, require_choice
from lerobot.utils.schedules import cosine_decay_with_warmup


@dataclass
class OptimizerConfig(draccus.ChoiceRegistry, abc.ABC):
    """`--optimizer.type=adam|adamw|sgd` and its fields; the gradient's global norm is clipped to
    `grad_clip_norm` before every step (0 or less: not clipped)."""

    lr: float
    """Learning rate (the schedule scales it step by step)."""
    weight_decay: float
    """Weight decay (AdamW: decoupled from the gradient)."""
    grad_clip_norm: float
    """Clip the gradient's global norm to this before each step; 0 or less: no clipping."""

    @property
    def type(self) -> str:
        return self.get_choice_name(self.__class__)

    @classmethod
    def default_choice_name(cls) -> str | None:
        return "adam"


@OptimizerConfig.register_subclass("adam")
@dataclass
class AdamConfig(OptimizerConfig):
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    """Decay rates of the running averages of the gradient and its square."""
    eps: float = 1e-8
    """Added to the denominator for numerical stability."""
    weight_decay: float = 0.0
    grad_clip_norm: float = 10.0


@OptimizerConfig.register_subclass("adamw")
@dataclass
class AdamWConfig(OptimizerConfig):
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    """Decay rates of the running averages of the gradient and its square."""
    eps: float = 1e-8
    """Added to the denominator for numerical stability."""
    weight_decay: float = 1e-2
    grad_clip_norm: float = 10.0


@OptimizerConfig.register_subclass("sgd")
@dataclass
class SGDConfig(OptimizerConfig):
    lr: float = 1e-3
    momentum: float = 0.0
    """Momentum factor; 0: plain SGD."""
    dampening: float = 0.0
    """Dampening of the momentum."""
    nesterov: bool = False
    """Use Nesterov momentum."""
    weight_decay: float = 0.0
    grad_clip_norm: float = 10.0


# LeRobot's optimizers for policy types this build does not have: their flags parse (so a
# LeRobot command line gets this one-line refusal, not an unknown-flag error) and are refused.
@OptimizerConfig.register_subclass("xvla-adamw")
@dataclass
class XVLAAdamWConfig(OptimizerConfig):
    """X-VLA's AdamW (a smaller learning rate for its VLM and soft prompts); refused."""

    lr: float = 1e-4
    betas: tuple[float, float] = (0.9, 0.99)
    """Decay rates of the running averages of the gradient and its square."""
    eps: float = 1e-8
    """Added to the denominator for numerical stability."""
    weight_decay: float = 0.0
    grad_clip_norm: float = 10.0
    soft_prompt_lr_scale: float = 1.0
    """Soft prompts' learning rate as a fraction of lr."""
    soft_prompt_warmup_lr_scale: float | None = None
    """Soft prompts' starting fraction of lr during warm-up."""

    def __post_init__(self) -> None:
        raise ConfigError(
            "--optimizer.type=xvla-adamw: X-VLA's optimizer; X-VLA is not in this build, use "
            "--optimizer.type=adamw"
        )


@OptimizerConfig.register_subclass("multi_adam")
@dataclass
class MultiAdamConfig(OptimizerConfig):
    """One Adam per named parameter group (LeRobot's optimizer for actor-critic policies such as
    SAC); refused."""

    lr: float = 1e-3
    weight_decay: float = 0.0
    grad_clip_norm: float = 10.0
    optimizer_groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Settings per parameter group name (lr, weight_decay, ...)."""

    def __post_init__(self) -> None:
        raise ConfigError(
            "--optimizer.type=multi_adam: separate optimizers per network (LeRobot's, for SAC) are "
            "not in this build; use --optimizer.type=adam or adamw"
        )


@dataclass
class LRSchedulerConfig(draccus.ChoiceRegistry, abc.ABC):
    """`--scheduler.type=...` and its fields: the learning rate as a factor of the optimizer's,
    step by step (the first step is step 0)."""

    num_warmup_steps: int | None
    """Steps of linear warm-up from 0 to the full rate."""

    @property
    def type(self) -> str:
        return self.get_choice_name(self.__class__)

    @abc.abstractmethod
    def lr_factor(self, step: int, total_steps: int) -> float:
        """The factor at `step` of a run of `total_steps` steps."""


def warmup_then_cosine(step: int, total_steps: int, warmup_steps: int, cycles: float = 0.5) -> float:
    """Linear warm-up from 0, then `cycles` cosine periods down to 0 over the remaining steps."""
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * cycles * 2.0 * progress)))


DIFFUSER_SCHEDULES = ("cosine", "linear", "constant", "constant_with_warmup")


@LRSchedulerConfig.register_subclass("diffuser")
@dataclass
class DiffuserSchedulerConfig(LRSchedulerConfig):
    """The schedules of diffusers' `get_scheduler` by name (Diffusion Policy's preset: cosine
    with a 500-step warm-up)."""

    name: str = "cosine"
    """diffusers' schedule: cosine, linear, constant or constant_with_warmup."""
    num_warmup_steps: int | None = None

    def __post_init__(self) -> None:
        require_choice("--scheduler.name", self.name, DIFFUSER_SCHEDULES)

    def lr_factor(self, step: int, total_steps: int) -> float:
        warmup = self.num_warmup_steps or 0
        if self.name == "cosine":
            return warmup_then_cosine(step, total_steps, warmup)
        if self.name == "constant":
            return 1.0
        if step < warmup:
            return step / max(1, warmup)
        if self.name == "constant_with_warmup":
            return 1.0
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))  # linear


@LRSchedulerConfig.register_subclass("cosine_decay_with_warmup")
@dataclass
class CosineDecayWithWarmupSchedulerConfig(LRSchedulerConfig):
    """SmolVLA's and π's preset: warm-up from 1/(warmup+1), then cosine decay from `peak_lr` to
    `decay_lr` over `num_decay_steps` (both shrunk to fit a shorter run)."""

    num_warmup_steps: int
    num_decay_steps: int
    """Steps of the cosine decay from peak_lr to decay_lr."""
    peak_lr: float
    """The rate after warm-up."""
    decay_lr: float
    """The rate at the end of the decay (and after it)."""

    def lr_factor(self, step: int, total_steps: int) -> float:
        return cosine_decay_with_warmup(
            step,
            total_steps,
            warmup_steps=self.num_warmup_steps,
            decay_steps=self.num_decay_steps,
            peak_lr=self.peak_lr,
            decay_lr=self.decay_lr,
        )


@LRSchedulerConfig.register_subclass("constant_with_warmup")
@dataclass
class ConstantWithWarmupSchedulerConfig(LRSchedulerConfig):
    num_warmup_steps: int = 1000

    def lr_factor(self, step: int, total_steps: int) -> float:
        warmup = self.num_warmup_steps or 0
        return step / max(1, warmup) if step < warmup else 1.0


@LRSchedulerConfig.register_subclass("cosine_annealing_with_warmup")
@dataclass
class CosineAnnealingWithWarmupSchedulerConfig(LRSchedulerConfig):
    num_warmup_steps: int

    def lr_factor(self, step: int, total_steps: int) -> float:
        return warmup_then_cosine(step, total_steps, self.num_warmup_steps)


@LRSchedulerConfig.register_subclass("vqbet")
@dataclass
class VQBeTSchedulerConfig(LRSchedulerConfig):
    """Constant while the VQ-VAE trains, then warm-up and cosine."""

    num_warmup_steps: int
    num_vqvae_training_steps: int
    """Steps at the full rate while the VQ-VAE trains, before warm-up starts."""
    num_cycles: float = 0.5
    """Cosine periods after warm-up (0.5: one decay to 0)."""

    def lr_factor(self, step: int, total_steps: int) -> float:
        if step < self.num_vqvae_training_steps:
            return 1.0
        return warmup_then_cosine(
            step - self.num_vqvae_training_steps, total_steps, self.num_warmup_steps, self.num_cycles
        )
