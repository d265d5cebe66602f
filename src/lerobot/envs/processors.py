"""An env config's processors (`EnvConfig.get_env_processors`), as this build makes them.

LeRobot returns two processor pipelines: the preprocessor maps the observation batch before the
policy's preprocessor, the postprocessor maps `{"action": tensor}` after the policy's
postprocessor. Here each is an `EnvProcessor` running its steps in order, built in one place
(`build_env_processors`), the place that will build LeRobot's pipelines instead. No gymnasium,
NumPy or torch: a benchmark config's module may import this one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def build_env_processors(
    preprocessor_steps: Sequence[Callable[[Any], Any]] = (),
    postprocessor_steps: Sequence[Callable[[Any], Any]] = (),
) -> tuple[EnvProcessor, EnvProcessor]:
    """(preprocessor, postprocessor), each running its steps in order; without steps, the
    identity (what `EnvConfig.get_env_processors` gives by default)."""
    return EnvProcessor(tuple(preprocessor_steps)), EnvProcessor(tuple(postprocessor_steps))


@dataclass(frozen=True)
class EnvProcessor:
    """An env processor: its steps applied in order, as LeRobot's pipelines apply theirs, to the
    observation batch (preprocessor) or to `{"action": tensor}` (postprocessor)."""

    steps: tuple[Callable[[Any], Any], ...] = ()
    """LeRobot's pipelines hold theirs under the same name (code that filters them reads it)."""

    def __call__(self, value: Any) -> Any:
        for step in self.steps:
            value = step(value)
        return value

    def reset(self) -> None:
        """Forget what the steps keep between episodes: those with a `reset`, as LeRobot's
        pipelines do (a step may be any callable)."""
        for step in self.steps:
            reset = getattr(step, "reset", None)
            if callable(reset):
                reset()
