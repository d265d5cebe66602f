"""A run's checkpoints as the loop writes them and `--resume=true` continues from them.

A resumed run loads the last complete checkpoint (weights, optimizer, schedule, step, random
states) and so draws the batches and noise an uninterrupted run would have drawn; flags whose
change would make it train something else are refused before any step.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lerobot.configs.fields import changed_settings, result_neutral_keys
from lerobot.configs.train import TrainPipelineConfig
from lerobot.evaluation.store.output_dir import encode_config
from lerobot.policies.checkpoint import load_weights
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.training.checkpoints import (
    PRETRAINED_DIR,
    TRAIN_CONFIG_FILE,
    TRAINING_STATE_DIR,
    checkpoint_dir,
    checkpoint_problem,
    load_training_state,
    numbered_checkpoints,
    remove_unfinished_writes,
    save_checkpoint,
)
from lerobot.training.trainee import Trainee
from lerobot.utils.errors import ConfigError, ResultsWriteError
from lerobot.utils.io import cannot_write

logger = logging.getLogger(__name__)

RESUME_MAY_CHANGE = (
    "steps",
    "save_freq",
    "save_checkpoint",
    "env_eval_freq",
    "eval_freq",
    "log_freq",
    "eval_steps",
    "max_eval_samples",
    "tolerance_s",
    "resume",
    "policy.device",
    "dataset.frame_cache_dir",
    "eval.",
    "env.",
    "wandb.",
    "job.",
)
"""Settings a resumed training may change (prefixes end with a dot): they decide how long it
runs, what it logs, saves and evaluates, and where; not what a step trains. The
result-neutral fields (output dir, data-loader workers) may change too."""


def save_state(cfg: TrainPipelineConfig, trainee: Trainee, optimizer, scheduler, step: int) -> Path:
    """Checkpoint `step`, with the run's flags for LeRobot's `--config_path=... --resume=true`.

    A write that fails (disk full, file too large, read-only) is one line naming the
    checkpoint; `last` still points at the previous whole checkpoint, which resume uses."""
    try:
        return save_checkpoint(
            cfg.output_dir,
            step,
            trainee.policy,
            trainee.processors(),
            optimizer,
            scheduler,
            train_config=encode_config(cfg),
        )
    except ResultsWriteError:
        raise
    except OSError as exc:
        raise cannot_write(checkpoint_dir(cfg.output_dir, step), exc) from None


def resume(cfg: TrainPipelineConfig, policy: PreTrainedPolicy, optimizer, scheduler) -> int:
    """Load the last checkpoint: weights, optimizer, schedule, step and the random states, so the
    run goes on drawing the batches and noise an uninterrupted run would have drawn."""
    freed = remove_unfinished_writes(Path(cfg.output_dir))
    if freed:
        logger.info("--resume=true: removed %.0f MB of checkpoint writes a stop cut short", freed / 2**20)
    chosen = usable_checkpoint(Path(cfg.output_dir))
    if chosen is None:
        logger.warning(
            "--resume=true: %s holds no complete checkpoint (the run stopped before its first was "
            "written); training starts from step 0",
            cfg.output_dir,
        )
        return 0
    check_resumed_settings(cfg, chosen / PRETRAINED_DIR / TRAIN_CONFIG_FILE)
    load_weights(policy, chosen / PRETRAINED_DIR)
    step = load_training_state(chosen / TRAINING_STATE_DIR, optimizer, scheduler)
    logger.info("resumed from %s at step %d", chosen, step)
    return step


def resume_may_change(key: str) -> bool:
    return any(key == name or (name.endswith(".") and key.startswith(name)) for name in RESUME_MAY_CHANGE)


def check_resumed_settings(cfg: TrainPipelineConfig, saved_path: Path) -> None:
    """Refuse, in one line naming each, the flags whose change would make the resumed run
    train something else than the run it continues (learning rate, batch size, episodes, the
    policy's shape, the seed); list the others as a notice. A checkpoint without its saved
    flags (an older one) is resumed as it is."""
    try:
        saved = json.loads(saved_path.read_text())
    except (OSError, ValueError):
        return
    neutral = result_neutral_keys(TrainPipelineConfig)
    changes = changed_settings(saved, encode_config(cfg))
    refused = [
        f"--{key}: was {was!r}, now {now!r}"
        for key, (was, now) in changes.items()
        if key not in neutral and not resume_may_change(key)
    ]
    if refused:
        raise ConfigError(
            f"--resume=true: {'; '.join(refused)} (the run in --output_dir={cfg.output_dir} trained "
            "with the former); pass them as before, or train into a new --output_dir"
        )
    noted = [
        f"--{key}: {was!r} -> {now!r}"
        for key, (was, now) in changes.items()
        if key not in neutral and key != "resume"
    ]
    if noted:
        logger.info("--resume=true with changed settings: %s", "; ".join(noted))


def usable_checkpoint(output_dir: Path) -> Path | None:
    """The newest complete checkpoint; those after it (cut short by a kill, or damaged) are
    named and skipped: the run redoes their steps and writes them again."""
    for directory in numbered_checkpoints(output_dir):
        problem = checkpoint_problem(directory)
        if problem is None:
            return directory
        logger.warning("checkpoint %s is not usable: %s; trying the one before", directory, problem)
    return None
