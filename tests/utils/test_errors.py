"""A missing optional dependency is a one-line error naming the extra to install, raised while
the command line is parsed (the base install, command by command: tests/scripts/test_missing_extras.py)."""

import sys

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.env import EnvConfig
from lerobot.configs.policies import PreTrainedConfig
from lerobot.utils.errors import ConfigError, require_extra


def test_a_missing_module_names_the_flag_the_module_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "msgpack", None)  # as if not installed
    with pytest.raises(ConfigError) as error:
        require_extra("--policy.type=websocket", "remote", ("json", "msgpack"))
    assert (
        str(error.value)
        == "--policy.type=websocket: needs msgpack (not installed); pip install 'lerobot[remote]'"
    )


def test_installed_modules_pass():
    require_extra("--eval.backend=ray", "ray", ("json",))


@pytest.mark.parametrize("name", sorted(n for n, c in EnvConfig.get_known_choices().items() if c.extra))
def test_a_benchmark_without_its_simulator_names_its_extra(monkeypatch, name):
    config_class = EnvConfig.get_choice_class(name)
    monkeypatch.setitem(sys.modules, config_class.extra_modules[0], None)
    with pytest.raises(
        ConfigError, match=rf"^--env.type={name}: needs .*pip install 'lerobot\[{config_class.extra}\]'$"
    ):
        config_class.tiny_config()


@pytest.mark.parametrize(
    "name", sorted(n for n, c in PreTrainedConfig.get_known_choices().items() if c.extra)
)
def test_a_policy_type_without_its_extra_names_it(monkeypatch, name):
    config_class = PreTrainedConfig.get_choice_class(name)
    monkeypatch.setitem(sys.modules, config_class.extra_modules[0], None)
    with pytest.raises(
        ConfigError, match=rf"^--policy.type={name}: needs .*pip install 'lerobot\[{config_class.extra}\]'$"
    ):
        config_class()
