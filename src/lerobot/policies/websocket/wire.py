"""openpi's wire format: msgpack maps, with numpy arrays and scalars as tagged maps.

An array travels as `{b"__ndarray__": True, b"data": raw bytes, b"dtype": arr.dtype.str,
b"shape": [...]}` and a numpy scalar as `{b"__npgeneric__": True, b"data": value, b"dtype": ...}`
(the tag keys are msgpack *bin*, not str), so messages are exchangeable with openpi's
`openpi_client.msgpack_numpy` in both directions. Unlike pickle, decoding cannot run code; we
also refuse object, structured and complex dtypes, so a hostile frame can at worst be rejected.
"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np

from lerobot.policies.websocket.decode import Bounds, Buffer, MalformedFrameError, decode

NDARRAY = b"__ndarray__"
NPGENERIC = b"__npgeneric__"
ALLOWED_KINDS = frozenset("biuf")
"""bool, signed and unsigned integers, floats."""


class WireError(ValueError):
    """A frame that is not a valid message (the server answers it with an error, never crashes)."""


def pack(message: Any) -> bytes:
    """Encode a message (maps, lists, str, numbers, numpy arrays and scalars) as one frame."""
    return msgpack.packb(message, default=_encode)


MAX_CONTAINERS = 10_000
"""Maps and lists one frame may hold. A request holds a few (one map per array); a frame of
empty maps would otherwise cost ~70 bytes of memory per byte sent."""

MAX_ITEMS = 2**17
"""Values of any kind one frame may hold (a batch of 4096 rows with a task string each and
every row reset holds about 30,000). Bounds the decoder's time: 16 MiB of one-byte integers
would be 16 million values."""

MAX_TEXT_BYTES = 2**16
"""The longest string a frame may hold (a task instruction is a few hundred bytes). Refused at
its length prefix, before it is decoded: a 12 MiB prompt otherwise costs its size again."""

MAX_TEXT_BYTES_IN_ALL = 2**22
"""All strings of one frame together (4096 rows with a task string each hold about 400 KB):
4 MiB of UTF-8 is at most 16 MB of Python strings."""

MAX_DEPTH = 32
"""Maps and lists within each other (a request nests three deep)."""


def unpack(frame: Buffer, max_containers: int = MAX_CONTAINERS) -> Any:
    """Decode one frame; WireError on anything that is not a valid message. Arrays are
    read-only views of `frame` (which they keep alive), not copies of it."""
    bounds = Bounds(max_containers, MAX_ITEMS, MAX_DEPTH, MAX_TEXT_BYTES, MAX_TEXT_BYTES_IN_ALL)
    try:
        return decode(frame, bounds, _decode)
    except WireError:
        raise
    except MalformedFrameError as exc:
        raise WireError(f"not a msgpack message ({exc})") from None
    except Exception as exc:  # numpy refusing a tagged map's contents, in any of its ways
        raise WireError(f"not a valid message ({type(exc).__name__}: {exc})") from None


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        _check_dtype(obj.dtype)
        return {NDARRAY: True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        _check_dtype(obj.dtype)
        return {NPGENERIC: True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise TypeError(f"cannot send a {type(obj).__name__}; convert it to a numpy array first")


def _decode(obj: dict) -> Any:
    if NDARRAY in obj:
        dtype, shape, data = _dtype_of(obj), obj.get(b"shape"), obj.get(b"data")
        if not isinstance(data, bytes | memoryview) or not _is_shape(shape):
            raise WireError("an __ndarray__ map needs bytes `data` and a list of sizes `shape`")
        if len(data) != dtype.itemsize * math.prod(shape):
            raise WireError(
                f"an array of shape {shape} and dtype {dtype.str} needs {dtype.itemsize} bytes per item"
            )
        array = np.frombuffer(data, dtype=dtype).reshape(shape)
        array.flags.writeable = False  # a view of the frame, as msgpack's bytes were read-only
        return array
    if NPGENERIC in obj:
        value = obj.get(b"data")
        if not isinstance(value, bool | int | float):  # openpi sends `.item()`: a number
            raise WireError("an __npgeneric__ map needs a number as `data`")
        return _dtype_of(obj).type(value)
    return obj


MAX_DTYPE_CHARS = 8
"""A dtype travels as its `.str` ('<f4', '|b1', '<f16'). numpy parses longer strings as
structured dtypes, 70 ms for 60 KB of 'f4,f4,...': refused before numpy reads them."""


def _dtype_of(obj: dict) -> np.dtype:
    name = obj.get(b"dtype")
    try:
        dtype = np.dtype(name) if isinstance(name, str) and len(name) <= MAX_DTYPE_CHARS else None
    except TypeError:
        dtype = None
    if dtype is None:
        quoted = (
            repr(name[:20]) + ("..." if len(name) > 20 else "")
            if isinstance(name, str)
            else type(name).__name__
        )
        raise WireError(f"bad dtype {quoted}; expected a numpy dtype string such as '<f4'")
    _check_dtype(dtype)
    return dtype


def _check_dtype(dtype: np.dtype) -> None:
    if dtype.kind not in ALLOWED_KINDS:
        raise WireError(f"dtype {dtype.str} is not sent over the wire (bool, int, uint and float only)")


MAX_DIMENSIONS = 32
"""numpy's own limit is 64. Checked before the sizes are multiplied: the product of 131,000
sizes of 2**31 took seconds, holding the interpreter."""


def _is_shape(shape: Any) -> bool:
    return (
        isinstance(shape, list | tuple)
        and len(shape) <= MAX_DIMENSIONS
        and all(isinstance(n, int) and 0 <= n < 2**31 for n in shape)
    )
