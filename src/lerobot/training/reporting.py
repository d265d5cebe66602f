"""What a training run reports as it goes: a log line per logged step, and with --wandb.enable
the same values in a Weights & Biases run (kept offline under --output_dir)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lerobot.configs.train import TrainPipelineConfig
from lerobot.evaluation.store.output_dir import encode_config

logger = logging.getLogger(__name__)


def log_step(
    step: int,
    loss: float,
    info: dict[str, Any],
    lr: float,
    samples_per_s: float,
    wandb_run: Any,
    grad_norm: float,
) -> None:
    info = {k: v for k, v in info.items() if isinstance(v, int | float)}  # π's loss_per_dim is a list
    details = " ".join(f"{k}={v:.4f}" for k, v in info.items())
    logger.info(
        "step %d: loss=%.4f %s grad_norm=%.3f lr=%.2e %.1f samples/s",
        step,
        loss,
        details,
        grad_norm,
        lr,
        samples_per_s,
    )
    if wandb_run is not None:
        wandb_run.log(
            {
                "train/loss": loss,
                "train/lr": lr,
                "train/samples_per_s": samples_per_s,
                **{f"train/{k}": v for k, v in info.items()},
            },
            step=step,
        )


def start_wandb(cfg: TrainPipelineConfig) -> Any:
    """A Weights & Biases run with LeRobot's settings (entity, notes, run id, tags, the whole
    config), kept in a local folder under --output_dir (offline: this build never uploads).
    --resume=true continues --wandb.run_id, else the run the output directory last held."""
    if not cfg.wandb.enable:
        return None
    import wandb  # there: WandbConfig checked it while the command line was parsed

    run_id = cfg.wandb.run_id or (previous_wandb_run(cfg.output_dir) if cfg.resume else None)
    return wandb.init(
        id=run_id,
        project=cfg.wandb.project,
        entity=cfg.wandb.entity,
        name=cfg.job_name,
        notes=cfg.wandb.notes,
        tags=wandb_tags(cfg) if cfg.wandb.add_tags else None,
        dir=str(cfg.output_dir),
        config=encode_config(cfg),
        job_type="train_eval",
        mode=cfg.wandb.mode,
        resume="must" if run_id is not None else None,
    )


def wandb_tags(cfg: TrainPipelineConfig) -> list[str]:
    """What LeRobot tags a run with: policy, seed, dataset, env (W&B takes 64 characters)."""
    tags = [f"policy:{cfg.policy.type}", f"seed:{cfg.seed}"]
    if cfg.dataset.repo_id is not None:
        tags.append(f"dataset:{cfg.dataset.repo_id}")
    if cfg.env is not None:
        tags.append(f"env:{cfg.env.type}")
    return [tag[:64] for tag in tags]


def previous_wandb_run(output_dir: Path) -> str | None:
    """The id of the run <output_dir>/wandb/latest-run holds (run-<date>-<id>), if any."""
    latest = Path(output_dir) / "wandb" / "latest-run"
    if not latest.exists():
        return None
    return latest.resolve().name.rsplit("-", 1)[-1]
