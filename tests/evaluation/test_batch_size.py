"""The batch size and row groups a run uses: given values stay, auto takes what was measured."""

from __future__ import annotations

import pytest

from lerobot.configs.eval import EvalConfig, EvalPipelineConfig
from lerobot.configs.parser import parse_config
from lerobot.evaluation.run.batch_size import answering_units, batch_workload, with_settled_batch_size
from lerobot.evaluation.run.rollout import RolloutSettings
from lerobot.evaluation.store.batch_sizes import BatchRate, RememberedBatchSize, remember_batch_size
from lerobot.policies.factory import make_policy


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LEROBOT_CACHE_DIR", str(tmp_path / "cache"))


def config_and_policy(tmp_path, *flags):
    import lerobot.envs  # noqa: F401  (registers the env types)

    argv = ["--env.type=metaworld", "--env.obs_type=state", "--policy.type=random", "--policy.device=cpu"]
    cfg = parse_config(EvalPipelineConfig, [*argv, f"--output_dir={tmp_path / 'out'}", *flags])
    return cfg, make_policy(cfg.policy, env_cfg=cfg.env)


def settled(cfg, policy) -> tuple[int, int]:
    run = with_settled_batch_size(cfg, policy, RolloutSettings())
    assert not run.eval.measure_batch_size
    return run.eval.batch_size, run.eval.row_groups


def remember(cfg, policy, batch_size, row_groups):
    rates = (BatchRate(batch_size, 1000.0, row_groups),)
    remember_batch_size(
        batch_workload(cfg, policy), RememberedBatchSize(batch_size, row_groups, "2026-12-06T14:00:00", rates)
    )


def test_without_a_measurement_auto_stays_auto(tmp_path):
    cfg, policy = config_and_policy(tmp_path)
    assert settled(cfg, policy) == (0, 0)
    assert cfg.eval.resolved_batch_size >= 1


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
    run = with_settled_batch_size(cfg, policy, RolloutSettings())
    assert (run.eval.batch_size, run.eval.row_groups, run.eval.independent_rows) == expected


def test_a_measurement_of_other_env_settings_does_not_apply(tmp_path):
    cfg, policy = config_and_policy(tmp_path)
    remember(cfg, policy, 6, 2)
    other, policy = config_and_policy(tmp_path, "--env.episode_length=100")
    assert settled(other, policy) == (0, 0)


@pytest.mark.parametrize(
    ("layout", "units"),
    [
        ({"batch_size": 1}, 1),
        ({"batch_size": 4, "use_async_envs": False}, 1),
        ({"batch_size": 8, "envs_in_main_process": 0, "envs_per_worker": 2}, 4),
        ({"batch_size": 8, "envs_in_main_process": 2, "envs_per_worker": 4}, 4),
        ({"batch_size": 5, "envs_in_main_process": 1, "envs_per_worker": 3}, 3),
    ],
)
def test_row_groups_are_made_of_workers_and_main_process_envs(layout, units):
    assert answering_units(EvalConfig(n_episodes=10, **layout)) == units
