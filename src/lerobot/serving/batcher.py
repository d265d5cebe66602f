"""Cross-client batching: requests of many connections become one policy call.

A batch is sent to the inference thread when every open connection has a request waiting
(no one else can join, so waiting longer only adds latency), when it holds `max_batch` rows,
or `window_s` after its oldest request arrived, whichever comes first. While the policy runs,
the next batch gathers; the window then counts from the end of that call, not from the
arrival of requests that waited through it: the clients just answered need a moment to step
their envs and ask again, and without it two clients fall into taking turns, one call each. A batch holds at most one request per connection (a connection's
next request must see the state its previous one left) and only requests of the same keys
and shapes (so they stack); the others wait for the next batch. The event loop only waits
on the inference thread, so it keeps receiving and answering while the policy computes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

from lerobot.serving.requests import InferenceRequest
from lerobot.serving.runner import Outcome


@dataclass(frozen=True)
class BatchTiming:
    """What `server_timing` tells a client about the call its request went through."""

    infer_ms: float
    queue_ms: float
    batch_rows: int
    batch_requests: int

    def to_dict(self) -> dict[str, float | int]:
        return {
            "infer_ms": self.infer_ms,
            "queue_ms": self.queue_ms,
            "batch_rows": self.batch_rows,
            "batch_requests": self.batch_requests,
        }


@dataclass
class _Waiting:
    request: InferenceRequest
    future: asyncio.Future
    arrived: float


class RequestBatcher:
    def __init__(
        self,
        run: Callable[[Sequence[InferenceRequest]], list[Outcome]],
        forget: Callable[[int], None],
        executor: Executor,
        max_batch: int,
        window_s: float,
        open_sessions: Callable[[], int],
    ):
        self.run, self.forget_session, self.executor = run, forget, executor
        self.max_batch, self.window_s, self.open_sessions = max_batch, window_s, open_sessions
        self.waiting: list[_Waiting] = []
        self.changed = asyncio.Event()
        self.last_call_ended = 0.0

    async def submit(self, request: InferenceRequest) -> tuple[Outcome, BatchTiming]:
        """The request's outcome, once the batch it joined has run."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.waiting.append(_Waiting(request, future, time.monotonic()))
        self.changed.set()
        return await future

    async def forget(self, session: int) -> None:
        """Drop a closed connection's rows, after any call that still uses them."""
        await asyncio.get_running_loop().run_in_executor(self.executor, self.forget_session, session)

    async def serve(self) -> None:
        """Form and run batches until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            await self._wait_for_requests()
            await self._wait_for_batch()
            batch = self._take_batch()
            if not batch:
                continue
            started = time.monotonic()
            outcomes = await loop.run_in_executor(self.executor, self.run, [w.request for w in batch])
            self.last_call_ended = time.monotonic()
            infer_ms = 1000 * (self.last_call_ended - started)
            rows = sum(len(w.request.rows) for w in batch)
            for waiting, outcome in zip(batch, outcomes, strict=True):
                timing = BatchTiming(infer_ms, 1000 * (started - waiting.arrived), rows, len(batch))
                if not waiting.future.done():
                    waiting.future.set_result((outcome, timing))

    async def _wait_for_requests(self) -> None:
        while not self._live_waiting():
            self.changed.clear()
            await self.changed.wait()

    async def _wait_for_batch(self) -> None:
        deadline = max(self._live_waiting()[0].arrived, self.last_call_ended) + self.window_s
        while not self._full():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except TimeoutError:
                return

    def _full(self) -> bool:
        waiting = self._live_waiting()
        sessions = {w.request.session for w in waiting}
        rows = sum(len(w.request.rows) for w in waiting)
        return rows >= self.max_batch or len(sessions) >= self.open_sessions()

    def _take_batch(self) -> list[_Waiting]:
        waiting = self._live_waiting()
        if not waiting:
            return []
        first = waiting[0]
        batch, sessions, rows = [first], {first.request.session}, len(first.request.rows)
        for candidate in waiting[1:]:
            request = candidate.request
            if request.session in sessions or request.signature != first.request.signature:
                continue
            if rows + len(request.rows) > self.max_batch:
                continue
            batch.append(candidate)
            sessions.add(request.session)
            rows += len(request.rows)
        taken = {id(w) for w in batch}
        self.waiting = [w for w in waiting if id(w) not in taken]
        return batch

    def _live_waiting(self) -> list[_Waiting]:
        """Waiting requests whose client still waits (a closed connection cancels its own)."""
        self.waiting = [w for w in self.waiting if not w.future.done()]
        return self.waiting
