"""The batch size (and row groups, and whether rows advance independently) a run uses: as
given, measured now (`--eval.measure_batch_size=true`), measured earlier for the same workload
on this machine, or the core-count rule (`layout.auto_batch_size`) when nothing was measured.

`lerobot-eval` and the evaluation inside training settle it the same way, from the run's plan:
a measurement runs on the first task the plan has episodes of.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from lerobot.configs.env import EnvConfig, TaskSpec
from lerobot.configs.eval import EvalConfig
from lerobot.configs.policies import PreTrainedConfig
from lerobot.evaluation.run.batching.layout import BatchLayout, arranged, task_envs
from lerobot.evaluation.run.batching.measure import (
    candidate_batches,
    candidate_row_groups,
    env_steps_per_second,
    measure_batch_sizes,
)
from lerobot.evaluation.run.batching.remembered import (
    RememberedBatchSize,
    batch_sizes_file,
    machine_description,
    remember_batch_size,
    remembered_batch_size,
)
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.store.output_dir import encode_config
from lerobot.evaluation.store.provenance import utc_now
from lerobot.policies.pretrained import RowPolicy
from lerobot.policies.row_groups import can_move_rows
from lerobot.utils.device_utils import policy_device
from lerobot.utils.errors import ResultsWriteError

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class BatchRun:
    """What a batch settles against: the run's settings, its policy and its plan."""

    eval_cfg: EvalConfig
    env_cfg: EnvConfig
    policy_cfg: PreTrainedConfig
    policy: RowPolicy
    settings: RolloutSettings
    plan: RunPlan

    def workload(self) -> dict[str, Any]:
        """What a measured batch size holds for: the env's settings, the policy type, where it
        runs (and in which precision), and the machine."""
        device = policy_device(self.policy)
        return {
            "env": {"type": self.env_cfg.type, **encode_config(self.env_cfg)},
            "policy": {
                "type": self.policy_cfg.type,
                "device": device.type,
                "use_amp": bool(self.policy_cfg.use_amp),
            },
            "machine": machine_description(str(device)),
        }


def settle_batch_size(run: BatchRun) -> EvalConfig:
    """The eval config with the batch size, row groups and independent rows it runs at. Given
    values stay; auto (0, or None) takes what `--eval.measure_batch_size=true` measures now, or
    measured earlier for this workload on this machine; with nothing measured, the batch size
    stays 0 (`auto_batch_size`), the row groups 0 and independent rows None (lockstep). Given
    row groups (1 included) keep rows in their groups: independent rows only come with auto
    row groups. A plan with nothing left to run measures nothing."""
    eval_cfg = run.eval_cfg
    given = eval_cfg.batch_size and eval_cfg.row_groups and eval_cfg.independent_rows is not None
    if given and not eval_cfg.measure_batch_size:
        return eval_cfg
    if not eval_cfg.measure_batch_size and not batch_sizes_file().exists():
        return eval_cfg  # nothing measured on this machine: no workload to describe (a CUDA query)
    units = run.plan.units()
    if eval_cfg.measure_batch_size and units:
        chosen = _measure_and_remember(run, units[0].task)
    else:
        chosen = remembered_batch_size(run.workload())
        if chosen is None:
            return dataclasses.replace(eval_cfg, measure_batch_size=False)
        _log_remembered(eval_cfg, chosen)
    return dataclasses.replace(
        eval_cfg,
        batch_size=eval_cfg.batch_size or chosen.batch_size,
        row_groups=eval_cfg.row_groups or chosen.row_groups,
        independent_rows=_takes_independent_rows(eval_cfg, chosen) or eval_cfg.independent_rows,
        measure_batch_size=False,
    )


def _log_remembered(eval_cfg: EvalConfig, chosen: RememberedBatchSize) -> None:
    taken = [f"batch size {chosen.batch_size}"] if not eval_cfg.batch_size else []
    taken += [f"row groups {chosen.row_groups}"] if not eval_cfg.row_groups else []
    taken += ["independent rows"] if _takes_independent_rows(eval_cfg, chosen) else []
    logger.info(
        "%s: measured for this workload on this machine at %s (%s)",
        " and ".join(taken),
        chosen.measured_at,
        batch_sizes_file(),
    )


def _takes_independent_rows(eval_cfg: EvalConfig, chosen: RememberedBatchSize) -> bool:
    """Whether the run takes independent rows from the measurement: it found them fastest, and
    neither they nor row groups were given."""
    return chosen.independent_rows and eval_cfg.independent_rows is None and not eval_cfg.row_groups


def _measure_and_remember(run: BatchRun, task: TaskSpec) -> RememberedBatchSize:
    """Measure on `task`; remember and return the best batch size and grouping."""
    workload = run.workload()
    candidates = candidate_batches(workload["machine"]["cores"])
    logger.info("measuring batch sizes %s on %s", ", ".join(map(str, candidates)), task.label)
    probe = _Probe(run, task)
    eval_cfg, independent_given = run.eval_cfg, run.settings.independent_rows
    arrangements_to_measure = eval_cfg.row_groups == 0 and can_move_rows(run.policy)
    measurement = measure_batch_sizes(
        probe.rate_at,
        candidates,
        probe.row_groups_at if arrangements_to_measure and not independent_given else None,
        max(1, eval_cfg.row_groups),
        probe.independent_rate_at if arrangements_to_measure and eval_cfg.independent_rows is None else None,
        independent_rows=independent_given,
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
    _remember(
        workload,
        remembered,
        f"batch size {best.batch_size}{arranged(best.row_groups, best.independent_rows)}",
    )
    return remembered


def _remember(workload: dict[str, Any], remembered: RememberedBatchSize, chosen: str) -> None:
    try:
        path = remember_batch_size(workload, remembered)
    except ResultsWriteError as exc:  # the run goes on as measured; later runs guess
        logger.warning("%s: the fastest measured, not remembered: %s", chosen, exc)
    else:
        logger.info("%s: the fastest measured; remembered in %s", chosen, path)


@dataclasses.dataclass(frozen=True)
class _Probe:
    """The rate of the run's real loop on fresh envs of one task, at a batch size and grouping."""

    run: BatchRun
    task: TaskSpec

    def config(self, batch_size: int, row_groups: int) -> EvalConfig:
        # As many episodes as envs, so that the run's own episode count does not clamp the batch.
        return dataclasses.replace(
            self.run.eval_cfg,
            batch_size=batch_size,
            n_episodes=batch_size,
            shard=None,
            row_groups=row_groups,
            measure_batch_size=False,
        )

    def rate_at(self, batch_size: int, row_groups: int, independent_rows: bool | None = None) -> float:
        settings = self.run.settings
        if independent_rows is None:
            independent_rows = settings.independent_rows
        env = task_envs(self.run.env_cfg, self.config(batch_size, row_groups), (self.task,))(self.task)
        try:
            settings = dataclasses.replace(settings, row_groups=row_groups, independent_rows=independent_rows)
            return env_steps_per_second(env, self.run.policy, settings, self.task)
        finally:
            env.close()

    def independent_rate_at(self, batch_size: int) -> float:
        return self.rate_at(batch_size, 1, independent_rows=True)

    def row_groups_at(self, batch_size: int) -> list[int]:
        return candidate_row_groups(BatchLayout.of(self.config(batch_size, 1)).answering_units)
