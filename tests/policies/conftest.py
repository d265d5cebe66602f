"""Checkpoint directories rebuilt once per session from tests/fixtures/policies/."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.policies.checkpoints import NAMES, materialize


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("checkpoints")
    return {name: materialize(name, root / name) for name in NAMES}


@pytest.fixture(autouse=True)
def one_torch_thread():
    """The fixture models are tiny: on a 2-core machine, torch's thread pool makes each of their
    small convolutions ~50x slower than one thread does (65 s instead of 7 s for these tests)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
