"""In-loop evaluation: the policy being trained, evaluated every --eval_freq steps.

It runs exactly what `lerobot-eval` runs (`run_evaluation` with the local backend on fresh
envs, same seeds, same `--eval.*` settings, a hung worker replaced after
`--eval.step_timeout_s`, the same files with provenance), with the in-memory policy and
processors (and the env config's around them); the envs are closed before training continues,
so no simulator worker or GL context outlives an evaluation.

After each evaluation the training output dir's training_curve.html and .md are rewritten from
every evaluation so far: the curve is there to look at while a long run trains, and a run
killed midway still has it (rereading a few small eval_info.json files costs nothing next to
an evaluation).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from lerobot.configs.train import TrainPipelineConfig
from lerobot.envs.factory import make_env_pre_post_processors
from lerobot.evaluation.evaluate import make_settled_local_backend, run_evaluation
from lerobot.evaluation.report import write_training_curve
from lerobot.evaluation.results import RunResult, UnreadableResultsError, load_run
from lerobot.evaluation.run.batching.settle import BatchRun
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.store.output_dir import RunOutput, encode_config
from lerobot.training.eval_history import in_loop_eval_dir, in_loop_evaluations
from lerobot.training.trainee import Trainee

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class InLoopEval:
    """What one in-training evaluation gave: its success rate (None: no episode ran to its
    end) and whether every episode did (episodes the harness failed are left out of the rate)."""

    pc_success: float | None
    complete: bool


def evaluate_at_step(
    cfg: TrainPipelineConfig, trainee: Trainee, step: int, wandb_run: Any, device: torch.device
) -> InLoopEval:
    """The in-loop evaluation at `step`, drawing from its own copy of the random states:
    training continues with the draws it would have made without it, as a run resumed from
    this step does."""
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        return evaluate_in_loop(cfg, trainee, step, wandb_run)


def evaluation_finished(output_dir: Path, step: int) -> bool:
    """Whether the in-loop evaluation at `step` ran to its end: a run stopped during it (a
    signal, a kill) left no eval_info.json, or one saying it is incomplete; resume redoes it."""
    try:
        return load_run(in_loop_eval_dir(output_dir, step)).complete
    except (OSError, UnreadableResultsError):
        return False


def evaluate_in_loop(cfg: TrainPipelineConfig, trainee: Trainee, step: int, wandb_run: Any) -> InLoopEval:
    """Evaluate the current policy as lerobot-eval would; results under eval/step_<N>/, with
    the training's config as their provenance (a resumed training redoes the step's evaluation)."""
    out = in_loop_eval_dir(cfg.output_dir, step)
    settings = RolloutSettings.from_config(
        cfg.eval, cfg.seed, use_amp=cfg.policy.use_amp, rename_map=cfg.rename_map, videos_dir=out / "videos"
    ).with_processors(trainee.processors(), make_env_pre_post_processors(cfg.env, cfg.policy))
    plan = RunPlan.from_config(cfg.env.tasks(), cfg.eval)
    batch = BatchRun(cfg.eval, cfg.env, cfg.policy, trainee.policy, settings, plan)
    backend, _ = make_settled_local_backend(batch)
    output = RunOutput(out, encode_config(cfg), overwrite=True, program="lerobot-train")
    trainee.policy.eval()
    try:
        run = run_evaluation(plan, backend, output)
    finally:
        trainee.policy.train()
    write_training_curve(in_loop_evaluations(cfg.output_dir), cfg.output_dir)
    return report_in_loop_eval(run, step, out, wandb_run)


def report_in_loop_eval(run: RunResult, step: int, out: Path, wandb_run: Any) -> InLoopEval:
    """Log the evaluation's rate (and to W&B), or why it is incomplete; what it gave."""
    complete = run.complete and not run.n_episodes_failed
    if not complete:
        reasons = [e.failure_reason for task in run.tasks for e in task.episodes if e.failure_reason]
        logger.warning(
            "step %d: eval incomplete: %d episodes failed for the harness (%s); results in %s",
            step,
            run.n_episodes_failed,
            reasons[0] if reasons else "stopped",
            out,
        )
    if not run.overall.n_episodes:
        return InLoopEval(None, complete)
    success = 100 * run.overall.success_rate
    logger.info(
        "step %d: eval success %.1f%% over %d episodes (%s)", step, success, run.overall.n_episodes, out
    )
    if wandb_run is not None:
        wandb_run.log({"eval/pc_success": success}, step=step)
    return InLoopEval(success, complete)
