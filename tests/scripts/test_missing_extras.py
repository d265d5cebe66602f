"""Every command, run without an optional extra its flags need, names the extra to install in one
line (exit 2), with no traceback and before torch loads: in a venv of the base install alone
(`pip install lerobot`, no extras), built offline from uv's cache.

Which benchmark and policy types need which extra is read from their configs (`extra`), so a
new one is covered here without a line in this file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import lerobot.envs  # noqa: F401  (registers --env.type values)
import lerobot.policies  # noqa: F401  (registers --policy.type values)
from lerobot.configs.env import EnvConfig
from lerobot.configs.policies import PreTrainedConfig
from tests.plugin_packages import GYM_TOY, LEROBOT_ENV_TOY, write_package

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# Writes which heavy modules the command had imported when it exited.
RECORD_IMPORTS = """
import atexit, os, sys

def _write_heavy_modules():
    with open(os.environ["HEAVY_MODULES_OUT"], "w") as out:
        out.write(",".join(m for m in ("torch", "gymnasium") if m in sys.modules))

atexit.register(_write_heavy_modules)
"""


def typed_with_extras(registry) -> dict[str, str]:
    """{type name: its extra} of the registered config classes that need one."""
    return {name: cls.extra for name, cls in registry.get_known_choices().items() if cls.extra}


def command_lines() -> list:
    """(command line, the extra it needs, how its error line starts), as pytest params."""
    dataset = ["--dataset.root=/nonexistent/dataset"]
    cases = [
        (["lerobot-serve-policy", "--policy.type=random"], "remote", "lerobot-serve-policy:"),
        (["lerobot-eval", "--policy.type=random", "--eval.backend=ray"], "ray", "--eval.backend=ray:"),
        (
            ["lerobot-eval", "--policy.type=random", "--eval.recording=true"],
            "train",
            "--eval.recording=true:",
        ),
        (["lerobot-train", "--policy.type=act", *dataset], "train", "--dataset.root="),
        (
            ["lerobot-train", "--policy.type=act", *dataset, "--wandb.enable=true", "--wandb.mode=offline"],
            "train",
            "--wandb.enable=true:",
        ),
        # An env type that needs no extra (a plugin's), so that writing the dataset is what is missing.
        (
            ["lerobot-record-sim", "--env.type=toy", "--policy.type=random", "--root=/nonexistent/ds"],
            "train",
            "--root=",
        ),
    ]
    for name, extra in typed_with_extras(EnvConfig).items():
        flag = f"--env.type={name}"
        cases.append((["lerobot-eval", flag, "--policy.type=random"], extra, f"{flag}:"))
        cases.append(
            (
                ["lerobot-record-sim", flag, "--policy.type=random", "--root=/nonexistent/ds"],
                extra,
                f"{flag}:",
            )
        )
    for name, extra in typed_with_extras(PreTrainedConfig).items():
        flag = f"--policy.type={name}"
        cases.append((["lerobot-eval", flag], extra, f"{flag}:"))
        if not PreTrainedConfig.get_choice_class(name).connects_to_server:
            cases.append((["lerobot-serve-policy", flag], extra, f"{flag}:"))
        cases.append((["lerobot-train", flag, *dataset], extra, f"{flag}:"))
    return [pytest.param(argv, extra, starts, id=" ".join(argv)) for argv, extra, starts in cases]


@pytest.fixture(scope="module")
def base_install(tmp_path_factory) -> Path:
    """The bin folder of a venv holding this package without extras (the lock's versions)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("needs uv (the Makefile's installer) to build a venv of the base install")
    root = tmp_path_factory.mktemp("base_install")
    source = root / "source"  # a copy: building the wheel writes build/ and *.egg-info beside it
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(root / "venv")], check=True)
    install = [uv, "pip", "install", "-q", "--offline", "-p", str(root / "venv/bin/python")]
    done = subprocess.run(
        [*install, "-c", str(REPO / "requirements/lock.txt"), str(source)], capture_output=True, text=True
    )
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no output"])[0]
        pytest.skip(f"the base install cannot be built offline from uv's cache here: {reason}")
    return root / "venv/bin"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """PYTHONPATH of the commands: the import recorder and an env plugin that needs no extra."""
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(RECORD_IMPORTS)
    write_package(site, "gym_toy", GYM_TOY, distribution=False)
    write_package(site, "lerobot_env_toy", LEROBOT_ENV_TOY)
    return site


def test_the_base_install_has_none_of_the_extras(base_install):
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(typed_with_extras(EnvConfig).values()) | set(
        typed_with_extras(PreTrainedConfig).values()
    ) <= set(extras)
    probe = "import importlib.util as u; print([m for m in ('torch', 'msgpack', 'pyarrow', 'ray', 'mujoco') if u.find_spec(m)])"
    found = subprocess.run([base_install / "python", "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "['torch']"


@pytest.mark.parametrize(
    ("argv", "extra", "starts"), command_lines(), ids=lambda v: " ".join(v) if isinstance(v, list) else None
)
def test_a_missing_extra_is_one_line_naming_it(base_install, site, tmp_path, argv, extra, starts):
    heavy = tmp_path / "heavy_modules"
    env = {**os.environ, "PYTHONPATH": str(site), "HEAVY_MODULES_OUT": str(heavy), "MUJOCO_GL": "egl"}
    done = subprocess.run(
        [str(base_install / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, len(lines)) == (2, 1), done.stderr
    assert lines[0].startswith(starts) and lines[0].endswith(f"pip install 'lerobot[{extra}]'"), lines[0]
    assert heavy.read_text() == ""  # answered before torch (or gymnasium) loaded


@pytest.mark.parametrize("command", ["lerobot-eval-report", "lerobot-eval-merge"])
def test_the_commands_that_need_no_extra_start_in_the_base_install(base_install, command):
    done = subprocess.run(
        [str(base_install / command), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and f"usage: {command}" in done.stdout, done.stderr
