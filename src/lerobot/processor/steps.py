"""Processor steps and their registry, as LeRobot defines them (`lerobot.processor.pipeline`
re-exports everything here).

A step maps a transition to a transition. A saved pipeline names each step by its registry name
(`@ProcessorStepRegistry.register("my_step")`) or by its class path; loading one looks the name
up here. The steps LeRobot's own saved files name are known without importing them first: the
registry imports their module on first lookup, so loading a checkpoint costs only the steps it
uses (the tokenizer's module, for one, needs transformers only when it is built).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from lerobot.configs.types import PipelineFeatureType, PolicyFeature
from lerobot.processor.core import EnvTransition, TransitionKey

BUILTIN_STEPS = {
    "normalizer_processor": "lerobot.processor.normalize_processor",
    "unnormalizer_processor": "lerobot.processor.normalize_processor",
    "device_processor": "lerobot.processor.device_processor",
    "to_batch_processor": "lerobot.processor.batch_processor",
    "rename_observations_processor": "lerobot.processor.rename_processor",
    "smolvla_new_line_processor": "lerobot.processor.newline_task_processor",
    "pi0_new_line_processor": "lerobot.processor.newline_task_processor",
    "tokenizer_processor": "lerobot.processor.tokenizer_processor",
    "pi05_prepare_state_tokenizer_processor_step": "lerobot.processor.tokenizer_processor",
    "relative_actions_processor": "lerobot.processor.relative_action_processor",
    "absolute_actions_processor": "lerobot.processor.relative_action_processor",
    "libero_processor": "lerobot.processor.env_processor",
}
"""Registry names of the steps this package defines -> the module that registers them."""

Features = dict[PipelineFeatureType, dict[str, PolicyFeature]]


class StepNotRegisteredError(ImportError):
    """A saved pipeline names a step nobody registered; one line saying what to import."""


class ProcessorStepRegistry:
    """Step classes by name, so that a saved pipeline can name its steps."""

    _registry: ClassVar[dict[str, type]] = {}

    @classmethod
    def register(cls, name: str | None = None):
        """A class decorator registering the class under `name` (default: its class name)."""

        def decorator(step_class: type) -> type:
            registration_name = name if name is not None else step_class.__name__
            if registration_name in cls._registry:
                raise ValueError(
                    f"processor step {registration_name!r} is already registered "
                    f"(by {cls._registry[registration_name].__qualname__}); pick another name or unregister it first"
                )
            cls._registry[registration_name] = step_class
            step_class._registry_name = registration_name
            return step_class

        return decorator

    @classmethod
    def get(cls, name: str) -> type:
        if name not in cls._registry and name in BUILTIN_STEPS:
            importlib.import_module(BUILTIN_STEPS[name])
        if name not in cls._registry:
            raise StepNotRegisteredError(
                f"processor step {name!r} is not registered: import the module that declares it with "
                f"@ProcessorStepRegistry.register({name!r}) before loading the pipeline"
            )
        return cls._registry[name]

    @classmethod
    def unregister(cls, name: str) -> None:
        cls._registry.pop(name, None)

    @classmethod
    def list(cls) -> list[str]:
        """Every registered name, this package's own steps included."""
        for module in dict.fromkeys(BUILTIN_STEPS.values()):
            importlib.import_module(module)
        return list(cls._registry)

    @classmethod
    def clear(cls) -> None:
        cls._registry.clear()


class ProcessorStep(ABC):
    """One step of a pipeline: a transition in, a transition out.

    A step may keep tensors (`state_dict`, saved next to the pipeline's JSON) and settings
    (`get_config`, the keyword arguments it is rebuilt with), and says how it changes the
    features it is given (`transform_features`).
    """

    _current_transition: EnvTransition | None = None

    @property
    def transition(self) -> EnvTransition:
        """The transition being processed, for a step that reads more than its own part."""
        if self._current_transition is None:
            raise ValueError("the step has not been called with a transition yet")
        return self._current_transition

    @abstractmethod
    def __call__(self, transition: EnvTransition) -> EnvTransition:
        return transition

    def get_config(self) -> dict[str, Any]:
        return {}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None

    def reset(self) -> None:
        return None

    @abstractmethod
    def transform_features(self, features: Features) -> Features:
        return features


class _PartStep(ProcessorStep, ABC):
    """A step that changes one part of the transition, through the method named `part_method`;
    subclasses implement that method (LeRobot's ObservationProcessorStep.observation, ...)."""

    part: ClassVar[TransitionKey]
    part_method: ClassVar[str]
    part_is_dict: ClassVar[bool] = False

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        value = transition.get(self.part)
        if value is None or (self.part_is_dict and not isinstance(value, dict)):
            raise ValueError(f"{type(self).__name__} needs the transition's {self.part.value}; it has none")
        out = dict(transition)
        self._current_transition = out
        # A dict part is handed over as a copy: the step may change it without touching the caller's.
        out[self.part] = getattr(self, self.part_method)(dict(value) if self.part_is_dict else value)
        return out


class ObservationProcessorStep(_PartStep, ABC):
    part, part_method = TransitionKey.OBSERVATION, "observation"
    part_is_dict = True

    @abstractmethod
    def observation(self, observation: Any) -> Any: ...


class ActionProcessorStep(_PartStep, ABC):
    part, part_method = TransitionKey.ACTION, "action"

    @abstractmethod
    def action(self, action: Any) -> Any: ...


class RobotActionProcessorStep(ActionProcessorStep, ABC):
    """An action step on a robot's action dict (LeRobot's class for real robots)."""


class PolicyActionProcessorStep(ActionProcessorStep, ABC):
    """An action step on a policy's action tensor."""


class RewardProcessorStep(_PartStep, ABC):
    part, part_method = TransitionKey.REWARD, "reward"

    @abstractmethod
    def reward(self, reward: Any) -> Any: ...


class DoneProcessorStep(_PartStep, ABC):
    part, part_method = TransitionKey.DONE, "done"

    @abstractmethod
    def done(self, done: Any) -> Any: ...


class TruncatedProcessorStep(_PartStep, ABC):
    part, part_method = TransitionKey.TRUNCATED, "truncated"

    @abstractmethod
    def truncated(self, truncated: Any) -> Any: ...


class InfoProcessorStep(_PartStep, ABC):
    part, part_method = TransitionKey.INFO, "info"
    part_is_dict = True

    @abstractmethod
    def info(self, info: Any) -> Any: ...


class ComplementaryDataProcessorStep(_PartStep, ABC):
    part, part_method = TransitionKey.COMPLEMENTARY_DATA, "complementary_data"
    part_is_dict = True

    @abstractmethod
    def complementary_data(self, complementary_data: Any) -> Any: ...


class IdentityProcessorStep(ProcessorStep):
    """Changes nothing: a placeholder in a pipeline."""

    def __call__(self, transition: EnvTransition) -> EnvTransition:
        return transition

    def transform_features(self, features: Features) -> Features:
        return features
