"""Checkpoint directories rebuilt once per session from tests/fixtures/policies/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.policies.checkpoints import NAMES, materialize


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("checkpoints")
    return {name: materialize(name, root / name) for name in NAMES}


@pytest.fixture(autouse=True)
def _single_torch_thread(one_torch_thread):
    """Every test here runs tiny models: see `one_torch_thread` in tests/conftest.py."""
