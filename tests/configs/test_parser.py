"""The command line: bad flags fail in one line that names the flag and says what is expected;
LeRobot's parser entry points (`--<field>.discover_packages_path`, `@wrap()`)."""

from __future__ import annotations

import sys

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs import parser
from lerobot.configs.env import EnvConfig
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import CliError, parse_config
from tests.plugin_packages import LEROBOT_ENV_TOY, write_package


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    write_package(tmp_path, "my_envs", LEROBOT_ENV_TOY, distribution=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    EnvConfig._choice_registry.pop("toy", None)
    sys.modules.pop("my_envs", None)


def test_discover_packages_path_imports_a_plugin_before_parsing(plugin_dir):
    argv = ["--env.discover_packages_path=my_envs", "--env.type=toy", "--policy.type=random"]
    assert parse_config(EvalPipelineConfig, argv).env.type == "toy"


def test_a_plugin_that_cannot_be_imported_is_one_line():
    with pytest.raises(
        CliError, match=r"^--env.discover_packages_path=no_such_pkg: cannot import the plugin"
    ):
        parse_config(EvalPipelineConfig, ["--env.discover_packages_path=no_such_pkg", "--env.type=metaworld"])


def test_lerobots_plugin_functions_load_and_name_the_failing_package(plugin_dir):
    parser.load_plugin("my_envs")
    assert "toy" in EnvConfig.get_known_choices()
    with pytest.raises(parser.PluginLoadError, match="^Failed to load plugin 'no_such_pkg'"):
        parser.load_plugin("no_such_pkg")
    args = ["--env.discover_packages_path=my_envs", "--policy.discover_packages_path", "pkg", "--seed=1"]
    assert parser.parse_plugin_args("discover_packages_path", args) == {
        "env.discover_packages_path": "my_envs",
        "policy.discover_packages_path": "pkg",
    }


def test_wrap_runs_on_a_given_config_or_parses_the_command_line(monkeypatch, capsys):
    @parser.wrap()
    def main(cfg: EvalPipelineConfig) -> str:
        return cfg.env.task

    given = parse_config(
        EvalPipelineConfig, ["--env.type=metaworld", "--env.task=reach-v3", "--policy.type=random"]
    )
    assert main(given) == "reach-v3"
    monkeypatch.setattr(
        sys, "argv", ["prog", "--env.type=metaworld", "--policy.type=random", "--env.task=push-v3"]
    )
    assert main() == "push-v3"
    monkeypatch.setattr(sys, "argv", ["prog", "--env.type=metaworld", "--eval.n_epsiodes=1"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2 and "--eval.n_epsiodes=1" in capsys.readouterr().err


BASE = ["--policy.type=random", "--env.type=metaworld"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--policy.type=random"],
            "--env.type: required; choose one of aloha, libero, libero_pro, maniskill, metaworld, pusht, robomimic",
        ),
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


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        # The spelling of LeRobot's key: the key it shortens is named.
        (
            ["--policy.type=pi05", "--env.type=libero", "--policy.compile=true"],
            "(did you mean --policy.compile_mode or --policy.compile_model?)",
        ),
        (
            [*BASE, "--eval.n_epsiodes=3", "--seedd=1"],
            "(did you mean --eval.n_episodes or --seed?)",
        ),
        ([*BASE, "--nothing_like_it=1"], "unrecognized arguments: --nothing_like_it=1"),
    ],
)
def test_unknown_flags_name_the_closest_real_ones(argv, suggestion):
    with pytest.raises(CliError) as err:
        parse_config(EvalPipelineConfig, argv)
    assert str(err.value).endswith(suggestion) and "\n" not in str(err.value)


def test_a_single_camera_name_needs_no_list_syntax():
    cfg = parse_config(EvalPipelineConfig, [*BASE, "--env.camera_names=corner2"])
    assert cfg.env.camera_names == ["corner2"]


def obs_types_of(env_type: str) -> tuple[str, ...]:
    """The `--env.obs_type` values an env type documents (its `OBS_TYPES`), or () for none."""
    import importlib

    module = EnvConfig.get_choice_class(env_type).__module__
    for name in (module, f"{module}.tasks"):
        try:
            found = getattr(importlib.import_module(name), "OBS_TYPES", None)
        except ModuleNotFoundError:
            continue
        if found:
            return tuple(found)
    return ()


OBS_TYPE_CASES = [
    (env_type, obs_type)
    for env_type in sorted(EnvConfig.get_known_choices())
    for obs_type in obs_types_of(env_type)
]


def test_every_env_type_documents_its_obs_types():
    assert {env for env, _ in OBS_TYPE_CASES} >= {
        "aloha",
        "libero",
        "maniskill",
        "metaworld",
        "pusht",
        "robomimic",
    }


@pytest.mark.parametrize(("env_type", "obs_type"), OBS_TYPE_CASES)
def test_every_obs_type_of_every_env_type_parses(env_type, obs_type):
    """draccus puts every env type's fields on one argparse parser: a field two types share must
    not carry one type's choices (PushT's `environment_state_agent_pos` and Meta-World's
    `pixels` were once refused by the choices of the type registered last)."""
    cfg = parse_config(
        EvalPipelineConfig, ["--policy.type=random", f"--env.type={env_type}", f"--env.obs_type={obs_type}"]
    )
    assert cfg.env.obs_type == obs_type
