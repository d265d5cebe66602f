"""Our msgpack frames and openpi's (`openpi_client.msgpack_numpy`) read each other both ways."""

import msgpack
import numpy as np
import pytest
from openpi_client import msgpack_numpy as openpi

from lerobot.policies.websocket import wire

MESSAGE = {
    "observation/image": np.arange(2 * 4 * 3, dtype=np.uint8).reshape(2, 4, 3),
    "observation/state": np.linspace(-1, 1, 8, dtype=np.float32),
    "big_endian": np.arange(3, dtype=">i4"),
    "flags": np.array([True, False]),
    "scalar": np.int64(7),
    "prompt": "pick up the bowl",
    "nested": {"rows": [0, 1], "resets": [[1, None]]},
}


def assert_same(a, b):
    assert a.keys() == b.keys()
    for key, value in a.items():
        if isinstance(value, np.ndarray):
            assert b[key].dtype == value.dtype and b[key].shape == value.shape
            np.testing.assert_array_equal(b[key], value)
        else:
            assert b[key] == value and type(b[key]) is type(value)


def test_openpi_reads_our_frames():
    assert_same(MESSAGE, openpi.unpackb(wire.pack(MESSAGE)))


def test_we_read_openpi_frames():
    assert_same(MESSAGE, wire.unpack(openpi.packb(MESSAGE)))


def test_arrays_are_tagged_maps_with_bytes_keys():
    raw = msgpack.unpackb(wire.pack({"a": np.zeros((2, 3), np.float32)}))
    assert raw["a"] == {b"__ndarray__": True, b"data": bytes(24), b"dtype": "<f4", b"shape": [2, 3]}


BAD_FRAMES = {
    "not msgpack": b"\xc1\xc1",
    "truncated": wire.pack({"x": np.zeros(4)})[:-3],
    "wrong byte count": openpi.packb(
        {"a": {b"__ndarray__": True, b"data": b"123", b"dtype": "<f4", b"shape": [1]}}
    ),
    "object dtype": msgpack.packb(
        {b"__ndarray__": True, b"data": b"12345678", b"dtype": "|O", b"shape": [1]}
    ),
    "structured dtype": msgpack.packb(
        {b"__ndarray__": True, b"data": b"1234", b"dtype": "|V4", b"shape": [1]}
    ),
    "no dtype": msgpack.packb({b"__ndarray__": True, b"data": b"1234", b"shape": [1]}),
    "negative shape": msgpack.packb({b"__ndarray__": True, b"data": b"", b"dtype": "<f4", b"shape": [-1]}),
    "huge shape": msgpack.packb(
        {b"__ndarray__": True, b"data": b"1234", b"dtype": "<f4", b"shape": [2**30, 2**30]}
    ),
}


@pytest.mark.parametrize("frame", BAD_FRAMES.values(), ids=BAD_FRAMES.keys())
def test_malformed_frames_raise_wire_error_only(frame):
    with pytest.raises(wire.WireError):
        wire.unpack(frame)


def test_objects_that_cannot_travel_are_refused_when_sending():
    with pytest.raises(TypeError, match="convert it to a numpy array"):
        wire.pack({"x": object()})
    with pytest.raises(wire.WireError, match="<c8 is not sent"):
        wire.pack({"x": np.zeros(2, np.complex64)})
