"""LeRobot's `set_seed`, for scripts written against `lerobot.utils.random_utils`.

`lerobot-eval` does not need it: every episode seeds its env and its policy row itself
(episode e with seed + e), so results do not depend on global random state.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from lerobot.utils.not_in_this_build import refused_names


def set_seed(seed: int, accelerator: Callable[..., Any] | None = None) -> None:
    """Seed Python's, NumPy's and torch's global generators (all CUDA devices too).

    `accelerator` is LeRobot's hook for Hugging Face Accelerate; with it, Accelerate's own
    `set_seed` runs as well.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    if accelerator:
        from accelerate.utils import set_seed as accelerate_set_seed

        accelerate_set_seed(seed)


__getattr__ = refused_names(__name__)  # LeRobot's names this module lacks, refused on use
