"""LeRobot's `rename_observations_processor` step: observation keys renamed (`--rename_map`)."""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

from lerobot.configs.types import PipelineFeatureType
from lerobot.processor.core import EnvTransition
from lerobot.processor.steps import Features, ObservationProcessorStep, ProcessorStepRegistry


@ProcessorStepRegistry.register(name="rename_observations_processor")
@dataclass
class RenameObservationsProcessorStep(ObservationProcessorStep):
    rename_map: dict[str, str] = field(default_factory=dict)

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        # Nothing to rename (the usual case: evaluation renames env keys itself): no copies.
        return super().__call__(transition) if self.rename_map else transition

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        return {self.rename_map.get(key, key): value for key, value in observation.items()}

    def get_config(self) -> dict[str, Any]:
        return {"rename_map": self.rename_map}

    def transform_features(self, features: Features) -> Features:
        renamed = dict(features)
        observed = features.get(PipelineFeatureType.OBSERVATION, {})
        renamed[PipelineFeatureType.OBSERVATION] = {self.rename_map.get(k, k): v for k, v in observed.items()}
        return renamed


def rename_stats(stats: dict[str, dict[str, Any]], rename_map: dict[str, str]) -> dict[str, dict[str, Any]]:
    """A deep copy of `stats` whose feature keys are renamed as `rename_map` says."""
    return {
        rename_map.get(key, key): deepcopy(by_stat) if by_stat is not None else {}
        for key, by_stat in (stats or {}).items()
    }
