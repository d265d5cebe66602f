"""LeRobot's normaliser steps (`normalizer_processor`, `unnormalizer_processor`): dataset
statistics applied to observations and actions (`lerobot.processor.normalize.Normalizer` holds
the formulas), saved as one safetensors file of flat `<feature>.<stat>` tensors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
from lerobot.processor.core import EnvTransition, TransitionKey
from lerobot.processor.normalize import Normalizer
from lerobot.processor.steps import Features, ProcessorStep, ProcessorStepRegistry


@dataclass
class _NormalizerStep(ProcessorStep):
    """Settings as LeRobot saves them (features and norm_map may come as JSON), statistics as
    given or loaded from the step's state file; `stats` given at construction win over the
    file's (LeRobot's rule, which lets a user swap a checkpoint's statistics)."""

    features: dict[str, Any]
    norm_map: dict[Any, Any]
    stats: dict[str, dict[str, Any]] | None = None
    device: torch.device | str | None = None
    dtype: torch.dtype | None = None
    eps: float = 1e-8
    normalize_observation_keys: set[str] | None = None
    normalizer: Normalizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.features = {key: _feature(value) for key, value in self.features.items()}
        self.norm_map = {FeatureType(k): NormalizationMode(v) for k, v in self.norm_map.items()}
        if self.normalize_observation_keys is not None:
            self.normalize_observation_keys = set(self.normalize_observation_keys)
        self._given_stats = bool(self.stats)
        self._use_stats(_tensors(self.stats or {}))

    def _use_stats(self, stats: Mapping[str, Mapping[str, Tensor]]) -> None:
        """Without statistics (a step built from its file, before its tensors load) nothing
        is scaled, and nothing is warned about yet."""
        features = self.features if stats else {}
        self.normalizer = Normalizer(
            features, self.norm_map, stats, self.eps, self.normalize_observation_keys
        )

    def state_dict(self) -> dict[str, Tensor]:
        return {
            f"{key}.{name}": tensor.cpu()
            for key, by_stat in self.normalizer.stats.items()
            for name, tensor in by_stat.items()
        }

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        if self._given_stats:
            return
        stats: dict[str, dict[str, Tensor]] = {}
        for flat_key, tensor in state.items():
            key, stat = flat_key.rsplit(".", 1)
            stats.setdefault(key, {})[stat] = tensor.to(torch.float32)
        self._use_stats(stats)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "eps": self.eps,
            "features": {
                key: {"type": ft.type.value, "shape": list(ft.shape)} for key, ft in self.features.items()
            },
            "norm_map": {kind.value: mode.value for kind, mode in self.norm_map.items()},
        }
        if self.normalize_observation_keys is not None:
            config["normalize_observation_keys"] = sorted(self.normalize_observation_keys)
        return config

    def transform_features(self, features: Features) -> Features:
        return features


@ProcessorStepRegistry.register(name="normalizer_processor")
@dataclass
class NormalizerProcessorStep(_NormalizerStep):
    """Observations (and, in training batches, the action) to the policy's scale."""

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        out = dict(transition)
        observation = transition.get(TransitionKey.OBSERVATION)
        if observation is not None:
            out[TransitionKey.OBSERVATION] = self.normalizer.normalize(observation)
        action = transition.get(TransitionKey.ACTION)
        if isinstance(action, Tensor):
            out[TransitionKey.ACTION] = self.normalizer.normalize_action(action)
        return out


@ProcessorStepRegistry.register(name="unnormalizer_processor")
@dataclass
class UnnormalizerProcessorStep(_NormalizerStep):
    """The policy's actions back to the env's scale."""

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        action = transition.get(TransitionKey.ACTION)
        if not isinstance(action, Tensor):
            return transition
        out = dict(transition)
        out[TransitionKey.ACTION] = self.normalizer.unnormalize_action(action)
        return out


def hotswap_stats(policy_processor: Any, stats: dict[str, dict[str, Any]]) -> Any:
    """A copy of `policy_processor` whose (un)normaliser steps use `stats` instead of their own."""
    from copy import deepcopy

    swapped = deepcopy(policy_processor)
    for step in swapped.steps:
        if isinstance(step, _NormalizerStep):
            step.stats = stats
            step._given_stats = True
            step._use_stats(_tensors(stats))
    return swapped


def _feature(value: PolicyFeature | Mapping[str, Any]) -> PolicyFeature:
    if isinstance(value, PolicyFeature):
        return value
    return PolicyFeature(FeatureType(value["type"]), tuple(value["shape"]))


def _tensors(stats: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Tensor]]:
    return {
        key: {name: torch.as_tensor(v, dtype=torch.float32) for name, v in by_stat.items()}
        for key, by_stat in stats.items()
    }
