"""The one way an evaluation runs: `run_evaluation` builds the plan and runs it on a backend.

`lerobot-eval` (`evaluate`), the evaluation inside training and LeRobot's `eval_policy*` differ
only in the backend they hand over (built from the config, around a policy in memory, or
around envs built elsewhere) and in where results go; the plan, the journal, the progress,
the results and the files are this module's, the same for all three.

Every finished episode goes to episodes.jsonl first. If the run is interrupted (Ctrl-C,
SIGTERM) or fails, eval_info.json and the report are still written from what finished, with
`"complete": false`, and the error propagates; `--eval.resume=true` picks up from there.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.configs.eval import EvalConfig, EvalPipelineConfig
from lerobot.configs.policies import PreTrainedConfig
from lerobot.envs.factory import make_env_pre_post_processors
from lerobot.evaluation.results import RunResult
from lerobot.evaluation.run.backend import EvalBackend, LocalBackend, TaskRecorders
from lerobot.evaluation.run.batching.layout import BatchLayout, arranged, task_envs
from lerobot.evaluation.run.batching.settle import BatchRun, settle_batch_size
from lerobot.evaluation.run.collector import RunCollector
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.recording import EvalRecorders
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.store.journal import EpisodeJournal
from lerobot.evaluation.store.output_dir import RunOutput, claimed_output_dir
from lerobot.evaluation.store.provenance import utc_now
from lerobot.evaluation.store.result_files import write_partial_results, write_results
from lerobot.policies.factory import make_policy, make_pre_post_processors
from lerobot.policies.pretrained import RowPolicy
from lerobot.utils.gc_utils import freeze_what_is_loaded

logger = logging.getLogger(__name__)


def run_evaluation(
    plan: RunPlan,
    backend: EvalBackend,
    output: RunOutput | None = None,
    journal: EpisodeJournal | None = None,
) -> RunResult:
    """Run `plan`'s episodes on `backend`; the run's result.

    With `output`, the directory is claimed for the run (locked; resumed or overwritten as it
    says), every finished episode goes to its episodes.jsonl, episodes the journal already
    holds are not run again, and eval_info.json (with provenance) and the report are written,
    also, with what finished, when the run is interrupted. Without it nothing is written
    unless a `journal` is given. The backend stays open: its owner closes it.
    """
    with claimed_output_dir(output) if output is not None else contextlib.nullcontext():
        if output is not None:
            journal = EpisodeJournal(output.directory)
        if journal is not None:
            plan = dataclasses.replace(plan, done=journal.done_by_task())
        if plan.n_done:
            logger.info("resuming: %d episodes already finished", plan.n_done)
        return _execute(plan, backend, journal, output)


def _execute(
    plan: RunPlan, backend: EvalBackend, journal: EpisodeJournal | None, output: RunOutput | None
) -> RunResult:
    started_at = utc_now()
    collector = RunCollector(plan, journal, backend.runs_tasks_in_order)
    try:
        with collector.progress_bars():
            backend.run(plan, collector)
    except BaseException:
        if output is not None:
            write_partial_results(
                output, collector.result(complete=False), started_at, plan.n_done, backend.provenance()
            )
        raise
    run = collector.result(complete=True)
    if output is None:
        return run
    return write_results(output, run, started_at, plan.n_done, backend.provenance())


def evaluate(cfg: EvalPipelineConfig) -> RunResult:
    """`lerobot-eval`: evaluate `cfg.policy` on every task of `cfg.env`; the run's result, also
    in `cfg.output_dir`."""
    # Checkpoint problems surface here, before any output is written; so does a measured batch
    # size (`--eval.measure_batch_size`), which the run's config then records.
    plan = RunPlan.from_config(cfg.env.tasks(), cfg.eval)
    backend, cfg = make_backend(cfg, plan)
    freeze_what_is_loaded()  # torch and the policy: kept out of the episodes' full collections
    try:
        logger.info("output dir: %s", cfg.output_dir)
        return run_evaluation(plan, backend, RunOutput.of(cfg))
    finally:
        backend.close()


def log_batch(eval_cfg: EvalConfig, env_cfg: EnvConfig) -> None:
    """Where the local backend steps each task's envs."""
    layout = BatchLayout.of(eval_cfg)
    if env_cfg.builds_own_envs:
        logger.info(
            "envs per task: %d (built by --env.type=%s's own create_envs, use_async_envs=%s)",
            layout.n_envs,
            env_cfg.type,
            layout.use_async,
        )
        return
    where = layout.describe()
    if layout.worker_processes:
        where += arranged(eval_cfg.row_groups, bool(eval_cfg.independent_rows))
    logger.info("envs per task: %d (%s)", layout.n_envs, where)


def make_backend(cfg: EvalPipelineConfig, plan: RunPlan) -> tuple[EvalBackend, EvalPipelineConfig]:
    """The backend `--eval.backend` names, with the policy built (local) or checked (Ray), and
    the config it runs: the local backend's batch settled against the plan (`settle_batch_size`)."""
    settings = rollout_settings(cfg)
    if cfg.eval.backend == "ray":
        from lerobot.evaluation.run.ray_connection import require_cluster_answers  # imports ray

        require_cluster_answers(cfg.eval)  # before the policy check: a wrong address is quicker told
        make_policy(
            driver_policy_config(cfg), env_cfg=cfg.env, rename_map=cfg.rename_map
        ).close()  # only a check: each actor builds its own
        from lerobot.evaluation.run.ray_backend import RayBackend  # imports ray

        return RayBackend(cfg, settings), cfg
    policy = make_policy(cfg.policy, env_cfg=cfg.env, rename_map=cfg.rename_map)
    try:
        settings = settings.with_processors(
            make_pre_post_processors(cfg.policy), make_env_pre_post_processors(cfg.env, cfg.policy)
        )
        recorders = EvalRecorders(cfg.eval.recording_root) if cfg.eval.recording else None
        batch = BatchRun(cfg.eval, cfg.env, cfg.policy, policy, settings, plan)
        backend, settled = make_settled_local_backend(batch, recorders)
    except BaseException:
        policy.close()
        raise
    cfg = copy.copy(cfg)
    cfg.eval = settled
    return backend, cfg


def make_settled_local_backend(
    batch: BatchRun, recorders: TaskRecorders | None = None
) -> tuple[LocalBackend, EvalConfig]:
    """A local backend at the batch its plan settles (as given, measured now, measured earlier
    for this workload here, or the core-count rule), and the eval config it runs: the one way
    `lerobot-eval` and the evaluation inside training build theirs."""
    settled = settle_batch_size(batch)
    log_batch(settled, batch.env_cfg)
    settings = batch.settings.with_grouping(settled)
    tasks = [unit.task for unit in batch.plan.units()]
    return make_local_backend(batch.policy, settings, batch.env_cfg, settled, recorders, tasks), settled


def make_local_backend(
    policy: RowPolicy,
    settings: RolloutSettings,
    env_cfg: EnvConfig,
    eval_cfg: EvalConfig,
    recorders: TaskRecorders | None = None,
    tasks: Sequence[TaskSpec] | None = None,
) -> LocalBackend:
    """`policy` on fresh envs of `env_cfg`'s tasks, as many per task and as `--eval.*` says;
    `tasks`: those it will run (None: any)."""
    return LocalBackend(
        policy,
        settings,
        task_envs(env_cfg, eval_cfg, tasks),
        max_parallel_tasks=env_cfg.max_parallel_tasks,
        recorders=recorders,
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


def driver_policy_config(cfg: EvalPipelineConfig) -> PreTrainedConfig:
    """The policy config this process builds with.

    On the Ray backend the driver builds the policy only to check the checkpoint before any
    actor starts, so it builds it on the CPU: a head node without a GPU can drive GPU actors
    with `--policy.device=cuda`.
    """
    if cfg.eval.backend != "ray" or cfg.policy.device in (None, "cpu"):
        return cfg.policy
    return dataclasses.replace(cfg.policy, device="cpu")
