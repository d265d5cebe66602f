"""Small HDF5 files in robomimic's layout (its docs/datasets/overview.md), written with h5py.

Every value is drawn from a generator seeded by the demo's number, and each camera frame's
grey levels encode (camera, demo, step), top half and bottom half apart, so a swapped camera,
a flipped frame or a demo out of order shows in the values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

SIZE = 16


@dataclass(frozen=True)
class RobomimicFile:
    """What to write: robomimic's keys for `arms` robots, an `object` of `object_size`, and
    `<camera>_image` frames of SIZE x SIZE for each camera."""

    env_name: str = "Lift"
    lengths: Mapping[int, int] = field(default_factory=lambda: {0: 6, 2: 8, 10: 5})
    """Demo number -> steps. demo_10 sorts before demo_2 as a string, after it as a number."""
    cameras: Sequence[str] = ("agentview", "robot0_eye_in_hand")
    arms: int = 1
    object_size: int = 10
    masks: Mapping[str, Sequence[int]] = field(default_factory=lambda: {"train": [10, 0], "valid": [2]})
    with_obs: bool = True
    """False: a raw demo.hdf5 (MuJoCo states and actions only)."""


def frame(camera: int, demo: int, step: int) -> np.ndarray:
    """(SIZE, SIZE, 3) uint8: the top half at one grey level, the bottom half at another."""
    level = (20 + 60 * camera + 7 * demo + 4 * step) % 200
    image = np.full((SIZE, SIZE, 3), level, dtype=np.uint8)
    image[SIZE // 2 :] = level + 50
    return image


def write(path: Path, spec: RobomimicFile = RobomimicFile()) -> Path:
    env_args = {
        "env_name": spec.env_name,
        "type": 1,
        "env_kwargs": {
            "camera_names": list(spec.cameras),
            "camera_heights": SIZE,
            "camera_widths": SIZE,
            "control_freq": 20,
        },
    }
    with h5py.File(path, "w") as handle:
        data = handle.create_group("data")
        data.attrs["env_args"] = json.dumps(env_args)
        data.attrs["total"] = sum(spec.lengths.values())
        for number, length in spec.lengths.items():
            write_demo(data.create_group(f"demo_{number}"), spec, number, length)
        for key, numbers in spec.masks.items():
            handle.create_dataset(f"mask/{key}", data=np.array([f"demo_{n}".encode() for n in numbers]))
    return path


def write_demo(demo: h5py.Group, spec: RobomimicFile, number: int, length: int) -> None:
    rng = np.random.default_rng(number)
    demo.attrs["num_samples"] = length
    demo["actions"] = rng.uniform(-1, 1, (length, 7 * spec.arms))
    demo["rewards"] = np.zeros(length)
    demo["dones"] = np.zeros(length, dtype=np.int64)
    demo["states"] = rng.normal(size=(length, 32))
    if not spec.with_obs:
        return
    widths = {"eef_pos": 3, "eef_quat": 4, "gripper_qpos": 2, "joint_pos": 7, "joint_vel": 7}
    for group in ("obs", "next_obs"):
        obs = demo.create_group(group)
        for arm in range(spec.arms):
            for key, width in widths.items():
                obs[f"robot{arm}_{key}"] = rng.normal(size=(length, width))
        obs["object"] = rng.normal(size=(length, spec.object_size))
        for c, camera in enumerate(spec.cameras):
            obs[f"{camera}_image"] = np.stack([frame(c, number, step) for step in range(length)])
