"""Feature normalisation with a checkpoint's dataset statistics, as LeRobot's processors do it.

A policy trained by LeRobot sees every input scaled by its dataset's statistics and emits
actions in that scaled space; evaluation must apply exactly the same maps. The formulas and
their order of operations follow LeRobot's `NormalizerProcessorStep` (eps 1e-8 added to the
std; a zero range replaced by eps), so results agree to the last bit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.utils.constants import ACTION

logger = logging.getLogger(__name__)

REQUIRED_STATS = {
    NormalizationMode.MEAN_STD: ("mean", "std"),
    NormalizationMode.MIN_MAX: ("min", "max"),
    NormalizationMode.QUANTILES: ("q01", "q99"),
    NormalizationMode.QUANTILE10: ("q10", "q90"),
}


class Normalizer:
    """Maps features to the policy's scale (`normalize`) and actions back (`unnormalize_action`).

    `stats[key][name]` are tensors (mean, std, min, max, q01, ...). Features whose mode is
    IDENTITY, or that have no statistics (LeRobot leaves those unchanged too), pass through.
    """

    def __init__(
        self,
        features: Mapping[str, PolicyFeature],
        norm_map: Mapping[FeatureType, NormalizationMode],
        stats: Mapping[str, Mapping[str, Tensor]],
        eps: float = 1e-8,
        only_keys: set[str] | None = None,
    ):
        self.features = dict(features)
        self.norm_map = dict(norm_map)
        self.eps = eps
        self.only_keys = only_keys
        self.stats = {key: _shape_stats(self.features.get(key), dict(s)) for key, s in stats.items()}
        self._check_stats()
        self._cache: dict[tuple[str, torch.device, torch.dtype], dict[str, Tensor]] = {}

    def _check_stats(self) -> None:
        for key, feature in self.features.items():
            mode = self.mode(feature)
            if mode is NormalizationMode.IDENTITY:
                continue
            if key not in self.stats:
                logger.warning("no statistics for %s (%s): it reaches the policy unnormalised", key, mode)
                continue
            missing = [name for name in REQUIRED_STATS[mode] if name not in self.stats[key]]
            if missing:
                raise ValueError(f"{mode} normalisation of {key!r} needs statistics {', '.join(missing)}")
            if not all(torch.isfinite(self.stats[key][name]).all() for name in REQUIRED_STATS[mode]):
                raise ValueError(
                    f"the {mode} statistics of {key!r} are not finite (saved without dataset stats?)"
                )

    def mode(self, feature: PolicyFeature) -> NormalizationMode:
        return NormalizationMode(self.norm_map.get(feature.type, NormalizationMode.IDENTITY))

    def normalize(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of `batch` with every known observation feature normalised."""
        out = dict(batch)
        for key, feature in self.features.items():
            if feature.type is FeatureType.ACTION or key not in out:
                continue
            if self.only_keys is not None and key not in self.only_keys:
                continue
            out[key] = self._transform(out[key], key, feature, inverse=False)
        return out

    def unnormalize_action(self, action: Tensor) -> Tensor:
        return self._transform(action, ACTION, PolicyFeature(FeatureType.ACTION, ()), inverse=True)

    def normalize_action(self, action: Tensor) -> Tensor:
        return self._transform(action, ACTION, PolicyFeature(FeatureType.ACTION, ()), inverse=False)

    def _transform(self, x: Tensor, key: str, feature: PolicyFeature, inverse: bool) -> Tensor:
        mode = self.mode(feature)
        if mode is NormalizationMode.IDENTITY or key not in self.stats:
            return x
        s = self._stats_like(key, x)
        if mode is NormalizationMode.MEAN_STD:
            return x * s["std"] + s["mean"] if inverse else (x - s["mean"]) / (s["std"] + self.eps)
        low, high = (s[name] for name in REQUIRED_STATS[mode])
        span = high - low
        span = torch.where(span == 0, torch.tensor(self.eps, device=x.device, dtype=x.dtype), span)
        if mode is NormalizationMode.MIN_MAX:
            return (x + 1) / 2 * span + low if inverse else 2 * (x - low) / span - 1
        return (x + 1.0) * span / 2.0 + low if inverse else 2.0 * (x - low) / span - 1.0

    def _stats_like(self, key: str, x: Tensor) -> dict[str, Tensor]:
        """The statistics of `key` on x's device and in x's dtype (cached)."""
        cache_key = (key, x.device, x.dtype)
        if cache_key not in self._cache:
            self._cache[cache_key] = {
                n: t.to(device=x.device, dtype=x.dtype) for n, t in self.stats[key].items()
            }
        return self._cache[cache_key]


def _shape_stats(feature: PolicyFeature | None, stats: dict[str, Tensor]) -> dict[str, Tensor]:
    """Per-channel image statistics of shape (C,) become (C, 1, 1), to broadcast over pixels."""
    shaped = {name: torch.as_tensor(value, dtype=torch.float32) for name, value in stats.items()}
    if feature is None or feature.type is not FeatureType.VISUAL:
        return shaped
    return {name: t.reshape(-1, 1, 1) if t.ndim == 1 else t for name, t in shaped.items()}
