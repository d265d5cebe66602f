"""A server connection that reads one request at a time.

websockets reads whatever a client sends and queues up to 16 frames before it stops reading:
a client that keeps sending while its request is computed (nothing of ours does: every
client waits for its reply) made the server hold 16 frames of up to `--max_frame_mb` each,
per connection. Here, from the moment a request is handed to the server until the server
waits for the next one, a connection reads at most `READ_AHEAD_BYTES` more (pongs, a close
frame, the start of the next request); beyond that it stops reading, and what the client
sends waits in the kernel's socket buffers, where TCP's flow control slows the client down.
"""

from __future__ import annotations

import functools

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

    class RequestAtATimeConnection(ServerConnection):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._answering = False
            self._read_while_answering = 0

        async def next_request(self):
            """The next frame the client sends; reads freely only while waiting for it."""
            self._answering = False
            if not self.transport.is_reading() and not self.transport.is_closing():
                self.transport.resume_reading()
            frame = await self.recv()
            self._answering, self._read_while_answering = True, 0
            return frame

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
            super().data_received(data)

    return RequestAtATimeConnection
