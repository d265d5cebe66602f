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
from dataclasses import dataclass

import draccus

from lerobot.utils.errors import require_choice
from lerobot.utils.schedules import cosine_decay_with_warmup


@dataclass
class OptimizerConfig(draccus.ChoiceRegistry, abc.ABC):
    """`--optimizer.type=adam|adamw|sgd` and its fields; the gradient's global norm is clipped to
    `grad_clip_norm` before every step (0 or less: not clipped)."""

    lr: float
    weight_decay: float
    grad_clip_norm: float

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
    eps: float = 1e-8
    weight_decay: float = 0.0
    grad_clip_norm: float = 10.0


@OptimizerConfig.register_subclass("adamw")
@dataclass
class AdamWConfig(OptimizerConfig):
    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 1e-2
    grad_clip_norm: float = 10.0


@OptimizerConfig.register_subclass("sgd")
@dataclass
class SGDConfig(OptimizerConfig):
    lr: float = 1e-3
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0
    grad_clip_norm: float = 10.0


@dataclass
class LRSchedulerConfig(draccus.ChoiceRegistry, abc.ABC):
    """`--scheduler.type=...` and its fields: the learning rate as a factor of the optimizer's,
    step by step (the first step is step 0)."""

    num_warmup_steps: int | None

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
    peak_lr: float
    decay_lr: float

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
    num_cycles: float = 0.5

    def lr_factor(self, step: int, total_steps: int) -> float:
        if step < self.num_vqvae_training_steps:
            return 1.0
        return warmup_then_cosine(
            step - self.num_vqvae_training_steps, total_steps, self.num_warmup_steps, self.num_cycles
        )
