"""LeRobot's `device_processor` step: every tensor of the transition on one device, floating
tensors optionally cast (`float_dtype`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor

from lerobot.processor.core import EnvTransition, TransitionKey
from lerobot.processor.steps import Features, ProcessorStep, ProcessorStepRegistry
from lerobot.utils.device_utils import resolve_device

FLOAT_DTYPES = {
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "half": torch.float16,
    "float": torch.float32,
    "double": torch.float64,
}
TENSOR_PARTS = (TransitionKey.ACTION, TransitionKey.REWARD, TransitionKey.DONE, TransitionKey.TRUNCATED)
DICT_PARTS = (TransitionKey.OBSERVATION, TransitionKey.COMPLEMENTARY_DATA)


@ProcessorStepRegistry.register("device_processor")
@dataclass
class DeviceProcessorStep(ProcessorStep):
    device: str = "cpu"
    float_dtype: str | None = None
    DTYPE_MAPPING: ClassVar[dict[str, torch.dtype]] = FLOAT_DTYPES

    def __post_init__(self) -> None:
        self.tensor_device = torch.device(resolve_device(self.device))
        self.device = self.tensor_device.type
        if self.float_dtype is not None and self.float_dtype not in FLOAT_DTYPES:
            raise ValueError(f"float_dtype={self.float_dtype!r}; choose one of {', '.join(FLOAT_DTYPES)}")
        self._dtype = FLOAT_DTYPES.get(self.float_dtype) if self.float_dtype else None
        self._non_blocking = self.tensor_device.type == "cuda"

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        """New dicts only where a tensor must change: a batch already in place passes as it is."""
        out = None
        for part in TENSOR_PARTS:
            value = transition.get(part)
            if isinstance(value, Tensor) and self._changes(value):
                out = out or dict(transition)
                out[part] = self._place(value)
        for part in DICT_PARTS:
            values = transition.get(part)
            if values and any(isinstance(v, Tensor) and self._changes(v) for v in values.values()):
                out = out or dict(transition)
                out[part] = {k: self._place(v) if isinstance(v, Tensor) else v for k, v in values.items()}
        return out if out is not None else transition

    def _target(self, tensor: Tensor) -> torch.device:
        """The step's device; a tensor already on some GPU stays on its GPU when the target is a
        GPU (several processes each place theirs)."""
        return tensor.device if tensor.is_cuda and self.tensor_device.type == "cuda" else self.tensor_device

    def _needs_cast(self, tensor: Tensor) -> bool:
        return self._dtype is not None and tensor.is_floating_point() and tensor.dtype != self._dtype

    def _changes(self, tensor: Tensor) -> bool:
        return tensor.device != self._target(tensor) or self._needs_cast(tensor)

    def _place(self, tensor: Tensor) -> Tensor:
        """On its target device, cast when a float dtype is set."""
        target = self._target(tensor)
        if target.type == "mps" and tensor.dtype == torch.float64:
            tensor = tensor.to(dtype=torch.float32)
        if tensor.device != target:
            tensor = tensor.to(target, non_blocking=self._non_blocking)
        return tensor.to(dtype=self._dtype) if self._needs_cast(tensor) else tensor

    def get_config(self) -> dict[str, Any]:
        return {"device": self.device, "float_dtype": self.float_dtype}

    def transform_features(self, features: Features) -> Features:
        return features
