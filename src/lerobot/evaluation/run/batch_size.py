"""The batch size (and row groups, and whether rows advance independently) a `lerobot-eval`
run uses: as given, measured now (`--eval.measure_batch_size=true`), measured earlier for the
same workload on this machine, or the core-count rule (`auto_batch_size`) when nothing was
measured."""

from __future__ import annotations

import copy
import dataclasses
import logging
from typing import Any

from lerobot.configs.eval import EvalConfig, EvalPipelineConfig
from lerobot.evaluation.run.backend import task_envs
from lerobot.evaluation.run.batch_probe import (
    arranged,
    candidate_batches,
    candidate_row_groups,
    env_steps_per_second,
    measure_batch_sizes,
)
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.store.batch_sizes import (
    RememberedBatchSize,
    batch_sizes_file,
    machine_description,
    remember_batch_size,
    remembered_batch_size,
)
from lerobot.evaluation.store.output_dir import encode_config
from lerobot.evaluation.store.provenance import utc_now
from lerobot.policies.pretrained import RowPolicy
from lerobot.policies.row_groups import can_move_rows
from lerobot.utils.device_utils import policy_device
from lerobot.utils.errors import ResultsWriteError

logger = logging.getLogger(__name__)


def with_settled_batch_size(
    cfg: EvalPipelineConfig, policy: RowPolicy, settings: RolloutSettings
) -> EvalPipelineConfig:
    """`cfg` with the batch size, row groups and independent rows it runs at. Given values
    stay; auto (0, or None) takes what `--eval.measure_batch_size=true` measures now, or
    measured earlier for this workload on this machine; with nothing measured, the batch size
    stays 0 (`auto_batch_size`), the row groups 0 and independent rows None (lockstep). Given
    row groups (1 included) keep rows in their groups: independent rows only come with auto
    row groups."""
    given = cfg.eval.batch_size and cfg.eval.row_groups and cfg.eval.independent_rows is not None
    if given and not cfg.eval.measure_batch_size:
        return cfg
    if not cfg.eval.measure_batch_size and not batch_sizes_file().exists():
        return cfg  # nothing measured on this machine: no workload to describe (a CUDA query)
    workload = batch_workload(cfg, policy)
    if cfg.eval.measure_batch_size:
        chosen = _measure_and_remember(cfg, policy, settings, workload)
    else:
        chosen = remembered_batch_size(workload)
        if chosen is None:
            return cfg
        taken = [f"batch size {chosen.batch_size}"] if not cfg.eval.batch_size else []
        taken += [f"row groups {chosen.row_groups}"] if not cfg.eval.row_groups else []
        taken += ["independent rows"] if _takes_independent_rows(cfg, chosen) else []
        logger.info(
            "%s: measured for this workload on this machine at %s (%s)",
            " and ".join(taken),
            chosen.measured_at,
            batch_sizes_file(),
        )
    settled = copy.copy(cfg)
    settled.eval = dataclasses.replace(
        cfg.eval,
        batch_size=cfg.eval.batch_size or chosen.batch_size,
        row_groups=cfg.eval.row_groups or chosen.row_groups,
        independent_rows=_takes_independent_rows(cfg, chosen) or cfg.eval.independent_rows,
        measure_batch_size=False,
    )
    return settled


def _takes_independent_rows(cfg: EvalPipelineConfig, chosen: RememberedBatchSize) -> bool:
    """Whether the run takes independent rows from the measurement: it found them fastest, and
    neither they nor row groups were given."""
    return chosen.independent_rows and cfg.eval.independent_rows is None and not cfg.eval.row_groups


def batch_workload(cfg: EvalPipelineConfig, policy: RowPolicy) -> dict[str, Any]:
    """What a measured batch size holds for: the env's settings, the policy type, where it runs
    (and in which precision), and the machine."""
    device = policy_device(policy)
    return {
        "env": {"type": cfg.env.type, **encode_config(cfg.env)},
        "policy": {"type": cfg.policy.type, "device": device.type, "use_amp": bool(cfg.policy.use_amp)},
        "machine": machine_description(str(device)),
    }


def _measure_and_remember(
    cfg: EvalPipelineConfig, policy: RowPolicy, settings: RolloutSettings, workload: dict[str, Any]
) -> RememberedBatchSize:
    """Measure on the first task; remember and return the best batch size and grouping."""
    task = cfg.env.tasks()[0]
    candidates = candidate_batches(workload["machine"]["cores"])
    logger.info("measuring batch sizes %s on %s", ", ".join(map(str, candidates)), task.label)

    def probe_config(batch_size: int, row_groups: int) -> EvalConfig:
        # As many episodes as envs, so that the run's own episode count does not clamp the batch.
        return dataclasses.replace(
            cfg.eval,
            batch_size=batch_size,
            n_episodes=batch_size,
            shard=None,
            row_groups=row_groups,
            measure_batch_size=False,
        )

    def rate_at(
        batch_size: int, row_groups: int, independent_rows: bool = settings.independent_rows
    ) -> float:
        env = task_envs(cfg.env, probe_config(batch_size, row_groups))(task)
        try:
            arranged = dataclasses.replace(settings, row_groups=row_groups, independent_rows=independent_rows)
            return env_steps_per_second(env, policy, arranged, task)
        finally:
            env.close()

    def independent_rate_at(batch_size: int) -> float:
        return rate_at(batch_size, 1, independent_rows=True)

    def row_groups_at(batch_size: int) -> list[int]:
        return candidate_row_groups(answering_units(probe_config(batch_size, 1)))

    arrangements_to_measure = cfg.eval.row_groups == 0 and can_move_rows(policy)
    measurement = measure_batch_sizes(
        rate_at,
        candidates,
        row_groups_at if arrangements_to_measure and not settings.independent_rows else None,
        max(1, cfg.eval.row_groups),
        independent_rate_at if arrangements_to_measure and cfg.eval.independent_rows is None else None,
        independent_rows=settings.independent_rows,
    )
    best = measurement.best
    remembered = RememberedBatchSize(
        batch_size=best.batch_size,
        row_groups=best.row_groups,
        measured_at=utc_now().isoformat(timespec="seconds"),
        rates=tuple(
            dataclasses.replace(r, env_steps_per_s=round(r.env_steps_per_s, 1)) for r in measurement.rates
        ),
        independent_rows=best.independent_rows,
    )
    chosen = f"batch size {best.batch_size}{arranged(best.row_groups, best.independent_rows)}"
    try:
        path = remember_batch_size(workload, remembered)
    except ResultsWriteError as exc:  # the run goes on as measured; later runs guess
        logger.warning("%s: the fastest measured, not remembered: %s", chosen, exc)
    else:
        logger.info("%s: the fastest measured; remembered in %s", chosen, path)
    return remembered


def answering_units(eval_cfg: EvalConfig) -> int:
    """How many units answer a round at this config: worker processes, and each env of the main
    process (`LazyVectorEnv.slots_by_owner`); row groups are made of whole units."""
    if not eval_cfg.resolved_worker_processes:
        return 1
    return eval_cfg.resolved_envs_in_main_process + eval_cfg.resolved_worker_processes
