"""Learning-rate schedules of LeRobot's policy presets, as factors of the peak rate."""

from __future__ import annotations

import math


def cosine_decay_with_warmup(
    step: int, total_steps: int, *, warmup_steps: int, decay_steps: int, peak_lr: float, decay_lr: float
) -> float:
    """LeRobot's CosineDecayWithWarmupSchedulerConfig (SmolVLA's and π0's preset) at `step`, as
    a factor of `peak_lr`: linear warm-up from 1/(warmup+1), then cosine decay to decay_lr.

    When training is shorter than `decay_steps`, warm-up and decay are scaled to fit
    `total_steps`, as LeRobot does.
    """
    warmup, decay = warmup_steps, decay_steps
    if total_steps < decay:
        warmup, decay = int(warmup * total_steps / decay), total_steps
    if step < warmup:
        start = 1 / (warmup + 1)
        return start if step <= 0 else (start - 1) * (1 - step / warmup) + 1
    alpha = decay_lr / peak_lr
    cosine = 0.5 * (1 + math.cos(math.pi * min(step, decay) / decay))
    return (1 - alpha) * cosine + alpha
