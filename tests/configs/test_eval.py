import pytest

from lerobot.configs.eval import EvalConfig
from lerobot.utils.errors import ConfigError


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


def test_shard_spec():
    cfg = EvalConfig(n_episodes=10, batch_size=8, shard="2/4")
    assert cfg.shard_spec == (2, 4)
    assert cfg.episodes_per_task == 2  # episodes 2 and 6


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
