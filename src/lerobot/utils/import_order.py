"""Simulator bindings imported before torch, in a process that steps simulators itself.

MuJoCo's Python bindings and torch are both pybind11 extensions, and the one imported first
sets up the binding runtime they then share. With torch first, every read of a MuJoCo struct
from Python is slower: iterating `MjData.contact` took 162 us instead of 107 us (40 contacts),
and a whole Meta-World push-v3 step (which reads the contact list twice) 0.72 ms instead of
0.58 ms: an in-process evaluation ran about 20% below what the simulator can do. Importing
MuJoCo first (300 ms) costs torch nothing measurable. A process that runs envs beside a policy
needs this: `lerobot-eval` at batch size 1 or with an env in the main process (small batches),
lerobot-train's in-loop evaluation, lerobot-record-sim. Env workers never import torch, but
other modules loaded first slow MuJoCo down too (SciPy's pybind11 modules by 15%; numpy and
gymnasium, in Meta-World's own order, by 4%): their fork server imports the bindings first
(`EnvConfig.fork_server_preload`).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from collections.abc import Sequence

logger = logging.getLogger(__name__)


def import_before_torch(modules: Sequence[str]) -> list[str]:
    """Import the installed ones of `modules` now, unless torch is already loaded (too late
    then); the names imported."""
    if "torch" in sys.modules:
        logger.debug("torch is already imported: %s would not gain from importing first", ", ".join(modules))
        return []
    # PyOpenGL, which MuJoCo renders through with EGL, logs at INFO that its optional C
    # accelerator is absent: nothing anyone can act on.
    logging.getLogger("OpenGL.acceleratesupport").setLevel(logging.WARNING)
    imported = []
    for name in modules:
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
            imported.append(name)
    return imported
