"""The batch size and row groups a run uses: given values stay, auto takes what was measured."""

from __future__ import annotations

import pytest

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.evaluation.run.batching.layout import BatchLayout
from lerobot.evaluation.run.batching.remembered import BatchRate, RememberedBatchSize, remember_batch_size
from lerobot.evaluation.run.batching.settle import BatchRun, settle_batch_size
from lerobot.evaluation.run.plan import RunPlan
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.policies.factory import make_policy


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LEROBOT_CACHE_DIR", str(tmp_path / "cache"))


def config_and_policy(tmp_path, *flags):
    import lerobot.envs  # noqa: F401  (registers the env types)

    argv = ["--env.type=metaworld", "--env.obs_type=state", "--policy.type=random", "--policy.device=cpu"]
    cfg = parse_config(EvalPipelineConfig, [*argv, f"--output_dir={tmp_path / 'out'}", *flags])
    return cfg, make_policy(cfg.policy, env_cfg=cfg.env)


def batch_run(cfg, policy) -> BatchRun:
    plan = RunPlan.from_config(cfg.env.tasks(), cfg.eval)
    return BatchRun(cfg.eval, cfg.env, cfg.policy, policy, RolloutSettings(), plan)


def batch_workload(cfg, policy) -> dict:
    return batch_run(cfg, policy).workload()


def settled(cfg, policy) -> tuple[int, int]:
    run = settle_batch_size(batch_run(cfg, policy))
    assert not run.measure_batch_size
    return run.batch_size, run.row_groups


def remember(cfg, policy, batch_size, row_groups):
    rates = (BatchRate(batch_size, 1000.0, row_groups),)
    remember_batch_size(
        batch_workload(cfg, policy), RememberedBatchSize(batch_size, row_groups, "2026-12-06T14:00:00", rates)
    )


def test_without_a_measurement_auto_stays_auto(tmp_path):
    cfg, policy = config_and_policy(tmp_path)
    assert settled(cfg, policy) == (0, 0)
    assert BatchLayout.of(cfg.eval).n_envs >= 1


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], (6, 2)),
        (["--eval.batch_size=3"], (3, 2)),
        (["--eval.row_groups=1"], (6, 1)),
        (["--eval.batch_size=3", "--eval.row_groups=4"], (3, 4)),
    ],
)
def test_a_measurement_fills_in_what_is_left_to_auto(tmp_path, flags, expected):
    cfg, policy = config_and_policy(tmp_path, *flags)
    remember(cfg, policy, 6, 2)
    assert settled(cfg, policy) == expected


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], (6, 1, True)),
        (["--eval.row_groups=1"], (6, 1, None)),  # given groups keep rows in them
        (["--eval.independent_rows=false"], (6, 1, False)),
        (["--eval.batch_size=3", "--eval.independent_rows=true"], (3, 1, True)),
    ],
)
def test_measured_independent_rows_are_taken_where_neither_they_nor_groups_were_given(
    tmp_path, flags, expected
):
    cfg, policy = config_and_policy(tmp_path, *flags)
    rates = (BatchRate(6, 1000.0, independent_rows=True),)
    remembered = RememberedBatchSize(6, 1, "2026-12-06T14:00:00", rates, independent_rows=True)
    remember_batch_size(batch_workload(cfg, policy), remembered)
    run = settle_batch_size(batch_run(cfg, policy))
    assert (run.batch_size, run.row_groups, run.independent_rows) == expected


def test_a_measurement_of_other_env_settings_does_not_apply(tmp_path):
    cfg, policy = config_and_policy(tmp_path)
    remember(cfg, policy, 6, 2)
    other, policy = config_and_policy(tmp_path, "--env.episode_length=100")
    assert settled(other, policy) == (0, 0)
