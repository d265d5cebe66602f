"""The benchmark Dockerfiles follow the conventions their real builds taught us, and agree with
the CI workflow's matrix. Reads files only (no Docker needed; part of the normal suite).

Each convention is a fix a real build or run needed (docs/source/docker.mdx): a `# syntax=` line
pulls a frontend image from Docker Hub; a hard-coded base cannot be swapped for the local
Debian one of docker/build_local.sh; GLib's package name differs between Ubuntu 24.04 and
bookworm; PyOpenGL looks for libOpenGL.so.0 first; a user created before the dependency layer
makes every other UID rebuild several GB.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted((REPO / "docker").glob("Dockerfile.benchmark.*"))
WORKFLOW = REPO / ".github" / "workflows" / "benchmark_tests.yml"
BUILD_LOCAL = REPO / "docker" / "build_local.sh"


def matrix() -> dict[str, dict]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    return {entry["benchmark"]: entry for entry in workflow["jobs"]["smoke"]["strategy"]["matrix"]["include"]}


def instructions(path: Path) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments left out."""
    joined, current = [], ""
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        current += " " + line.strip().removesuffix("\\")
        if not line.rstrip().endswith("\\"):
            joined.append(current.strip())
            current = ""
    return joined


def index_of(lines: list[str], pattern: str) -> int:
    found = [i for i, line in enumerate(lines) if re.search(pattern, line)]
    assert found, f"no instruction matches {pattern!r}"
    return found[0]


def benchmark_of(path: Path) -> str:
    return path.name.removeprefix("Dockerfile.benchmark.")


def test_every_matrix_entry_has_a_dockerfile():
    assert sorted(matrix()) == sorted(benchmark_of(p) for p in DOCKERFILES)


@pytest.mark.parametrize("path", DOCKERFILES, ids=benchmark_of)
def test_builds_from_any_base_without_a_registry_frontend(path):
    assert not re.search(r"(?m)^#\s*syntax\s*=", path.read_text()), "a `# syntax=` line pulls from Docker Hub"
    lines = instructions(path)
    assert lines[index_of(lines, r"^FROM ")] == "FROM ${BASE_IMAGE}"
    assert index_of(lines, r"^ARG BASE_IMAGE=") < index_of(lines, r"^FROM ")


@pytest.mark.parametrize("path", DOCKERFILES, ids=benchmark_of)
def test_system_packages_fit_ubuntu_and_debian(path):
    apt = instructions(path)[index_of(instructions(path), r"apt-get install")]
    assert "t64" not in apt, "name GLib through ARG GLIB_PACKAGE (libglib2.0-0 on bookworm)"
    if "GLIB_PACKAGE" in apt:
        assert "ARG GLIB_PACKAGE=libglib2.0-0t64" in instructions(path)
    if "libegl1" in apt:
        assert "libopengl0" in apt, (
            "PyOpenGL (MuJoCo's and dm_control's EGL binding) loads libOpenGL.so.0 first"
        )


@pytest.mark.parametrize("path", DOCKERFILES, ids=benchmark_of)
def test_runs_as_a_numeric_user_created_after_the_dependency_layer(path):
    lines = instructions(path)
    dependencies = index_of(lines, r"uv pip install -c requirements/lock\.txt")
    assert (
        dependencies
        < index_of(lines, r"^ARG USER_UID=")
        < index_of(lines, r"useradd .*--uid \"\$\{USER_UID\}\"")
    )
    assert lines[index_of(lines, r"^USER ")] == "USER ${USER_UID}"


@pytest.mark.parametrize("path", DOCKERFILES, ids=benchmark_of)
def test_installs_its_extras_and_runs_the_matrix_smoke_eval(path):
    """The matrix's `task` and `policy` label the default command's results; entries with a
    SmolVLA checkpoint evaluate it in this image, which needs the smolvla extra."""
    entry = matrix()[benchmark_of(path)]
    lines = instructions(path)
    extras = re.search(
        r'"\.\[([\w,-]+)\$\{ray_extra\}\]"',
        lines[index_of(lines, r"uv pip install -c requirements/lock\.txt")],
    )
    expected = {entry["benchmark"], "train"} | ({"smolvla"} if entry.get("smolvla_checkpoint") else set())
    assert set(extras.group(1).split(",")) == expected
    cmd = json.loads(lines[index_of(lines, r"^CMD ")].removeprefix("CMD "))
    assert cmd[0] == "lerobot-eval"
    assert f"--env.type={entry['benchmark']}" in cmd
    assert f"--policy.type={entry['policy']}" in cmd
    assert any(arg == f"--env.task={entry['task']}" for arg in cmd)


@pytest.mark.parametrize("path", DOCKERFILES, ids=benchmark_of)
def test_with_ray_adds_the_ray_extra_and_wget(path):
    """`--build-arg WITH_RAY=1` gives an image that can be a Ray node (KubeRay's pods included):
    the `ray` extra in the dependency layer and wget for KubeRay's probes; 0, the default, adds
    nothing, and any other value stops the build."""
    lines = instructions(path)
    declared = index_of(lines, r"^ARG WITH_RAY=")
    assert lines[declared] == "ARG WITH_RAY=0"
    dependencies = index_of(lines, r"uv pip install -c requirements/lock\.txt")
    assert declared < dependencies < index_of(lines, r"^USER ")
    assert 'if [ "$WITH_RAY" = 1 ]; then ray_extra=",ray"; else ray_extra=""; fi' in lines[dependencies]
    system = " ".join(lines[index_of(lines, r"^RUN case \"\$WITH_RAY\" in 0\|1\)")].split())
    assert 'if [ "$WITH_RAY" = 1 ]; then apt-get update' in system
    assert "apt-get install -y --no-install-recommends wget" in system
    assert declared < index_of(lines, r"^RUN case ") < dependencies


def test_build_local_reads_every_matrix_key_the_workflow_uses():
    """docker/build_local.sh runs the workflow's steps from its matrix: a key that a step uses
    and the script does not read is a step the local run silently leaves out."""
    used = set(re.findall(r"\bmatrix\.(\w+)", WORKFLOW.read_text()))
    script = BUILD_LOCAL.read_text()
    assert {"benchmark", "help_commands"} <= used
    assert sorted(key for key in used if f'"{key}"' not in script) == []


def test_help_commands_are_registered_commands():
    """An entry's help_commands run in its image: each must be a console script of the project."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    for benchmark, entry in matrix().items():
        for command in str(entry.get("help_commands", "")).split():
            assert command in scripts, f"{benchmark}: help_commands names {command}, not a console script"
