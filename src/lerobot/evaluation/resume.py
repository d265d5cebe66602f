"""Refuse to mix results from different settings in one output directory.

The resolved config is saved as run_config.json when a run starts. A resumed run must use the
settings that decide per-episode results (env, policy, seed, episodes per task, key renames);
batch size, workers, backend (local or Ray), timeouts and videos may change, since results do
not depend on them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import draccus

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.evaluation.journal import JOURNAL_FILENAME
from lerobot.utils.errors import ConfigError
from lerobot.utils.io import write_json_atomic

RUN_CONFIG_FILENAME = "run_config.json"
# Dotted keys whose change cannot alter an episode's outcome.
NEUTRAL_KEYS = (
    "eval.batch_size",
    "eval.use_async_envs",
    "eval.max_episodes_rendered",
    "eval.continuous_batching",
    "eval.resume",
    "eval.step_timeout_s",
    "eval.max_episode_retries",
    "eval.backend",
    "eval.ray_address",
    "eval.num_workers",
    "eval.gpus_per_worker",
    "eval.envs_per_worker",
    "output_dir",
    "job_name",
    "policy.device",
    "log_level",
)


def encode_config(cfg: EvalPipelineConfig) -> dict[str, Any]:
    return json.loads(json.dumps(draccus.encode(cfg), default=str))


def prepare_output_dir(cfg: EvalPipelineConfig) -> None:
    """Check the output directory against `--eval.resume`, then record this run's config.

    Raises ConfigError (one line) before anything starts when results would be overwritten or
    a resume would mix settings.
    """
    out = Path(cfg.output_dir)
    has_results = (out / JOURNAL_FILENAME).exists() or (out / RUN_CONFIG_FILENAME).exists()
    if has_results and not cfg.eval.resume:
        raise ConfigError(
            f"--output_dir={out}: holds results of an earlier run; pass --eval.resume=true to "
            "continue it, or choose another --output_dir"
        )
    current = encode_config(cfg)
    if has_results:
        saved = json.loads((out / RUN_CONFIG_FILENAME).read_text())
        differences = config_differences(saved, current)
        if differences:
            raise ConfigError(
                f"--eval.resume=true: {out} was run with different settings ({'; '.join(differences)}); "
                "use the same settings or another --output_dir"
            )
    write_json_atomic(current, out / RUN_CONFIG_FILENAME)


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """'--flag: was X, now Y' for each result-relevant setting that changed."""
    old, new = _flatten(saved), _flatten(current)
    keys = sorted((set(old) | set(new)) - set(NEUTRAL_KEYS))
    return [f"--{k}: was {old.get(k)!r}, now {new.get(k)!r}" for k in keys if old.get(k) != new.get(k)]


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and key != "rename_map":
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat
