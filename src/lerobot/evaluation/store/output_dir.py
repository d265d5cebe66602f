"""Refuse to mix results from different settings in one output directory.

The resolved config is saved as run_config.json when a run starts. A resumed run must use the
settings that decide per-episode results (env, policy, seed, episodes per task, key renames);
batch size, workers, backend (local or Ray), timeouts and videos may change, since results do
not depend on them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import draccus

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.evaluation.results import EVAL_INFO_FILENAME
from lerobot.evaluation.store.journal import JOURNAL_FILENAME
from lerobot.utils.dir_lock import locked_dir
from lerobot.utils.errors import ConfigError
from lerobot.utils.io import write_json_atomic

RUN_CONFIG_FILENAME = "run_config.json"
RESULT_FILES = (EVAL_INFO_FILENAME, JOURNAL_FILENAME, RUN_CONFIG_FILENAME)
"""Files that hold results: a directory with any of them is never written over silently."""
VIEW_FILES = ("report.html", "summary.md", JOURNAL_FILENAME + ".corrupt")
VIDEOS_DIR = "videos"
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
    "overwrite",
    "job_name",
    "policy.device",
    "log_level",
)


def encode_config(cfg: EvalPipelineConfig) -> dict[str, Any]:
    return json.loads(json.dumps(draccus.encode(cfg), default=str))


@contextlib.contextmanager
def claimed_output_dir(cfg: EvalPipelineConfig) -> Iterator[None]:
    """The output directory, locked for this run and checked against `--eval.resume` and
    `--overwrite`, with this run's config recorded. Raises ConfigError (one line) before
    anything starts when results would be overwritten or a resume would mix settings."""
    out = Path(cfg.output_dir)
    make_output_dir(out, "--output_dir")
    with locked_dir(out, "--output_dir"):
        prepare_output_dir(cfg)
        yield


def make_output_dir(out: Path, flag: str) -> None:
    """Create the directory, or say in one line why it cannot be used."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{flag}={out}: is a file; give a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{flag}={out}: cannot create it ({exc.strerror or exc})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}={out}: not writable (read-only file system or permissions)")


def held_results(out: Path) -> list[str]:
    """The result files of an earlier run (ours or LeRobot's) in `out`."""
    return [name for name in RESULT_FILES if (out / name).exists()]


def refuse_or_clear_results(out: Path, overwrite: bool, resume: bool | None) -> None:
    """An output dir holding results is refused unless `--overwrite=true` (which clears them) or
    `--eval.resume=true` (None: a command that cannot resume, like lerobot-eval-merge)."""
    held = held_results(out)
    if not held or resume:
        return
    if overwrite:
        clear_results(out)
        return
    resume_hint = "pass --eval.resume=true to continue it, " if resume is not None else "pass "
    raise ConfigError(
        f"--output_dir={out}: holds results of an earlier run; {resume_hint}--overwrite=true to replace "
        f"them ({', '.join(held)}), or choose another directory"
    )


def clear_results(out: Path) -> None:
    """Remove what a run writes (results, views, videos), nothing else."""
    for name in (*RESULT_FILES, *VIEW_FILES):
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / VIDEOS_DIR, ignore_errors=True)


def check_output_dir(cfg: EvalPipelineConfig) -> None:
    """Every output-dir check that writes nothing: the command line calls it before torch or a
    simulator loads, so a wrong --output_dir is answered at once (the run repeats it, locked)."""
    out = Path(cfg.output_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--output_dir={out}: is a file; give a directory")
    if cfg.eval.resume and cfg.overwrite:
        raise ConfigError(
            "--eval.resume=true and --overwrite=true: choose one (continue the run, or replace it)"
        )
    if not out.is_dir() or not held_results(out) or cfg.overwrite:
        return
    refuse_or_clear_results(out, overwrite=False, resume=cfg.eval.resume)
    differences = config_differences(read_run_config(out, "--eval.resume=true: "), encode_config(cfg))
    if differences:
        raise ConfigError(
            f"--eval.resume=true: {out} was run with different settings ({'; '.join(differences)}); "
            "use the same settings or another --output_dir"
        )


def prepare_output_dir(cfg: EvalPipelineConfig) -> None:
    check_output_dir(cfg)
    out = Path(cfg.output_dir)
    refuse_or_clear_results(out, cfg.overwrite, resume=cfg.eval.resume)
    write_json_atomic(encode_config(cfg), out / RUN_CONFIG_FILENAME)


def read_run_config(run_dir: Path, prefix: str = "") -> dict[str, Any]:
    """run_config.json of a lerobot-eval output directory, or a one-line ConfigError."""
    path = Path(run_dir) / RUN_CONFIG_FILENAME
    if not path.is_file():
        raise ConfigError(
            f"{prefix}{run_dir} has no {RUN_CONFIG_FILENAME}, so it was not written by lerobot-eval "
            "(or is damaged); choose another directory"
        )
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{prefix}{path} is not valid JSON ({exc})") from None
    if not isinstance(config, dict) or not isinstance(config.get("env"), dict) or "eval" not in config:
        raise ConfigError(f"{prefix}{path} is not a lerobot-eval run config")
    return config


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
