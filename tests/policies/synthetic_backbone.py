"""Deterministic stand-in weights for the ResNet backbones of the fixture checkpoints.

A ResNet-18 holds 11 M parameters (45 MB in float32), too big to commit once per fixture. The
fixture script overwrites every backbone tensor of the reference policy with values from
`synthetic_tensor` before LeRobot saves and runs it; the committed files keep everything else
plus a digest of the backbone bytes, and the tests regenerate the backbone and check the
digest before they load anything. The generator uses only integer arithmetic (splitmix64)
and exact float32 operations, so it yields the same bits on every platform and library
version; this module imports neither LeRobot package, so both environments can use it.
"""

from __future__ import annotations

import hashlib
import math
import re
import zlib
from collections.abc import Iterable, Mapping

import numpy as np
import torch

BACKBONE_KEY = re.compile(r"(^|\.)backbone\.")
_GOLDEN = 0x9E3779B97F4A7C15
_MASK64 = (1 << 64) - 1


def is_backbone_key(name: str) -> bool:
    return BACKBONE_KEY.search(name) is not None


def synthetic_tensor(name: str, shape: Iterable[int], dtype: torch.dtype) -> torch.Tensor:
    """He-uniform conv weights, norm scales near 1, small biases and means; integers are 0."""
    shape = tuple(shape)
    if not dtype.is_floating_point:
        return torch.zeros(shape, dtype=dtype)
    u = _uniform01(zlib.crc32(name.encode()), math.prod(shape)).reshape(shape)
    leaf = name.rsplit(".", 1)[-1]
    if len(shape) == 4:
        bound = np.float32(math.sqrt(6.0 / (shape[1] * shape[2] * shape[3])))
        values = (u * np.float32(2.0) - np.float32(1.0)) * bound
    elif leaf in ("weight", "running_var"):
        values = u + np.float32(0.5)
    else:  # bias, running_mean
        values = (u - np.float32(0.5)) * np.float32(0.2)
    return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).to(dtype)


def fill_backbones(state_dict: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The synthetic tensor for every backbone entry of `state_dict` (others are left out)."""
    return {
        name: synthetic_tensor(name, tensor.shape, tensor.dtype)
        for name, tensor in state_dict.items()
        if is_backbone_key(name)
    }


def backbone_digest(state_dict: Mapping[str, torch.Tensor]) -> str:
    """sha256 over the names, shapes, dtypes and bytes of the backbone entries, in name order."""
    digest = hashlib.sha256()
    for name in sorted(k for k in state_dict if is_backbone_key(k)):
        tensor = state_dict[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tuple(tensor.shape)}|{tensor.dtype}|".encode())
        digest.update(tensor.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _uniform01(seed: int, n: int) -> np.ndarray:
    """n float32 values in [0, 1) from splitmix64 over the counter seed*golden + i."""
    start = np.uint64((seed * _GOLDEN) & _MASK64)
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + start
        z = z + np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / (1 << 24))
