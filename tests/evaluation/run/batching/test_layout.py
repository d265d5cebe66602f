"""Where a task's envs run: the core-count rule for what --eval.* leaves to auto."""

import pytest

from lerobot.configs.eval import EvalConfig
from lerobot.evaluation.run.batching.layout import (
    BatchLayout,
    auto_batch_size,
    auto_envs_in_main_process,
    auto_envs_per_worker,
)


def layout(**eval_flags) -> BatchLayout:
    return BatchLayout.of(EvalConfig(**eval_flags))


@pytest.mark.parametrize(
    ("cores", "n_episodes", "expected"),
    [
        (1, 50, 1),  # floor(0.7) = 0 -> at least one env
        (2, 50, 2),  # floor(1.4), but two where there are two cores
        (2, 1, 1),
        (3, 50, 2),
        (8, 50, 5),  # floor(5.6)
        (16, 3, 3),  # never more envs than episodes
        (128, 500, 64),  # capped
    ],
)
def test_auto_batch_size(cores, n_episodes, expected):
    assert auto_batch_size(n_episodes, cpu_count=cores) == expected


def test_zero_batch_size_means_auto(monkeypatch):
    monkeypatch.setattr("lerobot.evaluation.run.batching.layout.usable_cores", lambda: 10)
    assert layout(n_episodes=50, batch_size=0).n_envs == 7


def test_batch_size_above_n_episodes_is_clamped():
    assert layout(n_episodes=3, batch_size=10).n_envs == 3


def test_a_single_env_runs_in_process():
    assert not layout(n_episodes=5, batch_size=1, use_async_envs=True).use_async
    assert layout(n_episodes=5, batch_size=2, use_async_envs=True).use_async
    assert not layout(n_episodes=5, batch_size=2, use_async_envs=False).use_async


@pytest.mark.parametrize(
    ("n_envs", "cores", "expected"),
    [(1, 8, 0), (2, 2, 1), (4, 16, 1), (5, 16, 0), (32, 16, 0), (8, 8, 0), (3, 2, 1), (4, 2, 2), (8, 2, 4)]
    + [(8, 4, 2), (4, 4, 1), (4, 1, 0)],
)
def test_the_main_process_steps_its_share_on_a_small_machine_and_one_env_of_a_small_batch_else(
    n_envs, cores, expected
):
    assert auto_envs_in_main_process(n_envs, cores) == expected


@pytest.mark.parametrize(
    ("n_envs", "cores", "main_steps_envs", "expected"),
    [(1, 2, False, 1), (2, 2, False, 1), (3, 2, False, 2), (8, 2, False, 4), (64, 16, False, 4)]
    + [(32, 16, False, 2), (8, 16, False, 1), (2, 2, True, 2), (6, 4, True, 2), (3, 16, True, 1)],
)
def test_a_worker_per_core_at_most_by_default(n_envs, cores, main_steps_envs, expected):
    assert auto_envs_per_worker(n_envs, cores, main_steps_envs) == expected


@pytest.mark.parametrize(("batch", "in_main", "per_worker"), [(2, 1, 1), (4, 2, 2), (8, 4, 4), (3, 1, 2)])
def test_on_two_cores_no_batch_needs_more_processes_than_cores(monkeypatch, batch, in_main, per_worker):
    monkeypatch.setattr("lerobot.evaluation.run.batching.layout.usable_cores", lambda: 2)
    cfg = layout(n_episodes=20, batch_size=batch)
    assert (cfg.envs_in_main_process, cfg.envs_per_worker) == (in_main, per_worker)


def test_envs_per_worker_as_given_else_one_on_ray_and_per_core_here(monkeypatch):
    monkeypatch.setattr("lerobot.evaluation.run.batching.layout.usable_cores", lambda: 2)
    assert layout(n_episodes=20, batch_size=8, envs_per_worker=3).envs_per_worker == 3
    assert layout(n_episodes=20, batch_size=8, envs_in_main_process=0).envs_per_worker == 4
    assert layout(n_episodes=20, batch_size=2).envs_per_worker == 1  # one env in the main process


def test_envs_in_the_main_process_are_all_of_them_without_workers_and_at_most_the_batch():
    assert layout(n_episodes=5, batch_size=1).envs_in_main_process == 1
    assert layout(n_episodes=5, batch_size=3, use_async_envs=False).envs_in_main_process == 3
    assert layout(n_episodes=5, batch_size=3, envs_in_main_process=0).envs_in_main_process == 0
    assert layout(n_episodes=5, batch_size=3, envs_in_main_process=9).envs_in_main_process == 3


def test_a_shard_runs_no_more_envs_than_its_episodes():
    assert layout(n_episodes=10, batch_size=8, shard="2/4").n_envs == 2  # episodes 2 and 6


def test_the_ray_backend_gives_each_actor_one_env_unless_told():
    assert layout(n_episodes=20, backend="ray").envs_per_worker == 1
    assert layout(n_episodes=20, backend="ray", envs_per_worker=3).envs_per_worker == 3


def test_the_log_says_where_envs_run(monkeypatch):
    monkeypatch.setattr("lerobot.evaluation.run.batching.layout.usable_cores", lambda: 2)
    assert layout(n_episodes=20, batch_size=1).describe() == "in-process"
    assert layout(n_episodes=20, batch_size=8).describe() == "1 async worker of 4 envs, 4 in the main process"
    assert (
        layout(n_episodes=20, batch_size=4, envs_in_main_process=0).describe() == "2 async workers of 2 envs"
    )


@pytest.mark.parametrize(
    ("flags", "units"),
    [
        ({"batch_size": 1}, 1),
        ({"batch_size": 4, "use_async_envs": False}, 1),
        ({"batch_size": 8, "envs_in_main_process": 0, "envs_per_worker": 2}, 4),
        ({"batch_size": 8, "envs_in_main_process": 2, "envs_per_worker": 4}, 4),
        ({"batch_size": 5, "envs_in_main_process": 1, "envs_per_worker": 3}, 3),
    ],
)
def test_row_groups_are_made_of_workers_and_main_process_envs(flags, units):
    assert layout(n_episodes=10, **flags).answering_units == units
