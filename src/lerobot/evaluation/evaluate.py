"""What `lerobot-eval` does: validate, prepare the output dir, plan, run a backend, write results.

Every finished episode goes to episodes.jsonl first. If the run is interrupted (Ctrl-C,
SIGTERM), eval_info.json and the report are still written from what finished, with
`"complete": false`, and the interrupt propagates; `--eval.resume=true` picks up from there.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.factory import make_task_env
from lerobot.evaluation.results import RunResult
from lerobot.evaluation.run.backend import EvalBackend, LocalBackend
from lerobot.evaluation.run.collector import RunCollector
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.recording import EvalRecorders
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.store.journal import EpisodeJournal
from lerobot.evaluation.store.output_dir import claimed_output_dir
from lerobot.evaluation.store.provenance import utc_now
from lerobot.evaluation.store.result_files import write_results
from lerobot.policies.factory import make_policy, make_pre_post_processors
from lerobot.utils.errors import ResultsWriteError

logger = logging.getLogger(__name__)


def evaluate(cfg: EvalPipelineConfig) -> RunResult:
    """Evaluate `cfg.policy` on every task of `cfg.env`; the run's result, also on disk."""
    backend = make_backend(cfg)  # checkpoint problems surface here, before any output is written
    try:
        return run_backend(cfg, backend)
    finally:
        backend.close()


def run_backend(cfg: EvalPipelineConfig, backend: EvalBackend) -> RunResult:
    """Plan the run in its claimed output dir and execute it on `backend`."""
    with claimed_output_dir(cfg):
        journal = EpisodeJournal(cfg.output_dir)
        plan = RunPlan.from_config(cfg.env.tasks(), cfg.eval, journal.done_by_task())
        logger.info("output dir: %s", cfg.output_dir)
        if cfg.eval.backend == "local":
            async_text = "async workers" if cfg.eval.resolved_use_async else "in-process"
            logger.info("envs per task: %d (%s)", cfg.eval.resolved_batch_size, async_text)
        if plan.n_done:
            logger.info("resuming: %d episodes already finished", plan.n_done)
        return execute(cfg, plan, backend, journal)


def make_backend(cfg: EvalPipelineConfig) -> EvalBackend:
    """The backend `--eval.backend` names, with the policy built (local) or checked (Ray)."""
    settings = rollout_settings(cfg)
    if cfg.eval.backend == "ray":
        make_policy(
            driver_policy_config(cfg), env_cfg=cfg.env, rename_map=cfg.rename_map
        ).close()  # only a check: each actor builds its own
        from lerobot.evaluation.run.ray_backend import RayBackend  # imports ray

        return RayBackend(cfg, settings)
    policy = make_policy(cfg.policy, env_cfg=cfg.env, rename_map=cfg.rename_map)
    preprocessor, postprocessor = make_pre_post_processors(cfg.policy)
    settings = dataclasses.replace(settings, preprocessor=preprocessor, postprocessor=postprocessor)
    n_envs, use_async = cfg.eval.resolved_batch_size, cfg.eval.resolved_use_async
    return LocalBackend(
        policy,
        settings,
        lambda task: make_task_env(cfg.env, task, n_envs, use_async, cfg.eval.step_timeout_s),
        max_parallel_tasks=cfg.env.max_parallel_tasks,
        recorders=EvalRecorders(cfg.eval.recording_root) if cfg.eval.recording else None,
    )


def rollout_settings(cfg: EvalPipelineConfig) -> RolloutSettings:
    """How `lerobot-eval` runs episodes; videos go to `<output_dir>/videos/<group>_<task_id>/`."""
    return RolloutSettings.from_config(
        cfg.eval,
        cfg.seed,
        use_amp=cfg.policy.use_amp,
        rename_map=cfg.rename_map,
        videos_dir=Path(cfg.output_dir) / "videos",
    )


def execute(
    cfg: EvalPipelineConfig, plan: RunPlan, backend: EvalBackend, journal: EpisodeJournal
) -> RunResult:
    """Run the plan and write the results; partial results when interrupted."""
    started_at = utc_now()
    collector = RunCollector(plan, journal, backend.runs_tasks_in_order)
    try:
        with collector.progress_bars():
            backend.run(plan, collector)
    except BaseException:
        write_partial_results(cfg, collector.result(complete=False), started_at, plan.n_done)
        raise
    return write_results(cfg, collector.result(complete=True), started_at, plan.n_done)


def write_partial_results(cfg: EvalPipelineConfig, run: RunResult, started_at, n_resumed: int) -> None:
    """What finished, after an interrupt or a failure; a failure to write them (a full disk) is
    logged, so the original error decides the exit."""
    try:
        write_results(cfg, run, started_at, n_resumed, interrupted=True)
    except ResultsWriteError as exc:
        logger.error("could not write the partial results: %s", exc)
        return
    logger.warning("stopped: eval_info.json holds the %d finished episodes", len(run.episodes))


def driver_policy_config(cfg: EvalPipelineConfig) -> PreTrainedConfig:
    """The policy config this process builds with.

    On the Ray backend the driver builds the policy only to check the checkpoint before any
    actor starts, so it builds it on the CPU: a head node without a GPU can drive GPU actors
    with `--policy.device=cuda`.
    """
    if cfg.eval.backend != "ray" or cfg.policy.device in (None, "cpu"):
        return cfg.policy
    return dataclasses.replace(cfg.policy, device="cpu")
