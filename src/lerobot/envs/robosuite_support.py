"""What every robosuite benchmark here (LIBERO, robomimic) needs of robosuite: its import, and
camera sensors that skip their render on steps whose images nobody reads."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import Any

import numpy as np

from lerobot.utils.gl import default_mujoco_gl


def _drop_robosuite_macro_hint(record: logging.LogRecord) -> bool:
    """robosuite warns at every import that it has no private macro file; nothing to act on."""
    return "macro" not in record.getMessage()


def quiet_robosuite() -> None:
    """Headless GL chosen before robosuite imports MuJoCo (in this worker process), and its
    import-time notices that ask nothing of the user dropped."""
    default_mujoco_gl()
    robosuite_logger = logging.getLogger("robosuite_logs")
    if _drop_robosuite_macro_hint not in robosuite_logger.filters:
        robosuite_logger.addFilter(_drop_robosuite_macro_hint)
    # PyOpenGL (robosuite's EGL binding) logs at INFO that its optional C accelerator is absent.
    logging.getLogger("OpenGL.acceleratesupport").setLevel(logging.WARNING)


def import_robosuite() -> Any:
    """`robosuite`, imported with a headless GL backend and without its macro-file notice."""
    quiet_robosuite()
    import robosuite

    return robosuite


class CameraSwitch:
    """Whether gated camera sensors render; when off, the simulator data a render would have
    used (the last one skipped), for a caller that renders it after all."""

    def __init__(self):
        self.on = True
        self.unrendered = None


class GatedCamera:
    """A robosuite camera sensor that renders only while its switch is on, else returns black."""

    def __init__(self, render, mjsim, switch: CameraSwitch, shape: tuple[int, ...]):
        self.render, self.mjsim, self.switch, self.shape = render, mjsim, switch, shape
        self.__modality__ = render.__modality__

    def __call__(self, obs_cache: dict) -> np.ndarray:
        if self.switch.on:
            return self.render(obs_cache)
        self.switch.unrendered = copy.copy(self.mjsim.data._data)
        return np.zeros(self.shape, dtype=np.uint8)


def gate_cameras(
    robosuite_env: Any, mjsim: Any, observables: Iterable[str], shape: tuple[int, ...], switch: CameraSwitch
) -> None:
    """Put `switch` in front of the camera sensors of `observables` (`agentview_image`, ...),
    each giving images of `shape` when off. Call it after every reset: a hard reset rebuilds
    the sensors. Switching the sensor, not the observable, keeps its sampling clock running:
    disabling an observable resets its clock, and the next image would come late."""
    switch.on = False  # installing calls the sensor once; no render for that
    try:
        for name in observables:
            sensor = robosuite_env._observables[name]._sensor
            if not isinstance(sensor, GatedCamera):
                robosuite_env.modify_observable(name, "sensor", GatedCamera(sensor, mjsim, switch, shape))
    finally:
        switch.on = True
