"""`train`: what `lerobot-train` runs. It builds the run (data, policy, optimizer, the resumed
checkpoint, loaders), redoes an in-loop evaluation a stop cut short, and takes the steps.

The parts live by concern: `trainee` (what a step trains), `optimization` (how it changes the
weights), `batches` (what it reads), `loop` (the steps), `in_loop_eval`, `held_out`,
`reporting` (log lines and W&B), `resume` and `checkpoints`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from lerobot.configs.train import TrainPipelineConfig
from lerobot.datasets.reader import EpisodeFrames, load_episodes
from lerobot.training.batches import (
    EpochOrder,
    LoaderSettings,
    StepBatches,
    Windows,
    make_loader,
    rename_frames,
    window_offsets,
)
from lerobot.training.held_out import HeldOutLoss, held_out_rows, split_held_out
from lerobot.training.in_loop_eval import evaluate_in_loop, evaluation_finished
from lerobot.training.loop import TrainingRun, TrainResult, evaluate_and_record, run_steps
from lerobot.training.optimization import DivergedError, make_optimizer, optimization_step, set_backend_flags
from lerobot.training.reporting import start_wandb
from lerobot.training.resume import resume
from lerobot.training.trainee import build_trainee
from lerobot.utils.device_utils import resolve_device
from lerobot.utils.errors import ConfigError

__all__ = [  # `train`, and the names scripts and tests imported from here before the split by concern
    "DivergedError",
    "TrainResult",
    "build_trainee",
    "evaluate_in_loop",
    "held_out_rows",
    "make_optimizer",
    "optimization_step",
    "split_held_out",
    "train",
]

logger = logging.getLogger(__name__)


def train(cfg: TrainPipelineConfig) -> TrainResult:
    """Train cfg.policy on cfg.dataset for cfg.steps steps (from the last checkpoint with --resume)."""
    run = start_run(cfg)
    result = TrainResult(last_step=run.first_step, last_loss=None, trainee=run.trainee)
    run.trainee.policy.train()
    if run.first_step and cfg.evaluate_now(run.first_step):
        redo_unfinished_evaluation(run, result)
    run_steps(run, result)
    if run.wandb_run is not None:
        run.wandb_run.finish()
    return result


def start_run(cfg: TrainPipelineConfig) -> TrainingRun:
    """Everything the steps need, built in the order that fixes the random draws: the seed,
    the fresh policy's weights, then (with --resume) the checkpoint's states."""
    torch.manual_seed(cfg.seed)
    set_backend_flags(cfg.cudnn_deterministic)
    frames = rename_frames(load_frames(cfg), cfg.rename_map)
    trainee = build_trainee(cfg, frames)
    frames, held_out = split_held_out(frames, cfg.dataset.eval_split)
    log_dataset(frames, held_out)
    device = resolve_device(cfg.policy.device)
    policy = trainee.policy.to(device)
    optimizer, scheduler = make_optimizer(cfg, policy)
    first_step = resume(cfg, policy, optimizer, scheduler) if cfg.resume else 0
    check_steps_left(cfg, first_step)
    settings = loader_settings(cfg, device)
    windows = Windows(frames, list(cfg.policy.input_features), *window_offsets(cfg.policy))
    run = TrainingRun(
        cfg=cfg,
        trainee=trainee,
        device=device,
        optimizer=optimizer,
        scheduler=scheduler,
        windows=windows,
        loader=step_loader(cfg, windows, first_step, settings),
        held_out_loss=HeldOutLoss.of(cfg, held_out, settings) if held_out is not None else None,
        wandb_run=start_wandb(cfg),
        first_step=first_step,
    )
    logger.info(
        "training %s (%d parameters) on %s for steps %d..%d",
        cfg.policy.type,
        n_parameters(policy),
        device,
        first_step + 1,
        cfg.steps,
    )
    return run


def step_loader(
    cfg: TrainPipelineConfig, windows: Windows, first_step: int, settings: LoaderSettings
) -> torch.utils.data.DataLoader:
    """The batches of steps first_step + 1 .. --steps, in LeRobot's order (a function of the
    seed and the step alone: a resumed run reads what an uninterrupted one would)."""
    order = EpochOrder(windows.frames, cfg.seed, getattr(cfg.policy, "drop_n_last_frames", 0))
    return make_loader(windows, StepBatches(order, cfg.batch_size, first_step, cfg.steps), settings)


def redo_unfinished_evaluation(run: TrainingRun, result: TrainResult) -> None:
    """A resumed run whose checkpoint step was due an evaluation that a stop cut short runs it
    again before its first step."""
    if evaluation_finished(run.cfg.output_dir, run.first_step):
        return
    logger.info(
        "step %d: its evaluation did not finish before the run stopped; running it again", run.first_step
    )
    evaluate_and_record(run, run.first_step, result)


def load_frames(cfg: TrainPipelineConfig) -> EpisodeFrames:
    """The episodes of --dataset.episodes, read from --dataset.root or the hub cache."""
    return load_episodes(
        dataset_root(cfg), cfg.dataset.episodes, cfg.dataset.frame_cache_dir, cfg.tolerance_s
    )


def dataset_root(cfg: TrainPipelineConfig) -> Path:
    """--dataset.root, else the hub cache's snapshot of --dataset.repo_id (fetched when online)."""
    if cfg.dataset.root is not None:
        return cfg.dataset.root
    from lerobot.datasets.hub import resolve_dataset_repo

    return resolve_dataset_repo(cfg.dataset.repo_id, cfg.dataset.revision)


def log_dataset(frames: EpisodeFrames, held_out: EpisodeFrames | None) -> None:
    logger.info(
        "dataset: %d episodes, %d frames at %d fps%s",
        len(frames.episode_lengths),
        frames.n_frames,
        frames.fps,
        f"; {len(held_out.episode_lengths)} episodes held out" if held_out is not None else "",
    )


def check_steps_left(cfg: TrainPipelineConfig, done: int) -> None:
    """A resumed run cannot go back: --steps must be at least the step it is at."""
    if done > cfg.steps:
        raise ConfigError(
            f"--steps={cfg.steps}: the run in --output_dir={cfg.output_dir} is already at step {done}; "
            f"pass --steps={done} or more to continue it"
        )


def loader_settings(cfg: TrainPipelineConfig, device: torch.device) -> LoaderSettings:
    return LoaderSettings(
        num_workers=cfg.num_workers,
        prefetch_factor=cfg.prefetch_factor,
        persistent_workers=cfg.persistent_workers,
        multiprocessing_context=cfg.dataloader_multiprocessing_context,
        pin_memory=device.type == "cuda",
    )


def n_parameters(policy: torch.nn.Module) -> int:
    return sum(p.numel() for p in policy.parameters())
