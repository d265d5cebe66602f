"""Steps whose camera images nobody reads, for envs that render while they format an observation."""

from __future__ import annotations

from typing import Any


class StepsWithoutImages:
    """Gives an env `step_without_images(action)`: `step` with black camera images instead of
    rendered ones, for a step whose images nobody reads (a chunking policy taking queued
    actions), where the render is most of the cost. The env renders its observation's images
    only while `_images_wanted` is true; `render()` still renders the real view."""

    _images_wanted: bool = True

    def step_without_images(self, action: Any) -> tuple:
        self._images_wanted = False
        try:
            return self.step(action)
        finally:
            self._images_wanted = True
