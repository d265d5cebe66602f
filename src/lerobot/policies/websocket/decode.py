"""A msgpack decoder for frames from a peer we do not trust, whose arrays are views of the frame.

msgpack's own decoder copies every `bin` out of the frame: a request carrying a 15 MB image
cost the server 15 MB more while it was decoded, on top of the frame. Here a `bin` is a
slice of the frame until the map holding it is complete; in an openpi array map it becomes
the array's memory (read-only), anywhere else it is copied to `bytes`, as msgpack returns it.

Written in Python, so every bound is checked before the work it bounds: at most
`max_containers` maps and lists, `max_items` values in all, `max_depth` levels, strings of
at most `max_text_bytes` and `max_text_bytes_in_all` together (refused at their length
prefix). A request holds a few dozen values, so decoding in Python costs microseconds more
than msgpack's C; a hostile frame is stopped after at most `max_items` values, a few tens of
milliseconds.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Buffer = bytes | bytearray | memoryview


class MalformedFrameError(ValueError):
    """The frame is not msgpack, or breaks one of the decoder's bounds."""


@dataclass(frozen=True)
class Bounds:
    max_containers: int
    max_items: int
    max_depth: int
    max_text_bytes: int
    max_text_bytes_in_all: int
    """Python keeps a string of ASCII and one emoji at 4 bytes a character: 4x its UTF-8."""


FIXED_WIDTH = {
    0xCA: struct.Struct(">f"),
    0xCB: struct.Struct(">d"),
    0xCC: struct.Struct(">B"),
    0xCD: struct.Struct(">H"),
    0xCE: struct.Struct(">I"),
    0xCF: struct.Struct(">Q"),
    0xD0: struct.Struct(">b"),
    0xD1: struct.Struct(">h"),
    0xD2: struct.Struct(">i"),
    0xD3: struct.Struct(">q"),
}
"""Numbers after their one-byte type: floats, then unsigned and signed integers (big-endian)."""

LENGTH_WIDTH = {1: struct.Struct(">B"), 2: struct.Struct(">H"), 4: struct.Struct(">I")}
SIZED = {
    # type byte: (kind, width of the length that follows it)
    0xC4: ("bin", 1),
    0xC5: ("bin", 2),
    0xC6: ("bin", 4),
    0xD9: ("str", 1),
    0xDA: ("str", 2),
    0xDB: ("str", 4),
    0xDC: ("list", 2),
    0xDD: ("list", 4),
    0xDE: ("map", 2),
    0xDF: ("map", 4),
}
CONSTANTS = {0xC0: None, 0xC2: False, 0xC3: True}
EXTENSIONS = frozenset({0xC7, 0xC8, 0xC9, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8})


def decode(frame: Buffer, bounds: Bounds, on_map: Callable[[dict], Any]) -> Any:
    """The one msgpack value `frame` holds. `on_map(map)` turns each complete map into what the
    caller wants (an openpi array map into an array); `bin` values it leaves as memoryviews
    are copied to `bytes`, so nothing but what `on_map` kept refers to the frame."""
    reader = _Reader(memoryview(frame).cast("B"), bounds, on_map)
    value = reader.item(0)
    if reader.pos != len(reader.view):
        raise MalformedFrameError(f"{len(reader.view) - reader.pos} bytes after the message")
    return value


class _Reader:
    def __init__(self, view: memoryview, bounds: Bounds, on_map: Callable[[dict], Any]):
        self.view, self.bounds, self.on_map = view, bounds, on_map
        self.pos = self.containers = self.items = self.text_bytes = 0

    def take(self, n: int) -> memoryview:
        """The next `n` bytes, as a slice of the frame."""
        end = self.pos + n
        if end > len(self.view):
            raise MalformedFrameError(
                f"truncated: {n} bytes needed at byte {self.pos}, {len(self.view) - self.pos} left"
            )
        piece, self.pos = self.view[self.pos : end], end
        return piece

    def item(self, depth: int) -> Any:
        """The next value as it is kept in a list or returned: a `bin` copied to `bytes`."""
        return _owned(self.value(depth))

    def value(self, depth: int) -> Any:
        self.items += 1
        if self.items > self.bounds.max_items:
            raise MalformedFrameError(f"more than {self.bounds.max_items} values in one frame")
        head = self.take(1)[0]
        if head <= 0x7F:
            return head
        if head >= 0xE0:
            return head - 0x100
        if head <= 0x8F:
            return self.map(head & 0x0F, depth)
        if head <= 0x9F:
            return self.list(head & 0x0F, depth)
        if head <= 0xBF:
            return self.text(head & 0x1F)
        if head in CONSTANTS:
            return CONSTANTS[head]
        if head in FIXED_WIDTH:
            number = FIXED_WIDTH[head]
            return number.unpack(self.take(number.size))[0]
        if head in SIZED:
            kind, width = SIZED[head]
            length = LENGTH_WIDTH[width].unpack(self.take(width))[0]
            if kind == "bin":
                return self.take(length)
            if kind == "str":
                return self.text(length)
            return self.list(length, depth) if kind == "list" else self.map(length, depth)
        if head in EXTENSIONS:
            raise MalformedFrameError("msgpack extension types are not sent over the wire")
        raise MalformedFrameError(f"byte 0x{head:02x} at {self.pos - 1} starts no msgpack value")

    def text(self, length: int) -> str:
        if length > self.bounds.max_text_bytes:
            raise MalformedFrameError(f"a string of {length} bytes (at most {self.bounds.max_text_bytes})")
        self.text_bytes += length
        if self.text_bytes > self.bounds.max_text_bytes_in_all:
            raise MalformedFrameError(
                f"more than {self.bounds.max_text_bytes_in_all} bytes of strings in one frame"
            )
        try:
            return str(self.take(length), "utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedFrameError(f"a string that is not UTF-8 ({exc.reason})") from None

    def list(self, length: int, depth: int) -> list:
        self.open_container(length, depth)
        return [self.item(depth + 1) for _ in range(length)]

    def map(self, length: int, depth: int) -> Any:
        self.open_container(length, depth)
        entries = {}
        for _ in range(length):
            key = self.value(depth + 1)
            if isinstance(key, memoryview):
                key = bytes(key)
            elif not isinstance(key, str):
                raise MalformedFrameError(f"a map key of type {type(key).__name__} (str or bin only)")
            entries[key] = self.value(depth + 1)
        kept = self.on_map(entries)
        if type(kept) is dict:
            kept = {key: _owned(value) for key, value in kept.items()}
        return kept

    def open_container(self, length: int, depth: int) -> None:
        """Counts it, and refuses it before reading its items if it breaks a bound: a declared
        length is checked against what the frame can still hold (one byte per item at least)."""
        self.containers += 1
        if self.containers > self.bounds.max_containers:
            raise MalformedFrameError(f"more than {self.bounds.max_containers} maps and lists in one frame")
        if depth >= self.bounds.max_depth:
            raise MalformedFrameError(f"maps and lists nested more than {self.bounds.max_depth} deep")
        if length > self.bounds.max_items:
            raise MalformedFrameError(
                f"a map or list of {length} items (at most {self.bounds.max_items} values in one frame)"
            )
        if length > len(self.view) - self.pos:
            raise MalformedFrameError(f"a map or list of {length} items in {len(self.view) - self.pos} bytes")


def _owned(value: Any) -> Any:
    """A `bin` still a slice of the frame, copied to `bytes`; any other value as it is."""
    return value.tobytes() if isinstance(value, memoryview) else value
