"""LeRobot's policy interface on every policy class: from_pretrained, save_pretrained and the rest.

`ACTPolicy.from_pretrained(dir)` is the first line of LeRobot's README for loading a policy, and
`get_policy_class(type).from_pretrained(dir, config=cfg)` is how LeRobot's scripts load every
one. The checkpoints here are the ones LeRobot 0.6.1 saved (tests/fixtures/policies).
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import lerobot.envs  # noqa: F401  (registers --env.type values)
from lerobot.configs.checkpoint import CheckpointError
from lerobot.envs.aloha import AlohaEnvConfig
from lerobot.envs.metaworld import MetaworldEnvConfig
from lerobot.policies.act.modeling_act import ACTPolicy
from lerobot.policies.aloha_scripted.configuration_aloha_scripted import AlohaScriptedConfig
from lerobot.policies.aloha_scripted.modeling_aloha_scripted import AlohaScriptedPolicy
from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy
from lerobot.policies.factory import get_policy_class
from lerobot.policies.metaworld_expert.configuration_metaworld_expert import MetaworldExpertConfig
from lerobot.policies.metaworld_expert.modeling_metaworld_expert import MetaworldExpertPolicy
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.policies.random.modeling_random import RandomPolicy
from lerobot.utils.errors import ConfigError
from tests.policies.checkpoints import FIXTURES, expected, load, raw_step

LEROBOT_FIELDS = json.loads((FIXTURES.parent / "lerobot_0_6_1_signatures.json").read_text())["config_fields"]


@pytest.mark.parametrize(("name", "cls"), [("act", ACTPolicy), ("diffusion", DiffusionPolicy)])
def test_from_pretrained_loads_a_lerobot_checkpoint_as_lerobot_eval_does(checkpoints, name, cls):
    policy = cls.from_pretrained(checkpoints[name])
    assert type(policy) is cls and not policy.training
    assert policy.config.pretrained_path == str(checkpoints[name].resolve())
    reference = load(checkpoints[name]).policy
    for key, value in reference.state_dict().items():
        torch.testing.assert_close(policy.state_dict()[key], value, rtol=0, atol=0)
    again = get_policy_class(name).from_pretrained(str(checkpoints[name]), config=reference.config)
    assert type(again) is cls


def test_from_pretrained_takes_overrides_and_lerobots_factory_arguments(checkpoints):
    policy = ACTPolicy.from_pretrained(checkpoints["act"], n_action_steps=3, dataset_stats={"x": 1})
    assert policy.config.n_action_steps == 3
    with pytest.raises(TypeError, match="unexpected arguments: n_action_steps"):
        ACTPolicy.from_pretrained(checkpoints["act"], config=policy.config, n_action_steps=3)
    with pytest.raises(CheckpointError, match="a act checkpoint, not a diffusion one"):
        DiffusionPolicy.from_pretrained(checkpoints["act"])


def test_a_hub_id_not_in_the_cache_is_one_line_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError) as error:
        ACTPolicy.from_pretrained("lerobot-tests/not-cached", cache_dir=tmp_path / "cache")
    message = str(error.value)
    assert message.startswith("--policy.path=lerobot-tests/not-cached: HF_HUB_OFFLINE is set")
    assert str(tmp_path / "cache") in message and "\n" not in message
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with pytest.raises(CheckpointError, match="local_files_only is set and the checkpoint is not"):
        ACTPolicy.from_pretrained("lerobot-tests/not-cached", local_files_only=True, cache_dir=tmp_path)


def test_a_missing_tensor_is_always_an_error_an_extra_one_only_when_strict(checkpoints, tmp_path, caplog):
    directory = tmp_path / "extra"
    ACTPolicy.from_pretrained(checkpoints["act"]).save_pretrained(directory)
    state = load_file(directory / "model.safetensors")
    save_file({**state, "model.unused": torch.zeros(2)}, directory / "model.safetensors")
    with pytest.raises(CheckpointError, match="1 unexpected key"):
        ACTPolicy.from_pretrained(directory, strict=True)
    with caplog.at_level(logging.WARNING):
        ACTPolicy.from_pretrained(directory)  # LeRobot's default, strict=False
    assert "model.unused" in caplog.text
    del state["model.action_head.weight"]
    save_file(state, directory / "model.safetensors")
    with pytest.raises(CheckpointError, match="1 missing key"):
        ACTPolicy.from_pretrained(directory)


@pytest.mark.parametrize("name", ["act", "diffusion"])
def test_save_pretrained_writes_what_from_pretrained_and_lerobot_read(checkpoints, tmp_path, name):
    """Same tensors and actions after a round trip; config.json holds only settings LeRobot
    0.6.1's config of the type has (its field list: scripts/make_lerobot_signatures.py)."""
    policy = get_policy_class(name).from_pretrained(checkpoints[name])
    policy.save_pretrained(tmp_path / "saved")
    saved = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert saved["type"] == name
    assert set(saved) - {"type"} <= set(LEROBOT_FIELDS[name])
    again = get_policy_class(name).from_pretrained(tmp_path / "saved")
    assert load_file(tmp_path / "saved" / "model.safetensors").keys() == policy.state_dict().keys()
    loaded = load(checkpoints[name])
    recorded = expected(name)
    for each in (policy, again):
        each.reset(env_ids=[0, 1], seeds=[3, 4])
    for step in range(4):
        batch = loaded.preprocessor(raw_step(recorded, step))
        torch.testing.assert_close(
            again.select_action(dict(batch)), policy.select_action(dict(batch)), rtol=0, atol=0
        )


def test_our_own_policies_save_and_load_too(tmp_path):
    env_cfg = AlohaEnvConfig(task="AlohaTransferCube-v0", episode_length=120)
    scripted = AlohaScriptedPolicy.for_env(AlohaScriptedConfig(device="cpu"), env_cfg)
    scripted.save_pretrained(tmp_path / "scripted")
    assert AlohaScriptedPolicy.from_pretrained(tmp_path / "scripted").n_steps == 120

    random = RandomPolicy.for_env(RandomConfig(device="cpu"), MetaworldEnvConfig(obs_type="state"))
    random.save_pretrained(tmp_path / "random")
    loaded = RandomPolicy.from_pretrained(tmp_path / "random")
    batch = {"observation.state": torch.zeros(2, 4)}
    for policy in (random, loaded):
        policy.reset(env_ids=[0, 1], seeds=[5, 6])
    np.testing.assert_array_equal(loaded.select_action(batch).numpy(), random.select_action(batch).numpy())
    assert loaded.predict_action_chunk(batch).shape == (2, 1, 4)

    MetaworldExpertPolicy(MetaworldExpertConfig()).save_pretrained(tmp_path / "expert")
    assert (
        type(get_policy_class("metaworld_expert").from_pretrained(tmp_path / "expert"))
        is MetaworldExpertPolicy
    )


def test_save_pretrained_never_uploads(tmp_path):
    policy = MetaworldExpertPolicy(MetaworldExpertConfig())
    with pytest.raises(ConfigError, match="never uploads; save, then upload the folder yourself"):
        policy.save_pretrained(tmp_path, push_to_hub=True, repo_id="me/expert")


def test_get_optim_params_gives_lerobots_groups(checkpoints):
    act = ACTPolicy.from_pretrained(checkpoints["act"])
    rest, backbone = act.get_optim_params()
    assert backbone["lr"] == act.config.optimizer_lr_backbone
    assert len(rest["params"]) + len(backbone["params"]) == len(list(act.parameters()))
    assert all(
        n.startswith("model.backbone") == any(p is q for q in backbone["params"])
        for n, p in act.named_parameters()
    )
    diffusion = DiffusionPolicy.from_pretrained(checkpoints["diffusion"])
    assert len(list(diffusion.get_optim_params())) == len(list(diffusion.parameters()))
