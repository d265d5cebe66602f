"""The server's own frame reader against frames that websockets itself serializes, as a client
would send them, cut at every kind of place a socket read may end."""

import mmap
import os
import random

import pytest
from websockets.frames import Frame, Opcode

from lerobot.serving.frames import FrameReader, Message, unmask


def client_frame(opcode: Opcode, data: bytes, fin: bool = True, mask: bool = True) -> bytes:
    return Frame(opcode, data, fin=fin).serialize(mask=mask, extensions=[])


def read(reader: FrameReader, stream: bytes, cuts: list[int]) -> tuple[list[bytes | None], bytes]:
    """(the messages read here, the bytes passed to websockets), feeding `stream` in pieces."""
    messages, passed = [], bytearray()
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        for item in reader.feed(stream[start:end]):
            if isinstance(item, Message):
                messages.append(None if item.payload is None else bytes(item.payload))
            else:
                passed += item
    return messages, bytes(passed)


PING, PONG = client_frame(Opcode.PING, b"are you there"), client_frame(Opcode.PONG, b"")
LARGE, SMALL = os.urandom(100_003), os.urandom(5)
STREAM = [
    PING,
    client_frame(Opcode.BINARY, LARGE),  # 64-bit length, read into a memory map
    client_frame(Opcode.TEXT, "héllo".encode()),
    PONG,
    client_frame(Opcode.BINARY, b""),
    client_frame(Opcode.BINARY, os.urandom(300)),  # 16-bit length
    client_frame(Opcode.BINARY, SMALL),
]


@pytest.mark.parametrize("pieces", [1, 2, 7, 60, 600])
def test_messages_are_read_and_pings_pass_on_wherever_reads_end(pieces):
    stream = b"".join(STREAM)
    rng = random.Random(pieces)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(stream)), pieces - 1))
        messages, passed = read(FrameReader(max_size=2**20), stream, cuts)
        assert len(messages) == 5
        assert messages[0] == LARGE and messages[1] is None and messages[2] == b"" and messages[4] == SMALL
        assert passed == PING + PONG


def test_each_header_byte_may_arrive_alone():
    frame = client_frame(Opcode.BINARY, LARGE)
    messages, passed = read(FrameReader(max_size=None), frame, list(range(1, 15)))
    assert messages == [LARGE] and passed == b""


HANDED_OVER = {
    "a close frame": client_frame(Opcode.CLOSE, b"\x03\xe8"),
    "a fragmented message": client_frame(Opcode.BINARY, b"abc", fin=False),
    "a continuation without a start": client_frame(Opcode.CONT, b"abc"),
    "an unmasked frame": client_frame(Opcode.BINARY, b"abc", mask=False),
    "a frame over the limit": client_frame(Opcode.BINARY, bytes(1001)),
    "a ping over 125 bytes": bytes([0x89, 0x80 | 126, 0, 126]) + bytes(4 + 126),
    "an extension bit": bytes([0xC2]) + client_frame(Opcode.BINARY, b"abc")[1:],
    "a reserved opcode": bytes([0x83]) + client_frame(Opcode.BINARY, b"abc")[1:],
}


@pytest.mark.parametrize("frame", HANDED_OVER.values(), ids=HANDED_OVER.keys())
def test_anything_else_hands_the_rest_of_the_stream_to_websockets(frame):
    """websockets then answers it as it always did (a close, 1002 or 1009)."""
    after = client_frame(Opcode.BINARY, b"next") + PING
    reader = FrameReader(max_size=1000)
    messages, passed = read(reader, PING + client_frame(Opcode.BINARY, b"first") + frame + after, [3])
    assert messages == [b"first"] and passed == PING + frame + after and reader.handed_over


def test_a_large_payload_is_a_memory_map_only_written_as_it_arrives():
    """A header claiming 16 MiB costs no memory until the bytes come."""
    frame = client_frame(Opcode.BINARY, bytes(16 * 2**20))
    reader = FrameReader(max_size=None)
    assert list(reader.feed(frame[:20])) == []
    assert isinstance(reader._payload, mmap.mmap) and len(reader._payload) == 16 * 2**20


@pytest.mark.parametrize("size", [0, 1, 3, 4, 5, 1001])
def test_unmasking_in_place_is_the_rfc_xor(size):
    payload, mask = os.urandom(size), os.urandom(4)
    masked = bytearray(byte ^ mask[i % 4] for i, byte in enumerate(payload))
    unmask(masked, mask)
    assert masked == payload


def test_a_payload_the_system_cannot_map_goes_to_websockets():
    """websockets then refuses it (1009) as it would any frame over its limit."""
    header = bytes([0x82, 0xFF]) + (2**62).to_bytes(8, "big") + b"mask"
    reader = FrameReader(max_size=None)
    assert [bytes(item) for item in reader.feed(header + b"data")] == [header, b"data"]
    assert reader.handed_over
