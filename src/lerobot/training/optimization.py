"""How a step changes the weights: the optimizer and schedule, and one optimization step, as
LeRobot builds and takes them; with the numerics settings LeRobot trains under."""

from __future__ import annotations

from typing import Any

import torch
import torch._dynamo  # noqa: F401  (see below)

from lerobot.configs.optim import AdamConfig, AdamWConfig, OptimizerConfig, SGDConfig
from lerobot.configs.train import TrainPipelineConfig
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.errors import ConfigError

# torch's optimizers import torch._dynamo, and with it triton, when the first one is built;
# triton's import crashes (SIGSEGV) in a process that already holds an EGL context, as after an
# in-process evaluation or recording. Importing it with this module, before any GL, avoids that.


class DivergedError(ConfigError):
    """The loss or its gradient became NaN or inf: settings or data the user can change, told
    in one line (exit 2) instead of a run that goes on training NaN weights."""


def set_backend_flags(cudnn_deterministic: bool) -> None:
    """LeRobot's numerics settings: cuDNN autotuning unless --cudnn_deterministic=true, and
    TF32 matrix products on Ampere and later GPUs (no effect on the CPU)."""
    torch.backends.cudnn.deterministic = cudnn_deterministic
    torch.backends.cudnn.benchmark = not cudnn_deterministic
    torch.backends.cuda.matmul.allow_tf32 = True


def make_optimizer(cfg: TrainPipelineConfig, policy: PreTrainedPolicy):
    """The optimizer and schedule `cfg` resolved (the policy's preset, or --optimizer.* and
    --scheduler.*), over the policy's parameter groups with its preset (ACT's backbone at its
    own rate), else all its parameters, as LeRobot builds them."""
    params = policy.get_optim_params() if cfg.use_policy_training_preset else policy.parameters()
    optimizer = build_optimizer(cfg.optimizer, params)
    schedule = cfg.scheduler
    factor = (
        (lambda step: schedule.lr_factor(step, cfg.steps)) if schedule is not None else (lambda step: 1.0)
    )
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def build_optimizer(opt: OptimizerConfig, params: Any) -> torch.optim.Optimizer:
    """torch's optimizer of `opt`'s type with its fields (the clip norm is the loop's)."""
    if isinstance(opt, AdamConfig):
        return torch.optim.Adam(
            params, lr=opt.lr, betas=opt.betas, eps=opt.eps, weight_decay=opt.weight_decay
        )
    if isinstance(opt, AdamWConfig):
        return torch.optim.AdamW(
            params, lr=opt.lr, betas=opt.betas, eps=opt.eps, weight_decay=opt.weight_decay
        )
    if isinstance(opt, SGDConfig):
        return torch.optim.SGD(
            params,
            lr=opt.lr,
            momentum=opt.momentum,
            dampening=opt.dampening,
            nesterov=opt.nesterov,
            weight_decay=opt.weight_decay,
        )
    raise ConfigError(f"--optimizer.type={opt.type}: not one this build trains with (adam, adamw, sgd)")


def optimization_step(
    loss: torch.Tensor,
    policy: PreTrainedPolicy,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    grad_clip_norm: float,
) -> torch.Tensor:
    """One step on `loss`, as LeRobot takes it: backward, the gradient's global norm clipped to
    `grad_clip_norm` (not clipped when 0 or less), the optimizer's step, the schedule's; the
    norm before clipping."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    limit = grad_clip_norm if grad_clip_norm > 0 else float("inf")
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), limit)
    if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):
        # Before the step: the weights stay finite, and so does every checkpoint.
        raise DivergedError(
            f"the loss ({float(loss):g}) or its gradient ({float(grad_norm):g}) is not finite; training "
            "stopped, checkpoints/last holds the last finite weights (lower --policy.optimizer_lr, or check "
            "the dataset)"
        )
    optimizer.step()
    scheduler.step()
    return grad_norm
