"""The training loop: read batches, step the optimizer, log, save, evaluate in the loop.

`train` (lerobot.training.train) builds a `TrainingRun` once; `run_steps` takes its steps. A
stop signal (SIGINT; SIGTERM too under lerobot-train) waits while a step updates the weights
and a checkpoint is written, then the last whole step is saved before the stop propagates, so
`--resume=true` continues exactly there.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from lerobot.configs.train import TrainPipelineConfig
from lerobot.training.batches import Windows
from lerobot.training.held_out import HeldOutLoss
from lerobot.training.in_loop_eval import InLoopEval, evaluate_at_step
from lerobot.training.optimization import optimization_step
from lerobot.training.reporting import log_step
from lerobot.training.resume import save_state
from lerobot.training.trainee import Trainee
from lerobot.utils.constants import ACTION
from lerobot.utils.signals import signals_deferred, stop_at_the_next_signal

logger = logging.getLogger(__name__)


@dataclass
class TrainResult:
    """What a run ended with."""

    last_step: int
    last_loss: float | None
    checkpoints: list[Path] = field(default_factory=list)
    eval_success: dict[int, float] = field(default_factory=dict)
    """Step -> overall success rate in percent, for every in-loop evaluation with a rate."""
    incomplete_evals: list[int] = field(default_factory=list)
    """Steps whose in-loop evaluation had episodes fail for the harness (an env that could
    not start, say): their rates leave those out, or there is none; the run is incomplete."""
    trainee: Trainee | None = None
    """The trained policy with its statistics, as it is in memory at the end."""

    def note_evaluation(self, step: int, evaluated: InLoopEval) -> None:
        """Record the in-loop evaluation at `step`: its rate, or that it is incomplete."""
        if evaluated.pc_success is not None:
            self.eval_success[step] = evaluated.pc_success
        if not evaluated.complete:
            self.incomplete_evals.append(step)


@dataclass(frozen=True)
class TrainingRun:
    """What the loop works with, built once before the first step."""

    cfg: TrainPipelineConfig
    trainee: Trainee
    device: torch.device
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    windows: Windows
    loader: torch.utils.data.DataLoader
    """The batches of steps first_step + 1 .. cfg.steps, on the CPU."""
    held_out_loss: HeldOutLoss | None
    wandb_run: Any
    first_step: int
    """The step training goes on from: 0, or the resumed checkpoint's."""


class Throughput:
    """Training samples per second since the last restart (a log line, an evaluation)."""

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.started, self.samples = time.perf_counter(), 0

    def add(self, samples: int) -> None:
        self.samples += samples

    def per_second(self) -> float:
        return self.samples / (time.perf_counter() - self.started)


def evaluate_and_record(run: TrainingRun, step: int, result: TrainResult) -> None:
    """The in-loop evaluation at `step`, its rate (or its incompleteness) noted in `result`."""
    evaluated = evaluate_at_step(run.cfg, run.trainee, step, run.wandb_run, run.device)
    result.note_evaluation(step, evaluated)


def run_steps(run: TrainingRun, result: TrainResult) -> None:
    """Take the run's steps, evaluating where --eval_freq says; on a stop signal, save the last
    whole step (unless it is saved) and let the stop go on."""
    throughput = Throughput()
    saved_step = run.first_step
    try:
        for step, cpu_batch in enumerate(run.loader, start=run.first_step + 1):
            # A stop signal waits while a step updates the weights and a checkpoint is written:
            # a stopped run always has a whole step to save.
            with signals_deferred():
                if train_step(run, step, cpu_batch, throughput, result):
                    saved_step = step
            if run.cfg.evaluate_now(step):
                evaluate_and_record(run, step, result)
                throughput.restart()
    except KeyboardInterrupt:  # SIGINT; SIGTERM too under lerobot-train (utils.signals.Interrupted)
        stop_at_the_next_signal()
        if result.last_step > saved_step:
            path = save_step(run, result.last_step, result)
            logger.warning("stopped: step %d saved to %s; --resume=true continues", result.last_step, path)
        raise


def train_step(
    run: TrainingRun, step: int, cpu_batch: dict[str, Any], throughput: Throughput, result: TrainResult
) -> bool:
    """One optimization step on `cpu_batch` (as the loader's workers read it), then what falls due at `step`: its log
    line, the held-out loss, its checkpoint. True when it saved one."""
    cfg = run.cfg
    batch = run.windows.on_device(cpu_batch, run.device)
    loss, info = run.trainee.loss(batch)
    grad_norm = optimization_step(
        loss, run.trainee.policy, run.optimizer, run.scheduler, cfg.optimizer.grad_clip_norm
    )
    throughput.add(len(batch[ACTION]))
    result.last_step, result.last_loss = step, float(loss.detach())
    if step % cfg.log_freq == 0 or step == cfg.steps:
        lr = run.scheduler.get_last_lr()[0]
        log_step(step, result.last_loss, info, lr, throughput.per_second(), run.wandb_run, float(grad_norm))
        throughput.restart()
    if run.held_out_loss is not None and cfg.eval_steps > 0 and step % cfg.eval_steps == 0:
        run.held_out_loss.log(run.trainee, run.device, step, run.wandb_run)
    if not cfg.save_now(step):
        return False
    logger.info("step %d: checkpoint saved to %s", step, save_step(run, step, result))
    return True


def save_step(run: TrainingRun, step: int, result: TrainResult) -> Path:
    """Checkpoint `step` and list it in `result`."""
    path = save_state(run.cfg, run.trainee, run.optimizer, run.scheduler, step)
    result.checkpoints.append(path)
    return path
