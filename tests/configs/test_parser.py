"""Bad command lines fail in one line that names the flag and says what is expected."""

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import CliError, parse_config

BASE = ["--policy.type=random", "--env.type=metaworld"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--policy.type=random"], "--env.type: required; choose one of libero, metaworld"),
        (
            [*BASE, "--seed=-1"],
            "--seed=-1: episode seeds run from seed to seed + n_episodes - 1 and must lie in",
        ),
        ([*BASE, "--seed=4294967295"], "--seed=4294967295: episode seeds run from seed"),
        ([*BASE, "--job_name=../elsewhere"], "--job_name='../elsewhere': must be a plain name"),
        ([*BASE, "--job_name=a/b"], "--job_name='a/b': must be a plain name"),
        ([*BASE, "--output_dir="], "--output_dir=.: give the directory results go to"),
        ([*BASE, "--env.fps=0"], "--env.fps=0: must be a positive frame rate"),
        (
            [*BASE, "--rename_map=observation.image"],
            "--rename_map=observation.image: expected a value of type dict[str, str], e.g. --rename_map='{",
        ),
        (
            [*BASE, "--env.camera_names=corner9"],
            "--env.camera_names='corner9': give distinct names among corner, corner2",
        ),
        (
            [*BASE, "--env.task=libero_spatial"],
            "--env.task='libero_spatial': a LIBERO suite, not a Meta-World task; use --env.type=libero",
        ),
        ([*BASE, "--env.task_ids=[1]"], "--env.task_ids: not a setting of this env type"),
        (
            [*BASE, "--env.observation_height=big"],
            "--env.observation_height=big: expected a value of type int",
        ),
        (
            ["--policy.type=random", "--env.type=libero", "--env.task_ids=x"],
            "--env.task_ids=x: expected a value of type list[int], e.g. --env.task_ids='[0,3]'",
        ),
    ],
)
def test_bad_flags_fail_in_one_line_without_internal_names(argv, message):
    with pytest.raises(CliError) as err:
        parse_config(EvalPipelineConfig, argv)
    text = str(err.value)
    assert text.startswith(message)
    assert "\n" not in text and "<class" not in text and "EvalPipelineConfig" not in text


def test_a_single_camera_name_needs_no_list_syntax():
    cfg = parse_config(EvalPipelineConfig, [*BASE, "--env.camera_names=corner2"])
    assert cfg.env.camera_names == ["corner2"]
