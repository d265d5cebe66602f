"""A server connection that reads one request at a time, each into one buffer of its size.

websockets reads whatever a client sends and queues up to 16 frames before it stops reading:
a client that keeps sending while its request is computed (nothing of ours does: every
client waits for its reply) made the server hold 16 frames of up to `--max_frame_mb` each,
per connection. Here, from the moment a request is handed to the server until the server
waits for the next one, a connection reads at most `READ_AHEAD_BYTES` more (pongs, a close
frame, the start of the next request); beyond that it stops reading, and what the client
sends waits in the kernel's socket buffers, where TCP's flow control slows the client down.
Requests themselves are read by `frames.FrameReader` once websockets waits for a frame after
the handshake, and reach `next_request` through websockets' queue of messages (which keeps
their order with everything websockets reads itself) as a token standing for the payload.
"""

from __future__ import annotations

import collections
import functools
import os

from lerobot.serving.frames import FrameReader, Message

READ_AHEAD_BYTES = 64 * 2**10
"""What a connection still reads while its request is answered: far more than keepalive
pongs and a close frame need, far less than a request of images."""

UNREAD_CLOSE_TIMEOUT_S = 1.0
"""How long a connection closed after an error waits for the client's close frame when that
frame sits behind data left unread (websockets' default wait is 10 s)."""


@functools.cache
def request_at_a_time_connection() -> type:
    """The connection class given to websockets' `serve(create_connection=...)` (built on first
    use: websockets is imported only by servers)."""
    from websockets.asyncio.server import ServerConnection
    from websockets.frames import Frame, Opcode

    class RequestAtATimeConnection(ServerConnection):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._answering = False
            self._read_while_answering = 0
            self._frames: FrameReader | None = None
            self._payloads: collections.deque = collections.deque()
            self._token = b"lerobot payload " + os.urandom(16)
            """Stands for the oldest payload in `_payloads` in websockets' queue: a client
            cannot send it (it would have to guess 16 random bytes)."""

        async def next_request(self):
            """The next frame the client sends; reads freely only while waiting for it."""
            self._answering = False
            if not self.transport.is_reading() and not self.transport.is_closing() and self._nothing_queued():
                self.transport.resume_reading()
            frame = await self.recv()
            self._answering, self._read_while_answering = True, 0
            if self._payloads and frame == self._token:
                return self._payloads.popleft()
            return frame

        def _nothing_queued(self) -> bool:
            """Reading resumes only once what was read ahead is answered: resuming with
            requests queued would let a client that pipelines small requests grow the queue
            by a socket read per answer, without bound."""
            return not self.recv_messages.frames and not self.recv_messages.paused

        async def close_after_error(self, code: int, reason: str) -> None:
            """Close. A client that kept sending while answered has its close frame behind all
            it sent, which is not read: it gets `UNREAD_CLOSE_TIMEOUT_S`, then is dropped."""
            if not self.transport.is_reading():
                self.close_timeout = UNREAD_CLOSE_TIMEOUT_S
            await self.close(code, reason)

        def data_received(self, data: bytes) -> None:
            if self._answering:
                self._read_while_answering += len(data)
                # Checked on every read, not once: websockets' own flow control may resume.
                if self._read_while_answering > READ_AHEAD_BYTES and self.transport.is_reading():
                    self.transport.pause_reading()
            if self._frames is None and waits_for_a_frame(self.protocol):
                self._frames = FrameReader(self.protocol.max_message_size)
            if self._frames is None:
                super().data_received(data)
                return
            for item in self._frames.feed(data):
                if isinstance(item, Message):
                    self._queue(item)
                else:
                    super().data_received(item)

        def _queue(self, message: Message) -> None:
            """Into websockets' queue, behind what websockets read before it."""
            if self.recv_messages.closed:
                return
            if message.payload is None:  # a text message: refused whatever it says
                self.recv_messages.put(Frame(Opcode.TEXT, b""))
                return
            self._payloads.append(message.payload)
            self.recv_messages.put(Frame(Opcode.BINARY, self._token))

    return RequestAtATimeConnection


def waits_for_a_frame(protocol) -> bool:
    """Whether websockets' protocol is open and its parser waits at a frame boundary with
    nothing buffered: the point from which a connection may read frames itself. False on any
    other state, or if a websockets release parses differently: websockets then reads all."""
    from websockets.protocol import State
    from websockets.streams import StreamReader

    if protocol.state is not State.OPEN or protocol.reader.buffer:
        return False
    generator = protocol.parser
    while getattr(generator, "gi_yieldfrom", None) is not None:
        generator = generator.gi_yieldfrom
    return getattr(generator, "gi_code", None) is StreamReader.at_eof.__code__
