"""The server's connection class on real sockets, behind websockets' own server: what a client
that never waits for its replies can make it hold."""

import asyncio
import threading
import time

import pytest
from websockets.asyncio.server import serve
from websockets.sync.client import connect

from lerobot.serving.connection import request_at_a_time_connection

# websockets >= 17.1 warns about a connection opened outside a `with`, as this one is.
pytestmark = pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")

REQUEST = b"\x80" * 20  # small: as many of them as possible in each socket read


async def serve_slowly(port_ready: list, stop: threading.Event, queued: list[int]) -> None:
    """Answers each request 5 ms after reading it, noting how many frames wait behind it."""

    async def answer(ws) -> None:
        while True:
            await ws.next_request()
            queued.append(len(ws.recv_messages.frames))
            await asyncio.sleep(0.005)
            await ws.send(b"ok")

    connection = request_at_a_time_connection()
    async with serve(answer, "127.0.0.1", 0, compression=None, create_connection=connection) as server:
        port_ready.append(server.sockets[0].getsockname()[1])
        while not stop.is_set():
            await asyncio.sleep(0.05)


def test_a_client_pipelining_small_requests_cannot_grow_the_servers_queue():
    """Before, every request answered resumed reading, letting in another socket read of
    requests (about 10,000 of these) whatever was already queued: 1.1 million queued in 6 s."""
    port, stop, queued = [], threading.Event(), []
    server = threading.Thread(target=asyncio.run, args=(serve_slowly(port, stop, queued),), daemon=True)
    server.start()
    while not port:
        time.sleep(0.01)
    ws = connect(f"ws://127.0.0.1:{port[0]}", compression=None, max_queue=None)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        for _ in range(1000):
            ws.send(REQUEST)
    ws.socket.close()  # leaving what was sent unanswered
    stop.set()
    server.join(10)
    assert len(queued) > 20, "the server answered too few requests to tell"
    # At most what was read ahead: 64 KiB, plus one socket read of 256 KiB, of 26-byte frames.
    assert max(queued) < (64 + 256) * 2**10 // 26, f"{max(queued)} requests queued behind one"
