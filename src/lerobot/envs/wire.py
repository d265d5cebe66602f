"""The step messages of a worker's pipe in a form pickle writes and reads quickly.

Pickled as they are, a step's messages spend most of their time on numpy: every array is
saved as a call to numpy's reconstructor with its dtype pickled as an object (3.5 us to write
and 2.2 to read a 39-float state vector, warm; three times that inside a rollout, between
simulator steps), and a `StepResult` as a class instance. At batch 2 on 2 cores the main
process spent 13 us pickling each command and 14 unpickling each reply, out of a 540 us round.
Packed, a small array is its bytes with its dtype string and shape, and a step's result a
plain tuple; big arrays (camera frames that did not go through shared memory, video frames)
and everything else travel as pickle makes them.

The worker unpacks commands and packs replies, the parent the other way round: both know
each message's command, so a packed message needs no type tags beyond the arrays'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lerobot.envs.commands import ChunkResult, StepResult
from lerobot.envs.shared_obs import MIN_SHARED_BYTES

_ARRAY = "\0lerobot.ndarray"
"""First item of a packed array's tuple: (_ARRAY, data, dtype string, shape)."""
_PACKED_KINDS = frozenset("biufc")
"""Plain numeric dtypes (bool, ints, floats, complex): their dtype string says all of them."""


def pack_payload(command: str, payload: Any) -> Any:
    """A command's payload for the pipe: the action (or chunk of actions) packed."""
    return _with_action(command, payload, pack_array)


def unpack_payload(command: str, payload: Any) -> Any:
    return _with_action(command, payload, unpack_array)


def _with_action(command: str, payload: Any, convert: Callable[[Any], Any]) -> Any:
    """The payload with its action converted: (action, ...) for "step", (chunk, ...) for "steps"."""
    if command in ("step", "steps"):
        return (convert(payload[0]), *payload[1:])
    return payload


def pack_reply(command: str, value: Any) -> Any:
    """A successful command's reply for the pipe: step results as tuples, observations packed."""
    if command == "step" and type(value) is StepResult:
        return _pack_step(value)
    if command == "steps" and type(value) is ChunkResult:
        return tuple(_pack_step(step) for step in value.steps)
    if command == "reset" and type(value) is tuple and len(value) == 2:
        observation, info = value
        return (pack_observation(observation), info)
    return value


def unpack_reply(command: str, value: Any) -> Any:
    if command == "step" and type(value) is tuple:
        return _unpack_step(value)
    if command == "steps" and type(value) is tuple:
        return ChunkResult(tuple(_unpack_step(step) for step in value))
    if command == "reset" and type(value) is tuple and len(value) == 2:
        observation, info = value
        return (unpack_observation(observation), info)
    return value


def _pack_step(step: StepResult) -> tuple:
    return (
        pack_observation(step.observation),
        step.reward,
        step.terminated,
        step.truncated,
        step.info,
        step.frame,
        step.images,
    )


def _unpack_step(packed: tuple) -> StepResult:
    observation, reward, terminated, truncated, info, frame, images = packed
    return StepResult(unpack_observation(observation), reward, terminated, truncated, info, frame, images)


def pack_observation(observation: Any) -> Any:
    """An observation (an array, or dicts of them) with its small arrays packed."""
    if type(observation) is dict:
        return {key: pack_observation(value) for key, value in observation.items()}
    return pack_array(observation)


def unpack_observation(packed: Any) -> Any:
    if type(packed) is dict:
        return {key: unpack_observation(value) for key, value in packed.items()}
    return unpack_array(packed)


def pack_array(value: Any) -> Any:
    """A small plain-numeric array as (_ARRAY, bytearray, dtype string, shape); anything else
    as it is. A bytearray, not bytes: the array unpacked from it is writable, as an unpickled
    one is, without a copy on the receiving side."""
    if (
        type(value) is not np.ndarray
        or value.dtype.kind not in _PACKED_KINDS
        or value.nbytes >= MIN_SHARED_BYTES
    ):
        return value
    return (_ARRAY, bytearray(value.tobytes()), value.dtype.str, value.shape)


def unpack_array(packed: Any) -> Any:
    if type(packed) is tuple and len(packed) == 4 and packed[0] == _ARRAY:
        _, data, dtype, shape = packed
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    return packed
