"""Our msgpack frames and openpi's (`openpi_client.msgpack_numpy`) read each other both ways."""

import random
import re

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


def random_message(rng: random.Random, depth: int = 0):
    """Every msgpack type a frame may hold, at every width msgpack encodes it with."""
    kind = rng.randrange(10 if depth < 2 else 7)
    if kind == 0:
        return rng.choice(
            [rng.randrange(-40, 300), rng.randrange(-(2**63), 2**64), rng.randrange(-(2**31), 2**32)]
        )
    if kind == 1:
        return rng.choice([rng.uniform(-1e6, 1e6), float(np.float32(rng.random()))])
    if kind == 2:
        return rng.choice([None, True, False])
    if kind == 3:
        return "".join(rng.choice("ab é✓\n") for _ in range(rng.choice([0, 5, 40, 300, 3_000])))
    if kind in (4, 5):
        return rng.randbytes(rng.choice([0, 3, 300, 70_000]))
    if kind == 6:
        return rng.randrange(2**16, 2**32)
    if kind in (7, 8):
        return [random_message(rng, depth + 1) for _ in range(rng.choice([0, 3, 17, 70]))]
    return {
        f"key{'x' * rng.choice([0, 40])}{i}": random_message(rng, depth + 1) for i in range(rng.randrange(20))
    }


@pytest.mark.parametrize("seed", range(50))
def test_we_decode_what_msgpack_decodes(seed):
    rng = random.Random(seed)
    message = random_message(rng)
    frame = msgpack.packb(message, use_single_float=rng.random() < 0.5)
    assert wire.unpack(frame, max_containers=10**6) == msgpack.unpackb(frame)


def test_arrays_are_read_only_views_of_the_frame_not_copies():
    frame = bytearray(wire.pack({"image": np.arange(30_000, dtype=np.uint8), "state": np.ones(3, ">f8")}))
    message = wire.unpack(frame)
    assert np.shares_memory(message["image"], np.frombuffer(frame, np.uint8))
    assert not message["image"].flags.writeable
    np.testing.assert_array_equal(message["image"], np.arange(30_000, dtype=np.uint8))
    np.testing.assert_array_equal(message["state"], np.ones(3))


BOUNDS = {
    "a flood of empty maps": (msgpack.packb([[{}] * 100] * 200), "more than 10000 maps and lists"),
    "a list longer than the frame": (b"\xdd\x00\x00\xff\xff\x00", "a map or list of 65535 items in 1 bytes"),
    "too many values": (msgpack.packb([[0] * 9_000] * 16), "more than 131072 values"),
    "nested too deep": (b"\x91" * 40 + b"\x00", "nested more than 32 deep"),
    "a long string": (msgpack.packb("x" * 70_000), "a string of 70000 bytes (at most 65536)"),
    "an extension type": (msgpack.packb(msgpack.ExtType(1, b"x")), "extension types are not sent"),
    "bytes after the message": (msgpack.packb(1) + b"\x00", "1 bytes after the message"),
    "an integer key": (msgpack.packb({1: 2}, strict_types=True), "a map key of type int"),
    "not UTF-8": (b"\xa2\xff\xfe", "a string that is not UTF-8"),
    # 16 MB of strings, ASCII but for one emoji each: Python would keep 64 MB of them.
    "strings in all": (
        msgpack.packb(["\U0001f600" + "x" * 60_000] * 80),
        "more than 4194304 bytes of strings",
    ),
    # Multiplying 131,000 sizes of 2**31 took seconds, holding the interpreter.
    "an array of 33 dimensions": (
        msgpack.packb({b"__ndarray__": True, b"data": b"", b"dtype": "<f4", b"shape": [2**31 - 1] * 33}),
        "a list of sizes `shape`",
    ),
    # numpy reads long dtype strings as structured dtypes, slowly.
    "a long dtype": (
        msgpack.packb({b"__ndarray__": True, b"data": b"", b"dtype": "f4," * 20_000, b"shape": [0]}),
        "bad dtype 'f4,f4,f4,f4,f4,f4,f4'...",
    ),
    "a numpy scalar of bytes": (
        msgpack.packb({b"__npgeneric__": True, b"data": b"\x01\x00", b"dtype": "|b1"}),
        "needs a number",
    ),
}


@pytest.mark.parametrize(("frame", "reason"), BOUNDS.values(), ids=BOUNDS.keys())
def test_bounds_are_checked_before_the_work_they_bound(frame, reason):
    with pytest.raises(wire.WireError, match=re.escape(reason)):
        wire.unpack(frame)
