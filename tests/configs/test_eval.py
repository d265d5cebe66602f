import pytest

from lerobot.configs.eval import EvalConfig, auto_batch_size, auto_envs_in_main_process, auto_envs_per_worker
from lerobot.utils.errors import ConfigError


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
    monkeypatch.setattr("lerobot.configs.eval.usable_cores", lambda: 10)
    assert EvalConfig(n_episodes=50, batch_size=0).resolved_batch_size == 7


def test_batch_size_above_n_episodes_is_clamped():
    cfg = EvalConfig(n_episodes=3, batch_size=10)
    assert cfg.resolved_batch_size == 3


def test_a_single_env_runs_in_process():
    assert not EvalConfig(n_episodes=5, batch_size=1, use_async_envs=True).resolved_use_async
    assert EvalConfig(n_episodes=5, batch_size=2, use_async_envs=True).resolved_use_async
    assert not EvalConfig(n_episodes=5, batch_size=2, use_async_envs=False).resolved_use_async


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
    monkeypatch.setattr("lerobot.configs.eval.usable_cores", lambda: 2)
    cfg = EvalConfig(n_episodes=20, batch_size=batch)
    assert (cfg.resolved_envs_in_main_process, cfg.resolved_envs_per_worker) == (in_main, per_worker)


def test_envs_per_worker_as_given_else_one_on_ray_and_per_core_here(monkeypatch):
    monkeypatch.setattr("lerobot.configs.eval.usable_cores", lambda: 2)
    assert EvalConfig(n_episodes=20, batch_size=8, envs_per_worker=3).resolved_envs_per_worker == 3
    assert EvalConfig(n_episodes=20, batch_size=8, envs_in_main_process=0).resolved_envs_per_worker == 4
    assert (
        EvalConfig(n_episodes=20, batch_size=2).resolved_envs_per_worker == 1
    )  # one env in the main process


def test_envs_in_the_main_process_are_all_of_them_without_workers_and_at_most_the_batch():
    assert EvalConfig(n_episodes=5, batch_size=1).resolved_envs_in_main_process == 1
    assert EvalConfig(n_episodes=5, batch_size=3, use_async_envs=False).resolved_envs_in_main_process == 3
    assert EvalConfig(n_episodes=5, batch_size=3, envs_in_main_process=0).resolved_envs_in_main_process == 0
    assert EvalConfig(n_episodes=5, batch_size=3, envs_in_main_process=9).resolved_envs_in_main_process == 3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_episodes": 0}, r"^--eval.n_episodes=0: must be a positive integer$"),
        ({"n_episodes": -3}, r"^--eval.n_episodes=-3: must be a positive integer$"),
        ({"batch_size": -1}, r"^--eval.batch_size=-1: must be 0 \(auto\) or a positive integer$"),
        ({"max_episodes_rendered": -1}, r"^--eval.max_episodes_rendered=-1"),
        ({"envs_in_main_process": -1}, r"^--eval.envs_in_main_process=-1: must be 0 or more"),
        ({"envs_per_worker": -1}, r"^--eval.envs_per_worker=-1: must be 0 \(auto\) or a positive integer$"),
        ({"row_groups": -1}, r"^--eval.row_groups=-1: must be 0 \(auto\), 1 \(lockstep\) or more$"),
        (
            {"measure_batch_size": True, "batch_size": 4},
            r"^--eval.measure_batch_size=true: it chooses the batch size; drop --eval.batch_size=4$",
        ),
    ],
)
def test_bad_values_are_rejected_with_the_flag_name(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        EvalConfig(**kwargs)


def test_shard_spec_and_its_batch_size():
    cfg = EvalConfig(n_episodes=10, batch_size=8, shard="2/4")
    assert cfg.shard_spec == (2, 4)
    assert cfg.episodes_per_task == 2  # episodes 2 and 6
    assert cfg.resolved_batch_size == 2


@pytest.mark.parametrize("shard", ["4/4", "1", "a/b", "-1/2"])
def test_bad_shard_names_the_flag(shard):
    with pytest.raises(ConfigError, match=r"^--eval.shard=.*: must be i/n with 0 <= i < n, e.g. 0/4$"):
        EvalConfig(shard=shard)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"recording_root": "x"}, r"^--eval.recording_root=x: add --eval.recording=true$"),
        (
            {"recording": True, "recording_repo_id": "me/evals"},
            r"^--eval.recording_repo_id=me/evals: this build never uploads",
        ),
        (
            {"recording": True, "recording_private": True},
            r"^--eval.recording_private=true: this build never uploads",
        ),
        ({"recording": True, "resume": True}, r"^--eval.recording=true: a resumed run cannot record"),
    ],
)
def test_recording_flags_that_cannot_work_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        EvalConfig(**kwargs)


def test_recordings_default_to_the_output_dir_as_in_lerobot(tmp_path):
    import lerobot.envs  # noqa: F401
    import lerobot.policies  # noqa: F401
    from lerobot.configs.eval import EvalPipelineConfig
    from lerobot.configs.parser import parse_config

    argv = [
        "--env.type=metaworld",
        "--policy.type=random",
        "--eval.recording=true",
        f"--output_dir={tmp_path}",
    ]
    assert parse_config(EvalPipelineConfig, argv).eval.recording_root == tmp_path / "recordings"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--env.max_parallel_tasks=0"], r"^--env.max_parallel_tasks=0: must be a positive integer$"),
        (
            ["--policy.device=gpu"],
            r"^--policy.device='gpu': unknown device; choose cpu, cuda, cuda:<index>, mps or xpu",
        ),
        (
            ["--eval.backend=ray", "--env.max_parallel_tasks=2"],
            r"^--env.max_parallel_tasks=2: only used by the local backend",
        ),
        (
            ["--eval.measure_batch_size=true", "--env.max_parallel_tasks=2"],
            r"^--env.max_parallel_tasks=2: --eval.measure_batch_size=true measures one task at a time",
        ),
        (
            ["--eval.backend=ray", "--eval.recording=true"],
            r"^--eval.recording=true: only the local backend records",
        ),
        (
            ["--eval.backend=ray", "--eval.independent_rows=true"],
            r"^--eval.independent_rows=true: only used by the local backend, whose envs run in worker processes",
        ),
        (
            ["--eval.backend=ray", "--eval.row_groups=2"],
            r"^--eval.row_groups=2: only used by the local backend",
        ),
    ],
)
def test_lerobot_flags_are_checked_when_parsed(flags, message):
    import lerobot.envs  # noqa: F401
    import lerobot.policies  # noqa: F401
    from lerobot.configs.eval import EvalPipelineConfig
    from lerobot.configs.parser import CliError, parse_config

    with pytest.raises(CliError, match=message):
        parse_config(EvalPipelineConfig, ["--env.type=metaworld", "--policy.type=random", *flags])
