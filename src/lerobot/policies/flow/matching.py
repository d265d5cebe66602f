"""Flow matching as openpi's policies do it (SmolVLA, π0, π0.5): the pieces they share.

A chunk of actions is sampled by integrating a learnt velocity field from noise at t=1 to
actions at t=0 with Euler steps; training regresses that velocity on `noise - actions` at
x_t = t * noise + (1 - t) * actions, with t ~ Beta(alpha, beta) * scale + offset. The draws come
from torch's global generator in LeRobot's order (noise, then time), unless a policy gives each
batch row its own seeded generator (`RowNoise`), so that an episode's actions do not depend on
the batch it ran in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor


def sample_noise(shape: Sequence[int], device: torch.device | str) -> Tensor:
    """Standard normal float32 noise from torch's global generator (LeRobot's draw)."""
    return torch.normal(mean=0.0, std=1.0, size=tuple(shape), dtype=torch.float32, device=device)


def sample_time(
    n_rows: int,
    device: torch.device | str,
    alpha: float = 1.5,
    beta: float = 1.0,
    scale: float = 0.999,
    offset: float = 0.001,
) -> Tensor:
    """Flow-matching times Beta(alpha, beta) * scale + offset, drawn on the CPU (mps has no
    Beta sampler, and LeRobot draws there on every device)."""
    distribution = torch.distributions.Beta(
        torch.tensor(alpha, dtype=torch.float32), torch.tensor(beta, dtype=torch.float32)
    )
    time = distribution.sample((n_rows,)).to(device) * scale + offset
    return time.to(dtype=torch.float32, device=device)


def euler_integrate(velocity: Callable[[Tensor, Tensor], Tensor], noise: Tensor, num_steps: int) -> Tensor:
    """x_t += dt * velocity(x_t, t) for t = 1, 1 - 1/n, ..., 1/n with dt = -1/n; returns x_0."""
    n_rows, device = noise.shape[0], noise.device
    dt = -1.0 / num_steps
    x_t = noise
    for step in range(num_steps):
        time = torch.tensor(1.0 + step * dt, dtype=torch.float32, device=device).expand(n_rows)
        x_t = x_t + dt * velocity(x_t, time)
    return x_t


def sinusoidal_time_embedding(time: Tensor, dimension: int, min_period: float, max_period: float) -> Tensor:
    """(B,) times -> (B, dimension): [sin, cos] at periods min..max geometrically spaced, in
    float64 (float32 on mps, which has no float64)."""
    if dimension % 2:
        raise ValueError(f"the time embedding width must be even, got {dimension}")
    dtype = torch.float32 if time.device.type == "mps" else torch.float64
    fraction = torch.linspace(0.0, 1.0, dimension // 2, dtype=dtype, device=time.device)
    period = min_period * (max_period / min_period) ** fraction
    angles = (1.0 / period * 2 * math.pi)[None, :] * time[:, None]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


def make_att_2d_masks(pad_masks: Tensor, block_starts: Tensor) -> Tensor:
    """(B, L, L) which token may attend to which: real tokens of its own block or earlier ones
    (a block starts at each 1 in `block_starts`)."""
    cumsum = torch.cumsum(block_starts, dim=1)
    visible = cumsum[:, None, :] <= cumsum[:, :, None]
    both_real = pad_masks[:, None, :] * pad_masks[:, :, None]
    return visible & both_real


def pad_vector(vector: Tensor, length: int) -> Tensor:
    """Zero-pad the last dimension to `length` (longer vectors are returned unchanged)."""
    if vector.shape[-1] >= length:
        return vector
    return F.pad(vector, (0, length - vector.shape[-1]))


class RowNoise:
    """Per-row sampling noise: row i draws from its own CPU generator, seeded with its episode's
    seed by `reset`, so a seeded row's chunks are those LeRobot samples for one env after
    `torch.manual_seed(seed)`. Rows never seeded draw from torch's global generator."""

    def __init__(self) -> None:
        self.generators: dict[int, torch.Generator] = {}

    def reset(self, env_ids: Sequence[int] | None, seeds: Sequence[int] | None) -> None:
        if env_ids is None:
            self.generators.clear()
            return
        for row, seed in zip(env_ids, seeds if seeds is not None else [None] * len(env_ids), strict=True):
            if seed is None:
                self.generators.pop(row, None)
            else:
                self.generators[row] = torch.Generator().manual_seed(int(seed))

    def save(self, rows: Sequence[int]) -> list[torch.Generator | None]:
        """Each row's generator (None: the row was never seeded), handed over, not copied."""
        return [self.generators.get(row) for row in rows]

    def restore(self, generators: Sequence[torch.Generator | None]) -> None:
        """Rows in the order of `generators`, as `save` gave them."""
        self.generators = {row: gen for row, gen in enumerate(generators) if gen is not None}

    def draw(self, rows: Sequence[int], shape: Sequence[int], device: torch.device) -> Tensor | None:
        """(len(rows), *shape) noise; None (the model draws from the global generator, on the
        device, as LeRobot does) when no row is seeded."""
        if not any(row in self.generators for row in rows):
            return None
        parts = []
        for row in rows:
            generator = self.generators.get(row)
            if generator is None:
                parts.append(sample_noise((1, *shape), device))
            else:
                parts.append(torch.normal(0.0, 1.0, size=(1, *shape), generator=generator).to(device))
        return torch.cat(parts)
