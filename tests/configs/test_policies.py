"""LeRobot's hub and PEFT settings are on every policy type, as in LeRobot's base
`PreTrainedConfig`: they parse, round-trip through config.json, and change nothing here.
(`lerobot-train` refuses the uploads they ask for: tests/configs/test_train_flags.py.)"""

import dataclasses
import json

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.checkpoint import CONFIG_FILE, WEIGHTS_FILE
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.parser import CliError, parse_config
from lerobot.configs.policies import PreTrainedConfig
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.act.configuration_act import ACTConfig
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.utils.errors import ConfigError

# LeRobot 0.6.1's defaults (tests/fixtures/lerobot_0_6_1_train_flags.json has them all).
HUB_SETTINGS = {
    "use_peft": False,
    "push_to_hub": True,
    "repo_id": None,
    "private": None,
    "tags": None,
    "license": None,
}
GIVEN = {"push_to_hub": False, "repo_id": "me/policy", "private": True, "tags": ["sim"], "license": "mit"}


@pytest.mark.parametrize("policy_type", sorted(PreTrainedConfig.get_known_choices()))
def test_every_policy_type_has_lerobots_hub_settings_with_lerobots_defaults(policy_type):
    fields = {f.name: f for f in dataclasses.fields(PreTrainedConfig.get_choice_class(policy_type))}
    assert {name: fields[name].default for name in HUB_SETTINGS} == HUB_SETTINGS


def test_hub_settings_round_trip_through_config_json(tmp_path):
    action = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(4,))}
    ACTConfig(output_features=action, **GIVEN).save_pretrained(tmp_path / "act")
    (tmp_path / "act" / WEIGHTS_FILE).touch()  # reading the config checks that weights exist
    RandomConfig(**GIVEN).save_pretrained(tmp_path / "random")
    for name in ("act", "random"):
        saved = json.loads((tmp_path / name / CONFIG_FILE).read_text())
        assert {key: saved[key] for key in GIVEN} == GIVEN
        loaded = PreTrainedConfig.from_pretrained(tmp_path / name)
        assert {key: getattr(loaded, key) for key in GIVEN} == GIVEN


def test_use_peft_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^--policy.use_peft=true: PEFT adapters are not in this build"):
        RandomConfig(use_peft=True)


def test_lerobot_eval_takes_and_ignores_them():
    cfg = parse_config(
        EvalPipelineConfig,
        ["--env.type=metaworld", "--policy.type=random", "--policy.repo_id=me/x", '--policy.tags=["a"]'],
    )
    assert (cfg.policy.push_to_hub, cfg.policy.repo_id, cfg.policy.tags) == (True, "me/x", ["a"])
    with pytest.raises(CliError, match=r"^--policy.use_peft=true: "):
        parse_config(
            EvalPipelineConfig, ["--env.type=metaworld", "--policy.type=random", "--policy.use_peft=true"]
        )
