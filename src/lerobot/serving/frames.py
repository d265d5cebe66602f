"""Reading a client's data frames ourselves, each straight into one buffer of its size.

websockets keeps what it reads in one growing buffer, copies a frame's payload out of it and
unmasks that copy into a new object: a 15 MB request cost the server 30-40 MB while it was
read. Here, once websockets waits for a frame, the server's connection reads frame headers
itself. A binary message sent as one frame (as every client we know sends it) is received
into a buffer of its declared size, unmasked in place and handed on: an anonymous memory map
when large, so the memory grows with what has arrived, not with what a header claims, and is
returned to the system as soon as the request is dropped. A text message is counted and
dropped (requests are binary; the server refuses it). Ping and pong frames go on to
websockets as they arrive. Anything else (a close frame, a fragmented message, a frame over
the size limit, a frame breaking the protocol) hands the rest of the stream to websockets,
which answers it as it always did.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

MAPPED_FROM_BYTES = 2**16
"""Payloads at least this large are received into an anonymous memory map, smaller ones
into a bytearray (a map costs two system calls)."""

TEXT, BINARY, PING, PONG = 0x1, 0x2, 0x9, 0xA
"""The opcodes read here (RFC 6455, 5.2); any other hands the stream to websockets."""
MAX_CONTROL_PAYLOAD = 125


@dataclass(frozen=True)
class Message:
    """A complete data message: its unmasked payload, or None for a text message."""

    payload: bytearray | mmap.mmap | None


@dataclass(frozen=True)
class Header:
    fin: bool
    reserved: int
    opcode: int
    mask: bytes | None
    length: int
    size: int
    """Bytes of the header itself (2 to 14)."""

    def is_whole_client_frame(self) -> bool:
        """Sent as a client must (masked, no extension bits) and not a fragment."""
        return self.fin and not self.reserved and self.mask is not None

    def is_kept_message(self, max_size: int | None) -> bool:
        """A whole text or binary message in this one frame, within the limit: read by us."""
        within = max_size is None or self.length <= max_size
        return self.opcode in (TEXT, BINARY) and self.is_whole_client_frame() and within

    def is_ping_or_pong(self) -> bool:
        """A valid ping or pong: passed to websockets, which answers pings."""
        short = self.length <= MAX_CONTROL_PAYLOAD
        return self.opcode in (PING, PONG) and self.is_whole_client_frame() and short


def parse_header(data: bytes | bytearray) -> Header | None:
    """The frame header at the start of `data`, or None while `data` holds only part of it."""
    if len(data) < 2:
        return None
    first, second = data[0], data[1]
    masked, length = bool(second & 0x80), second & 0x7F
    extra = {126: 2, 127: 8}.get(length, 0)
    size = 2 + extra + (4 if masked else 0)
    if len(data) < size:
        return None
    if extra:
        length = struct.unpack(">H" if extra == 2 else ">Q", data[2 : 2 + extra])[0]
    mask = bytes(data[2 + extra : size]) if masked else None
    return Header(bool(first & 0x80), first & 0x70, first & 0x0F, mask, length, size)


class FrameReader:
    """Splits what a client sends into frames for websockets (raw bytes) and data messages
    read here. Starts at a frame boundary; `max_size` is the server's frame limit."""

    def __init__(self, max_size: int | None):
        self.max_size = max_size
        self.handed_over = False
        self._header = bytearray()
        self._current: Header | None = None
        self._passing = False
        """Whether the current frame's payload goes on to websockets (a ping or pong)."""
        self._payload: bytearray | mmap.mmap | None = None
        self._received = 0

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[memoryview | Message]:
        """In order: the bytes websockets must read, and the messages complete here."""
        view = memoryview(data).cast("B")
        while view:
            if self.handed_over:
                yield view
                return
            if self._current is None:
                view = yield from self._read_header(view)
            else:
                view = yield from self._read_payload(view)

    def _read_header(self, view: memoryview) -> Iterator[memoryview | Message]:
        """Reads what `view` holds of the next header; returns what follows the header."""
        before = len(self._header)
        self._header += view[: 14 - before]
        header = parse_header(self._header)
        if header is None:  # `view` ended inside the header: all of it is in `_header`
            return view[len(view) :]
        raw, self._header = bytes(self._header[: header.size]), bytearray()
        rest = view[header.size - before :]
        if header.is_kept_message(self.max_size) and self._has_room_for(header):
            self._start(header, passing=False)
        elif header.is_ping_or_pong():
            yield memoryview(raw)
            self._start(header, passing=True)
        else:
            self.handed_over = True
            yield memoryview(raw)
            return rest
        if header.length == 0:
            yield from self._finish()
        return rest

    def _has_room_for(self, header: Header) -> bool:
        """Takes the memory for a binary payload; False when the system refuses it (the frame
        then goes to websockets, which refuses it or fails the connection as it would)."""
        if header.opcode != BINARY:
            return True
        try:
            self._payload = payload_buffer(header.length)
        except (OSError, OverflowError, MemoryError):
            return False
        return True

    def _start(self, header: Header, passing: bool) -> None:
        self._current, self._passing, self._received = header, passing, 0

    def _read_payload(self, view: memoryview) -> Iterator[memoryview | Message]:
        """Reads what `view` holds of the current payload; returns what follows it."""
        assert self._current is not None
        piece = view[: self._current.length - self._received]
        if self._passing:
            yield piece
        elif self._payload is not None:
            memoryview(self._payload)[self._received : self._received + len(piece)] = piece
        self._received += len(piece)
        if self._received == self._current.length:
            yield from self._finish()
        return view[len(piece) :]

    def _finish(self) -> Iterator[Message]:
        header, payload = self._current, self._payload
        assert header is not None and header.mask is not None
        self._current, self._payload = None, None
        if self._passing:
            return
        if payload is not None:
            unmask(payload, header.mask)
        yield Message(payload)


def payload_buffer(size: int) -> bytearray | mmap.mmap:
    """Memory for a payload of `size` bytes: pages of a map are only taken when written."""
    return mmap.mmap(-1, size) if size >= MAPPED_FROM_BYTES else bytearray(size)


def unmask(payload: bytearray | mmap.mmap, mask: bytes) -> None:
    """XOR the payload with its 4-byte mask, repeated, in place (RFC 6455, 5.3): four bytes
    at a time, as the payload starts on an aligned address."""
    words = len(payload) // 4
    if words:
        aligned = np.frombuffer(payload, np.uint32, count=words)
        aligned ^= np.frombuffer(mask, np.uint32)[0]
    for i in range(4 * words, len(payload)):
        payload[i] ^= mask[i % 4]
