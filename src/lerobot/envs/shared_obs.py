"""Camera frames from env workers through shared memory instead of the pipe.

A 480x480 RGB frame sent over a pipe is pickled, written, read and unpickled: 0.48 ms per
round trip here, against 0.28 ms through a shared block (benchmarks/frame_transport.py). With
GPU rendering (a few ms per frame) or `--env.fast_render` that difference is a visible share
of a step. The parent creates one block per worker, laid out from the observation space, so it
owns the block's lifetime: the block is unlinked when the slot closes, even if its worker
was killed. The worker writes the big arrays of each observation into the block and sends a
small `SharedLeaf` in their place; the parent copies them out as soon as the reply arrives,
before it sends the next command, so the worker never overwrites a frame still in use.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Any

import gymnasium as gym
import numpy as np

MIN_SHARED_BYTES = 16 * 1024
"""Arrays smaller than this (state vectors, thumbnails) cost less to pickle than to share."""


@dataclass(frozen=True)
class LeafLayout:
    """Where one observation array lives in the block."""

    path: tuple[str, ...]
    """Keys from the observation's top level down to the array (empty for a bare array)."""
    shape: tuple[int, ...]
    dtype: str
    offset: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class SharedLeaf:
    """Stands in for an array that was written to the shared block, in a worker's reply."""

    index: int


@dataclass(frozen=True)
class SharedSpec:
    """What a worker needs to attach to its block (picklable)."""

    name: str
    layout: tuple[LeafLayout, ...]


def plan_layout(space: gym.Space, min_bytes: int = MIN_SHARED_BYTES) -> tuple[LeafLayout, ...]:
    """The big fixed-shape arrays of an observation space, packed one after the other."""
    layout: list[LeafLayout] = []
    offset = 0
    for path, box in _box_leaves(space, ()):
        leaf = LeafLayout(path, tuple(box.shape), box.dtype.str, offset)
        if leaf.nbytes < min_bytes:
            continue
        layout.append(leaf)
        offset += -(-leaf.nbytes // 64) * 64  # 64-byte aligned starts
    return tuple(layout)


def _box_leaves(space: gym.Space, path: tuple[str, ...]):
    if isinstance(space, gym.spaces.Dict):
        for key, sub in space.spaces.items():
            yield from _box_leaves(sub, (*path, key))
    elif isinstance(space, gym.spaces.Box):
        yield path, space


class SharedBlock:
    """One worker's block: the parent creates and unlinks it, the worker attaches to it."""

    def __init__(self, memory: shared_memory.SharedMemory, layout: tuple[LeafLayout, ...], owner: bool):
        self.memory, self.layout, self.owner = memory, layout, owner
        self.views = [
            np.ndarray(leaf.shape, np.dtype(leaf.dtype), buffer=memory.buf, offset=leaf.offset)
            for leaf in layout
        ]

    @classmethod
    def create(cls, space: gym.Space) -> SharedBlock | None:
        """A block for `space`'s big arrays; None when it has none worth sharing."""
        layout = plan_layout(space)
        if not layout:
            return None
        size = layout[-1].offset + layout[-1].nbytes
        memory = shared_memory.SharedMemory(create=True, size=size)
        try:
            _reserve(memory, size)
        except OSError:
            memory.close()
            memory.unlink()
            raise
        return cls(memory, layout, owner=True)

    @classmethod
    def attach(cls, spec: SharedSpec) -> SharedBlock:
        return cls(shared_memory.SharedMemory(name=spec.name), spec.layout, owner=False)

    @property
    def spec(self) -> SharedSpec:
        return SharedSpec(self.memory.name, self.layout)

    def put(self, observation: Any) -> Any:
        """Worker side: write the big arrays into the block, return the observation with
        `SharedLeaf`s in their place. An array whose shape or dtype differs from the space's
        stays in the observation and travels through the pipe."""
        for index, (leaf, view) in enumerate(zip(self.layout, self.views, strict=True)):
            value = _get(observation, leaf.path)
            if isinstance(value, np.ndarray) and value.shape == view.shape and value.dtype == view.dtype:
                np.copyto(view, value)
                observation = _replace(observation, leaf.path, SharedLeaf(index))
        return observation

    def take(self, observation: Any) -> Any:
        """Parent side: the observation with every `SharedLeaf` replaced by a copy of its array."""
        for leaf, view in zip(self.layout, self.views, strict=True):
            value = _get(observation, leaf.path)
            if isinstance(value, SharedLeaf):
                observation = _replace(observation, leaf.path, view.copy())
        return observation

    def close(self) -> None:
        self.views = []  # the buffer cannot be released while arrays still point into it
        self.memory.close()
        if self.owner:
            self.memory.unlink()


def _reserve(memory: shared_memory.SharedMemory, size: int) -> None:
    """Allocate the block's pages now, in the parent. A tmpfs /dev/shm too small for every
    worker's block (Docker gives a container 64 MB unless `--shm-size` says otherwise) accepts
    the block anyway, and the worker dies of SIGBUS at its first frame; reserved, a block that
    does not fit is an OSError (ENOSPC) here, and that worker uses the pipe instead."""
    fd = getattr(memory, "_fd", -1)  # CPython's POSIX implementation keeps the descriptor here
    if fd >= 0 and hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)


def map_observation(reply: Any, command: str, convert: Callable[[Any], Any]) -> Any:
    """Apply `convert` to the observation inside a reset, step or chunk reply (a chunk's last
    step carries the only observation); other replies as is."""
    if command == "reset" and isinstance(reply, tuple) and len(reply) == 2:
        return convert(reply[0]), reply[1]
    if command == "step" and dataclasses.is_dataclass(reply):
        return dataclasses.replace(reply, observation=convert(reply.observation))
    if command == "steps" and dataclasses.is_dataclass(reply):
        *before, last = reply.steps
        return dataclasses.replace(reply, steps=(*before, map_observation(last, "step", convert)))
    return reply


def _get(observation: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(observation, Mapping) or key not in observation:
            return None
        observation = observation[key]
    return observation


def _replace(observation: Any, path: tuple[str, ...], value: Any) -> Any:
    """A copy of `observation` (dicts copied along `path` only) with `value` at `path`."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    updated = dict(observation)
    updated[head] = _replace(observation[head], rest, value)
    return updated
