"""An env config's processors (`EnvConfig.get_env_processors`), as LeRobot makes them: two
processor pipelines. The preprocessor maps the observation batch before the policy's
preprocessor, the postprocessor maps `{"action": tensor}` after the policy's postprocessor.
They are built in one place (`build_env_processors`); the pipeline classes load only when a
config asks for its processors, so a benchmark config's module may import this one for free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

ENV_PREPROCESSOR = "env_preprocessor"
ENV_POSTPROCESSOR = "env_postprocessor"


def build_env_processors(
    preprocessor_steps: Sequence[Any] = (), postprocessor_steps: Sequence[Any] = ()
) -> tuple[Any, Any]:
    """(preprocessor, postprocessor) pipelines running these processor steps in order; without
    steps, pipelines that change nothing (what `EnvConfig.get_env_processors` gives by default;
    the rollout skips them)."""
    from lerobot.processor.pipeline import DataProcessorPipeline

    return (
        DataProcessorPipeline(steps=list(preprocessor_steps), name=ENV_PREPROCESSOR),
        DataProcessorPipeline(steps=list(postprocessor_steps), name=ENV_POSTPROCESSOR),
    )
