"""robosuite imported the way every robosuite benchmark here needs it (LIBERO, robomimic)."""

from __future__ import annotations

import logging
from typing import Any

from lerobot.utils.gl import default_mujoco_gl


def _drop_robosuite_macro_hint(record: logging.LogRecord) -> bool:
    """robosuite warns at every import that it has no private macro file; nothing to act on."""
    return "macro" not in record.getMessage()


def quiet_robosuite() -> None:
    """Headless GL chosen before robosuite imports MuJoCo (in this worker process), and its
    import-time notices that ask nothing of the user dropped."""
    default_mujoco_gl()
    robosuite_logger = logging.getLogger("robosuite_logs")
    if _drop_robosuite_macro_hint not in robosuite_logger.filters:
        robosuite_logger.addFilter(_drop_robosuite_macro_hint)
    # PyOpenGL (robosuite's EGL binding) logs at INFO that its optional C accelerator is absent.
    logging.getLogger("OpenGL.acceleratesupport").setLevel(logging.WARNING)


def import_robosuite() -> Any:
    """`robosuite`, imported with a headless GL backend and without its macro-file notice."""
    quiet_robosuite()
    import robosuite

    return robosuite
