"""Inputs and statistics of the PushT and ALOHA policy fixtures, drawn from seeded CPU generators.

Shared by scripts/make_pusht_aloha_fixtures.py (which runs it in LeRobot's environment, by path)
and the tests, so the fixtures store a digest of the inputs instead of the images themselves.
Only torch is imported: this file must run in both environments.
"""

from __future__ import annotations

import hashlib

import torch

BATCH = 2


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _images(g: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randint(0, 256, (BATCH, *shape), generator=g, dtype=torch.uint8)


def pusht_steps(n_steps: int = 10, seed: int = 13) -> list[dict[str, torch.Tensor]]:
    """Env-side PushT observations: 96x96 images (uint8, channels first) and pusher x, y."""
    g = _generator(seed)
    return [
        {
            "observation.image": _images(g, (3, 96, 96)),
            "observation.state": torch.rand((BATCH, 2), generator=g) * 400 + 50,
        }
        for _ in range(n_steps)
    ]


def aloha_steps(n_steps: int = 7, seed: int = 11) -> list[dict[str, torch.Tensor]]:
    """Env-side ALOHA observations: top images (small: ACT takes any size) and 14 joints."""
    g = _generator(seed)
    return [
        {
            "observation.images.top": _images(g, (3, 96, 128)),
            "observation.state": torch.randn((BATCH, 14), generator=g) * 0.5,
        }
        for _ in range(n_steps)
    ]


def noise(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=_generator(seed))


def _vector_stats(g: torch.Generator, dim: int, low: float, high: float) -> dict[str, torch.Tensor]:
    lows = torch.rand(dim, generator=g) * 0.1 * (high - low) + low
    highs = high - torch.rand(dim, generator=g) * 0.1 * (high - low)
    return {"min": lows, "max": highs, "mean": (lows + highs) / 2, "std": (highs - lows) / 4}


def _image_stats(g: torch.Generator) -> dict[str, torch.Tensor]:
    mean = torch.rand((3, 1, 1), generator=g) * 0.4 + 0.3
    std = torch.rand((3, 1, 1), generator=g) * 0.2 + 0.15
    return {"mean": mean, "std": std, "min": torch.zeros(3, 1, 1), "max": torch.ones(3, 1, 1)}


def pusht_stats() -> dict[str, dict[str, torch.Tensor]]:
    """Statistics shaped like LeRobot's PushT data: positions in the 512-pixel workspace."""
    g = _generator(7)
    return {
        "observation.image": _image_stats(g),
        "observation.state": _vector_stats(g, 2, 0.0, 512.0),
        "action": _vector_stats(g, 2, 0.0, 512.0),
    }


def aloha_stats() -> dict[str, dict[str, torch.Tensor]]:
    """Statistics shaped like LeRobot's ALOHA data: joint angles in radians."""
    g = _generator(8)
    return {
        "observation.images.top": _image_stats(g),
        "observation.state": _vector_stats(g, 14, -1.5, 1.5),
        "action": _vector_stats(g, 14, -1.5, 1.5),
    }


def steps_digest(steps: list[dict[str, torch.Tensor]]) -> torch.Tensor:
    """SHA-256 of every input tensor, in order, as 32 uint8 values."""
    h = hashlib.sha256()
    for step in steps:
        for key in sorted(step):
            h.update(key.encode())
            h.update(step[key].contiguous().numpy().tobytes())
    return torch.tensor(list(h.digest()), dtype=torch.uint8)


def as_tensors(values: dict) -> dict[str, torch.Tensor]:
    return {key: value for key, value in values.items() if isinstance(value, torch.Tensor)}
