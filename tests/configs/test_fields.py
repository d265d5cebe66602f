"""Facts on config fields: what a resume may change, what only the Ray backend reads."""

import dataclasses

import pytest

from lerobot.configs.eval import EvalConfig, EvalPipelineConfig
from lerobot.configs.fields import backend_only_fields, facts, result_neutral_keys
from lerobot.utils.errors import ConfigError


def test_the_result_neutral_settings_are_read_off_the_fields_nested_configs_included():
    neutral = result_neutral_keys(EvalPipelineConfig)
    assert {
        "eval.batch_size",
        "eval.backend",
        "env.max_parallel_tasks",
        "policy.device",
        "output_dir",
    } <= neutral
    assert not {"seed", "eval.n_episodes", "eval.shard", "env.task", "policy.use_amp", "rename_map"} & neutral


def test_ray_only_settings_are_refused_on_the_local_backend_by_their_field_facts():
    ray_only = backend_only_fields(EvalConfig, "ray")
    assert ray_only == ["ray_address", "num_workers", "gpus_per_worker"]
    for name in ray_only:
        default = next(f.default for f in dataclasses.fields(EvalConfig) if f.name == name)
        with pytest.raises(ConfigError, match=rf"^--eval.{name}=.*only used by the Ray backend"):
            EvalConfig(**{name: default + 1 if isinstance(default, int | float) else "auto"})


def test_facts_are_plain_metadata():
    assert facts() == {}
    assert facts(result_neutral=True, only_backend="ray") == {"result_neutral": True, "only_backend": "ray"}
