"""π0 / π0.5 fixtures as lerobot-eval and lerobot-train meet them.

tests/fixtures/policies/pi0*/ hold what LeRobot 0.6.1 saved and computed
(scripts/make_pi_fixtures.py) with openpi's dummy Gemma, and name the tiny tokenizer
(`pi_tokenizer/`) by its repository-relative path; `materialize` writes a copy whose
tokenizer step names its absolute path.
"""

from __future__ import annotations

from pathlib import Path

from tests.policies import smolvla_checkpoints
from tests.policies.smolvla_checkpoints import FIXTURES, expected, raw_step  # noqa: F401

TOKENIZER_DIR = FIXTURES / "pi_tokenizer"
TOKENIZER_PLACEHOLDER = "tests/fixtures/policies/pi_tokenizer"
NAMES = ("pi0", "pi05")


def materialize(name: str, destination: Path) -> Path:
    """Fixture `name` as a checkpoint directory whose tokenizer path is absolute."""
    return smolvla_checkpoints.materialize(name, destination, {TOKENIZER_PLACEHOLDER: TOKENIZER_DIR})
