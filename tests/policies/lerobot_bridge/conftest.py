"""Pythons for the bridge: LeRobot 0.6.1's scratch environment, and small fakes for errors.

The real one is found by tests/lerobot_ref.py (`make lerobot-ref` builds it); without it the
tests that need it are skipped with that reason, and the rest still run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.lerobot_ref import NO_LEROBOT_REASON, lerobot_ref_python


@pytest.fixture(scope="session")
def lerobot_python() -> str:
    python = lerobot_ref_python()
    if python is None:
        pytest.skip(NO_LEROBOT_REASON)
    return python


@pytest.fixture(scope="session")
def fake_lerobot(tmp_path_factory):
    """`fake_lerobot(version)`: the Python of a bare venv whose `lerobot` is an empty package
    of that version: enough for the checks that run before the child starts."""
    made: dict[str, str] = {}

    def build(version: str | None) -> str:
        key = version or "none"
        if key not in made:
            root = tmp_path_factory.mktemp(f"venv-{key}")
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
            python = root / "bin" / "python"
            site = subprocess.run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            if version is not None:
                (Path(site) / "lerobot").mkdir()
                (Path(site) / "lerobot" / "__init__.py").write_text("")
                dist = Path(site) / f"lerobot-{version}.dist-info"
                dist.mkdir()
                (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: lerobot\nVersion: {version}\n")
            made[key] = str(python)
        return made[key]

    return build
