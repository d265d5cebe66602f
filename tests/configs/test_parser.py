"""LeRobot's parser entry points: `--<field>.discover_packages_path` and `@wrap()`."""

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
