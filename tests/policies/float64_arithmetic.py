"""An arithmetic that gives a bfloat16 model the same bits on any x86 CPU: each floating-point
op computed in float64 and rounded once to the dtype it returns.

Why: torch multiplies bfloat16 matrices on the CPU with a kernel chosen for the machine (oneDNN
with AMX or AVX512-BF16, its AVX512 emulation, ATen's own AVX2 or AVX512 loops) and sums the
float32 products in that kernel's order; rounding the sum to bfloat16 (8 significant bits) turns
those last-bit differences into whole bfloat16 steps, and π0's ten denoising steps carry them to
its chunk. π0's bfloat16 chunk (LeRobot 0.6.1's and ours, the same bits on one machine) moves
by up to 3.9e-3 from one such kernel to another on a Xeon with AMX and AVX512-BF16, while the
float32 chunk is 9.6e-3 away, so a bfloat16 chunk recorded that way holds only on CPUs that pick
the same kernels. Here a bfloat16 product is exact in float64 and
a sum of them nearly always is too, so each op's rounded result no longer depends on the kernel,
the vector width or the thread count, while every rounding to bfloat16 or float32 that the model
makes (its layout) stays where it is. Checked on that Xeon: LeRobot's chunk and ours came out
bit for bit the same under ATen's scalar, AVX2 and AVX512 loops, oneDNN capped at AVX2 or
AVX512 or switched off, and two threads.

scripts/make_pi_fixtures.py (run with LeRobot's own `lerobot`) loads it by path: imports torch only.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

WIDENED = (torch.float32, torch.bfloat16, torch.float16)
DATA_MOVES = {"copy_", "fill_", "zero_"}
"""In-place ops that only move or cast data: the same bits on any CPU."""


class Float64Arithmetic(TorchDispatchMode):
    """Inside this mode each op with floating-point inputs runs twice: as usual, for the dtypes
    it returns (so every kernel the model reaches still runs), and in float64, whose results,
    rounded to those dtypes, are returned. Views pass through; arithmetic in place is refused,
    as a silently native op would bring the CPU's rounding back."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _has_floating((args, kwargs)) or _returns_view(func):
            return func(*args, **kwargs)
        if func._schema.is_mutable:
            if _base_name(func) in DATA_MOVES:
                return func(*args, **kwargs)
            raise NotImplementedError(f"{func}: in-place arithmetic has no float64 form here; add one")
        native = func(*args, **kwargs)
        if not _has_floating(native):
            return native
        wide = func(*tree_map(_to_float64, args), **tree_map(_to_float64, kwargs))
        return _rounded_like(wide, native)


def _base_name(func) -> str:
    return func._schema.name.split("::")[-1]


def _returns_view(func) -> bool:
    schema = func._schema
    return not schema.is_mutable and any(r.alias_info is not None for r in schema.returns)


def _has_floating(tree) -> bool:
    return any(isinstance(x, torch.Tensor) and x.dtype.is_floating_point for x in tree_flatten(tree)[0])


def _to_float64(x):
    """Floating tensors and `dtype=` arguments become float64; anything else is kept."""
    if isinstance(x, torch.Tensor) and x.dtype in WIDENED:
        return x.to(torch.float64)
    if isinstance(x, torch.dtype) and x in WIDENED:
        return torch.float64
    return x


def _rounded_like(wide, native):
    """`wide`'s values rounded to `native`'s dtypes, in `native`'s structure."""
    flat_native, spec = tree_flatten(native)
    flat_wide, _ = tree_flatten(wide)
    rounded = [
        w.to(n.dtype) if isinstance(n, torch.Tensor) and n.dtype.is_floating_point else n
        for n, w in zip(flat_native, flat_wide, strict=True)
    ]
    return tree_unflatten(rounded, spec)
