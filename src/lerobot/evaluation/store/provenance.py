"""Where a result came from: settings, software, machine and time, stored with the numbers.

Papers report a success rate; months later nobody can say which simulator version, seed or
episode length produced it, and the number does not reproduce. eval_info.json therefore carries
a `provenance` block. Nothing here imports a simulator: versions come from package metadata, so
recording them costs nothing and cannot fail because a simulator is broken.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import socket
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import lerobot.envs  # noqa: F401  (registers every benchmark's config, with its simulator's distributions)
from lerobot.configs.env import EnvConfig

CORE_PACKAGES = ("lerobot", "torch", "numpy", "gymnasium")
"""Distributions whose version changes any benchmark's results: ours and the numeric stack."""
GIT_TIMEOUT_S = 5.0
# Left out of the reproduce command: a rerun needs a fresh output directory of its own.
NOT_REPRODUCED = ("output_dir", "eval.resume")


def collect_provenance(
    config: dict[str, Any],
    started_at: dt.datetime,
    ended_at: dt.datetime,
    episode_wall_s: Sequence[float],
    n_episodes_resumed: int = 0,
    program: str = "lerobot-eval",
) -> dict[str, Any]:
    """The `provenance` block of eval_info.json for one invocation of `program`.

    `config` is the fully resolved config of `program` (`lerobot-train` for an evaluation inside
    training); the times are those of this invocation (a resumed run counts from its restart,
    and says how many episodes came from the earlier run).
    """
    return {
        "config": config,
        "versions": package_versions(),
        "python": platform.python_version(),
        "git": git_revision(Path.cwd()),
        "host": host_info(),
        "started_at": iso_utc(started_at),
        "ended_at": iso_utc(ended_at),
        "wall_s": (ended_at - started_at).total_seconds(),
        "episode_wall_s_mean": sum(episode_wall_s) / len(episode_wall_s) if episode_wall_s else None,
        "episode_wall_s_total": sum(episode_wall_s),
        "n_episodes_resumed": n_episodes_resumed,
        "command": reproduce_command(config, program),
    }


def reproduce_command(config: dict[str, Any], program: str = "lerobot-eval") -> str:
    """A `program` command line that sets every resolved setting explicitly.

    Defaults change between versions; spelling out every value makes the command mean the
    same thing later. Lists and dicts are written as JSON, which the parser reads back.
    """
    flags = [
        f"--{name}={_flag_value(value)}" for name, value in _flatten(config) if name not in NOT_REPRODUCED
    ]
    return shlex.join([program, *flags])


def versioned_packages() -> tuple[str, ...]:
    """The core distributions, then the simulator distributions every registered benchmark
    declares (`EnvConfig.simulator_distributions`), each once."""
    declared = (
        name for config in EnvConfig.get_known_choices().values() for name in config.simulator_distributions
    )
    return tuple(dict.fromkeys((*CORE_PACKAGES, *declared)))


def package_versions(names: Sequence[str] | None = None) -> dict[str, str]:
    """{distribution: version} for the installed ones among `names` (default:
    `versioned_packages()`); uninstalled simulators are left out."""
    versions = {}
    for name in versioned_packages() if names is None else names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_revision(directory: Path) -> dict[str, Any] | None:
    """Commit and dirtiness of the git checkout holding `directory`; None without git or checkout."""
    commit = _git(directory, "rev-parse", "HEAD")
    if commit is None:
        return None
    changes = _git(directory, "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(changes) if changes is not None else None}


def host_info() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "gpu": gpu_name(),
    }


def cpu_model() -> str | None:
    """The CPU's marketing name (Linux /proc/cpuinfo; elsewhere what `platform` knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def gpu_name() -> str | None:
    """Name of CUDA device 0. Call after the env workers exist: they must fork before CUDA starts."""
    import torch  # only here: provenance is also read where torch is not wanted

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(0)


def iso_utc(moment: dt.datetime) -> str:
    """'2025-01-31T14:02:03Z': ISO 8601 in UTC, to the second."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _flatten(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested config dicts -> [(dotted flag name, value)]; `rename_map` is a value, not a level."""
    flat = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key != "rename_map":
            flat.extend(_flatten(value, f"{name}."))
        else:
            flat.append((name, value))
    return flat


def _flag_value(value: Any) -> str:
    if value is None or isinstance(value, bool | list | dict):
        return json.dumps(value)
    return str(value)


def _git(directory: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):  # no git installed, or a hung network mount
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None
