"""Where LeRobot 0.6.1's scratch environment is, for the tests that run LeRobot itself.

`make lerobot-ref` builds it in .venv-lerobot-ref (CI's .ci/run does); LEROBOT_0_6_1_PYTHON
names another one. It is never a dependency of this project: without it those tests are
skipped with `NO_LEROBOT_REASON`, and the others still run.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILT_BY_MAKE = REPO / ".venv-lerobot-ref" / "bin" / "python"
NO_LEROBOT_REASON = (
    "needs LeRobot 0.6.1's scratch environment: run `make lerobot-ref` (.ci/run does), or set "
    "LEROBOT_0_6_1_PYTHON to the Python of one"
)


def lerobot_ref_python() -> str | None:
    """The Python of LeRobot 0.6.1's scratch environment, or None when there is none."""
    named = os.environ.get("LEROBOT_0_6_1_PYTHON")
    if named:
        return named if Path(named).is_file() else None
    return str(BUILT_BY_MAKE) if BUILT_BY_MAKE.is_file() else None
