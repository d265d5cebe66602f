"""Which PhysX a ManiSkill run simulates on, `--env.sim_backend=auto` resolved where envs are built.

`auto` means the GPU where there is one, but ManiSkill's GPU simulation needs SAPIEN's PhysX GPU
library, which SAPIEN downloads from GitHub the first time it is asked for (the package index
does not ship it). `auto` never starts that download: without the library it simulates on the
CPU and says why in one line; `--env.sim_backend=physx_cuda` asks for it explicitly.
Imports torch and SAPIEN, so only the env layer calls it, never a config being parsed.
"""

from __future__ import annotations

import functools
import logging
import platform
from pathlib import Path

logger = logging.getLogger(__name__)


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def physx_gpu_library() -> Path:
    """Where SAPIEN keeps (and looks for) its PhysX GPU library: ~/.sapien/physx/<version>/."""
    from sapien import physx

    name = "PhysXGpu_64.dll" if platform.system() == "Windows" else "libPhysXGpu_64.so"
    return Path.home() / ".sapien" / "physx" / physx.version() / name


@functools.cache
def resolve_sim_backend(sim_backend: str) -> str:
    """`auto`: physx_cuda where CUDA is and SAPIEN's PhysX GPU library is installed, else physx_cpu."""
    if sim_backend != "auto":
        return sim_backend
    if not cuda_available():
        return "physx_cpu"
    library = physx_gpu_library()
    if not library.exists():
        logger.warning(
            "--env.sim_backend=auto: simulating on the CPU (physx_cpu): SAPIEN's PhysX GPU library is not "
            "at %s; --env.sim_backend=physx_cuda has SAPIEN download it from GitHub",
            library,
        )
        return "physx_cpu"
    return "physx_cuda"
