"""Every command prints its help, exits 0 and lists every flag with its default and meaning.

The commands run as installed (their console scripts, as pyproject.toml registers them), so
what is tested is what a user types.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.eval import EvalPipelineConfig
from lerobot.configs.help import sections
from lerobot.configs.record import RecordSimConfig
from lerobot.configs.serve import ServeConfig
from lerobot.configs.train import TrainPipelineConfig

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROGRAMS = sorted(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"])
CONFIG_OF = {
    "lerobot-eval": EvalPipelineConfig,
    "lerobot-train": TrainPipelineConfig,
    "lerobot-record-sim": RecordSimConfig,
    "lerobot-serve-policy": ServeConfig,
}
FLAG_LINE = re.compile(r"^  (--[\w.]+)=(\S+)  \(default: (.*)\)$")


def run(program: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / program), *args], capture_output=True, text=True, timeout=120, check=False
    )


def documented_flags(help_text: str) -> dict[str, tuple[str, str]]:
    """{--flag: (default, meaning)} from our help's `  --flag=kind  (default: x)` lines."""
    lines = help_text.splitlines()
    flags = {}
    for line, following in zip(lines, lines[1:], strict=False):
        match = FLAG_LINE.match(line)
        if match:
            flags[match.group(1)] = (match.group(3), following.strip())
    return flags


def test_every_registered_command_is_covered():
    assert set(PROGRAMS) == {
        *CONFIG_OF,
        "lerobot-eval-merge",
        "lerobot-eval-report",
        "lerobot-convert-robomimic",
    }


@pytest.mark.parametrize("program", sorted(CONFIG_OF))
def test_config_commands_list_every_flag_of_every_type(program):
    result = run(program, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {program}") and "Traceback" not in result.stderr
    flags = documented_flags(result.stdout)
    expected = {flag.name for section in sections(CONFIG_OF[program], "", {}) for flag in section.flags}
    assert expected <= set(flags), f"missing from --help: {sorted(expected - set(flags))}"
    undocumented = [
        name
        for name, (_, meaning) in flags.items()
        if meaning in ("", "(no description)") or meaning.startswith("--")
    ]
    assert undocumented == []
    # every policy and env type's own flags are there, each under its type
    for choice in (
        "--env.type=metaworld",
        "--env.type=libero",
        "--policy.type=act",
        "--policy.type=diffusion",
    ):
        assert choice in result.stdout


def test_eval_help_shows_defaults_and_the_chosen_types_flags_only():
    result = run("lerobot-eval", "--env.type=metaworld", "--policy.type=act", "--help")
    assert result.returncode == 0
    flags = documented_flags(result.stdout)
    assert flags["--eval.n_episodes"][0] == "50"
    assert flags["--env.task"][0] == "push-v3"
    assert flags["--env.max_parallel_tasks"][0] == "1"
    assert flags["--eval.recording"][0] == "false"
    assert flags["--policy.chunk_size"][0] == "100"
    assert "Episodes per task." in flags["--eval.n_episodes"][1]
    assert "--env.type=libero" not in result.stdout and "--policy.horizon" not in flags


@pytest.mark.parametrize("program, folder", [("lerobot-eval", "eval"), ("lerobot-train", "train")])
def test_the_output_dir_default_is_the_commands_own(program, folder):
    flags = documented_flags(run(program, "--help").stdout)
    assert flags["--output_dir"][0] == f"outputs/{folder}/<date>/<time>_<job_name>"


def test_every_field_of_the_eval_config_is_a_listed_flag():
    """The help is written from the dataclasses: a new field cannot be missing from it."""
    flags = documented_flags(run("lerobot-eval", "--help").stdout)
    from lerobot.configs.eval import EvalConfig

    for field in dataclasses.fields(EvalConfig):
        assert f"--eval.{field.name}" in flags


@pytest.mark.parametrize("program", ["lerobot-eval-merge", "lerobot-eval-report"])
def test_result_commands_print_help(program):
    result = run(program, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {program}")
    options = re.findall(r"^  (--\w+)", result.stdout, flags=re.M)
    assert "--output_dir" in options
    for option in options:  # each option line is followed by its meaning, or carries it inline
        block = result.stdout.split(option, 2)[-1].split("\n  -", 1)[0]
        assert len(block.split()) > 1, f"{program} {option} has no description"
