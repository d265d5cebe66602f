"""The output directory of a run: claimed, locked, and never a mix of two runs' results.

The resolved config is saved as run_config.json when a run starts. A resumed run must use the
settings that decide per-episode results (env, policy, seed, episodes per task, key renames);
the fields marked result-neutral (batch size, workers, backend, timeouts, videos, tasks at a
time; `lerobot.configs.fields`) may change, since results do not depend on them.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import draccus

from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.fields import changed_settings, redact, result_neutral_keys, secret_paths
from lerobot.evaluation.results import EVAL_INFO_FILENAME
from lerobot.evaluation.store.journal import JOURNAL_FILENAME
from lerobot.utils.dir_lock import LOCK_FILENAME, locked_dir
from lerobot.utils.errors import ConfigError
from lerobot.utils.io import make_output_dir, write_json_atomic

RUN_CONFIG_FILENAME = "run_config.json"
RESULT_FILES = (EVAL_INFO_FILENAME, JOURNAL_FILENAME, RUN_CONFIG_FILENAME)
"""Files that hold results: a directory with any of them is never written over silently."""
VIEW_FILES = ("report.html", "summary.md", JOURNAL_FILENAME + ".corrupt")
VIDEOS_DIR = "videos"
NEUTRAL_KEYS = result_neutral_keys(EvalPipelineConfig)
"""Dotted keys whose change cannot alter an episode's outcome (the fields say so themselves)."""


@dataclass(frozen=True)
class RunOutput:
    """Where a run's results go, and the settings that produced them."""

    directory: Path
    config: Mapping[str, Any]
    """The resolved settings as draccus encodes them: saved as run_config.json (what a resume
    must match) and recorded in eval_info.json's provenance."""
    resume: bool = False
    """Continue the run the directory holds, running only the episodes it lacks."""
    overwrite: bool = False
    """Replace the results the directory holds instead of refusing to start."""
    program: str = "lerobot-eval"
    """The command whose flags `config` holds, named in the provenance's reproduce command."""

    @classmethod
    def of(cls, cfg: EvalPipelineConfig) -> RunOutput:
        """Where `lerobot-eval` with `cfg` writes: --output_dir, --eval.resume, --overwrite."""
        return cls(Path(cfg.output_dir), encode_config(cfg), cfg.eval.resume, cfg.overwrite)


def encode_config(cfg: Any) -> dict[str, Any]:
    """A config dataclass as plain JSON values (what run_config.json and provenance hold), its
    secrets (`--policy.api_key`) redacted: result files and reports are often shared."""
    return redact(json.loads(json.dumps(draccus.encode(cfg), default=str)), secret_paths(cfg))


@contextlib.contextmanager
def claimed_output_dir(output: RunOutput) -> Iterator[None]:
    """The output directory, locked for this run and checked against `resume` and `overwrite`,
    with this run's config recorded. Raises ConfigError (one line) before anything starts when
    results would be overwritten or a resume would mix settings."""
    make_output_dir(output.directory, "--output_dir")
    with locked_dir(output.directory, "--output_dir"):
        prepare_output_dir(output)
        yield


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


def check_output_dir(output: RunOutput) -> None:
    """Every output-dir check that writes nothing: the command line calls it before torch or a
    simulator loads, so a wrong --output_dir is answered at once (the run repeats it, locked)."""
    out = output.directory
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--output_dir={out}: is a file; give a directory")
    refuse_links(out)
    if output.resume and output.overwrite:
        raise ConfigError(
            "--eval.resume=true and --overwrite=true: choose one (continue the run, or replace it)"
        )
    if not out.is_dir() or not held_results(out) or output.overwrite:
        return
    refuse_or_clear_results(out, overwrite=False, resume=output.resume)
    differences = config_differences(read_run_config(out, "--eval.resume=true: "), dict(output.config))
    if differences:
        raise ConfigError(
            f"--eval.resume=true: {out} was run with different settings ({'; '.join(differences)}); "
            "use the same settings or another --output_dir"
        )


def refuse_links(out: Path) -> None:
    """A name the run writes that is a symbolic link would send results, videos or the lock's
    pid outside the directory (and survive --overwrite): refused, never followed."""
    linked = [
        name for name in (*RESULT_FILES, *VIEW_FILES, VIDEOS_DIR, LOCK_FILENAME) if (out / name).is_symlink()
    ]
    if linked:
        raise ConfigError(
            f"--output_dir={out}: {', '.join(linked)} there {'is a symbolic link' if len(linked) == 1 else 'are symbolic links'}; "
            "remove it or choose another directory (a run never writes through links)"
        )


def prepare_output_dir(output: RunOutput) -> None:
    check_output_dir(output)
    refuse_or_clear_results(output.directory, output.overwrite, resume=output.resume)
    write_json_atomic(dict(output.config), output.directory / RUN_CONFIG_FILENAME)


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
    return [
        f"--{k}: was {was!r}, now {now!r}"
        for k, (was, now) in changed_settings(saved, current).items()
        if k not in NEUTRAL_KEYS
    ]
