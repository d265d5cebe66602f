"""Whether SAPIEN finds a Vulkan device to render ManiSkill's cameras, asked before anything starts.

Without one, every env worker would fail at its first reset with SAPIEN's "failed to find a
rendering device", a traceback per worker. Asking SAPIEN in a child process (half a second,
once per process) keeps a Vulkan context out of the process that forks the workers.
"""

from __future__ import annotations

import functools
import subprocess
import sys

from lerobot.utils.errors import ConfigError

PROBE = "import sapien; print(sapien.render.get_device_summary())"
DRIVER_HINT = (
    "install a Vulkan driver (without a GPU: Mesa >= 23's mesa-vulkan-drivers and libvulkan1; "
    "scripts/install_vulkan.sh does it on Debian/Ubuntu)"
)


@functools.cache
def vulkan_problem() -> str | None:
    """None when SAPIEN can render here, else what it said."""
    try:
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "SAPIEN's device query did not answer in 120 s"
    if out.returncode == 0 and "Supported: 1" in out.stdout:
        return None
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {out.returncode}"


def require_vulkan(flag: str, value: str) -> None:
    """The one-line error for camera observations on a machine SAPIEN cannot render on."""
    problem = vulkan_problem()
    if problem is not None:
        raise ConfigError(
            f"{flag}={value}: ManiSkill's cameras need a Vulkan device and SAPIEN found none ({problem}); "
            f"{DRIVER_HINT}, or use --env.obs_type=state, which needs none"
        )
