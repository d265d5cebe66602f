"""The policy server: openpi's WebSocket protocol in front of any policy we can load.

Per connection: the server sends its metadata (a msgpack map) first, then answers each
request frame with a reply frame `{"actions": ..., "server_timing": {...}}`. A request it
cannot run gets one text frame with a one-line reason and close code 1011, as openpi's server
does (the traceback stays in this server's log); the server itself and every other connection
go on. `GET /healthz` answers 200. With an api key, a handshake without the header
`Authorization: Api-Key <key>` is refused with HTTP 401.

Threads: the asyncio event loop receives, decodes, batches and sends; the policy runs on one
inference thread, so the loop never waits for a model (openpi's server runs inference on its
loop, and its other connections stall meanwhile).
"""

from __future__ import annotations

import asyncio
import hmac
import http
import itertools
import logging
import math
import signal
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lerobot.configs.policies import CheckpointPolicyConfig
from lerobot.configs.types import PolicyFeature
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.websocket import wire
from lerobot.serving.batcher import RequestBatcher
from lerobot.serving.connection import request_at_a_time_connection
from lerobot.serving.requests import BadRequest, InferenceRequest, check_inputs, parse_request
from lerobot.serving.runner import PolicyRunner
from lerobot.utils.logging_utils import one_line

logger = logging.getLogger(__name__)

INTERNAL_ERROR = 1011


class PolicyServer:
    def __init__(
        self,
        policy: PreTrainedPolicy,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        api_key: str | None = None,
        max_batch: int = 32,
        batch_timeout_ms: float = 5.0,
        preprocessor=None,
        postprocessor=None,
        use_amp: bool = False,
        action_dim: int | None = None,
        allowed_origins: Sequence[str] = (),
        max_frame_mb: float | None = None,
    ):
        policy.save_rows([])  # a policy whose rows cannot move between batches fails here
        self.runner = PolicyRunner(policy, preprocessor, postprocessor, use_amp)
        self.host, self.port, self.api_key = host, port, api_key
        self.allowed_origins = frozenset(allowed_origins)
        self.max_batch, self.window_s = max_batch, batch_timeout_ms / 1000
        config = policy.config
        self.input_features = config.input_features if isinstance(config, CheckpointPolicyConfig) else {}
        self.empty_cameras = config.empty_cameras if isinstance(config, CheckpointPolicyConfig) else 0
        self.resizes_images = not isinstance(config, CheckpointPolicyConfig) or config.resizes_images()
        self.max_frame_bytes = (
            int(max_frame_mb * 2**20)
            if max_frame_mb is not None
            else default_frame_limit(self.input_features, max_batch)
        )
        self.metadata = server_metadata(policy, action_dim, max_batch)
        self._decoder: ThreadPoolExecutor | None = None
        self._sessions = itertools.count()
        self._open = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    # -- running -------------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Serve until SIGINT or SIGTERM."""
        asyncio.run(self._serve(on_ready=None, stop_on_signals=True))

    def start(self, timeout_s: float = 60.0) -> int:
        """Serve from a background thread (tests, benchmarks); the bound port."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            try:
                asyncio.run(self._serve(on_ready=ready.set, stop_on_signals=False))
            except BaseException as exc:  # reported to the caller of start()
                failure.append(exc)
                ready.set()

        self._thread = threading.Thread(target=main, name="lerobot-policy-server", daemon=True)
        self._thread.start()
        if not ready.wait(timeout_s) or failure:
            raise RuntimeError(f"policy server did not start: {failure[0] if failure else 'timeout'}")
        return self.port

    def stop(self) -> None:
        """Close every connection and stop a server started with `start`."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=30)

    async def _serve(self, on_ready, stop_on_signals: bool) -> None:
        from websockets.asyncio.server import serve

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        if stop_on_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._loop.add_signal_handler(signum, self._stop.set)
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lerobot-inference")
        self._decoder = ThreadPoolExecutor(max_workers=2, thread_name_prefix="lerobot-decode")
        self.batcher = RequestBatcher(
            self.runner.run, self.runner.forget, executor, self.max_batch, self.window_s, lambda: self._open
        )
        batching = asyncio.create_task(self.batcher.serve())
        try:
            async with serve(
                self._handle,
                self.host,
                self.port,
                compression=None,
                max_size=self.max_frame_bytes,  # a larger frame closes its connection (1009)
                create_connection=request_at_a_time_connection(),
                process_request=self._check_handshake,
            ) as server:
                self.port = server.sockets[0].getsockname()[1]
                logger.info(
                    "serving %s on ws://%s:%d (max_batch %d, batch window %g ms)%s",
                    self.metadata["policy_type"],
                    self.host,
                    self.port,
                    self.max_batch,
                    1000 * self.window_s,
                    ", api key required" if self.api_key else "",
                )
                if on_ready is not None:
                    on_ready()
                await self._stop.wait()
        finally:
            batching.cancel()
            executor.shutdown(wait=True, cancel_futures=True)
            self._decoder.shutdown(wait=True, cancel_futures=True)
        logger.info(
            "policy server stopped: %d requests in %d batches, up to %d clients in one batch",
            self.runner.n_requests,
            self.runner.n_batches,
            self.runner.most_clients,
        )

    # -- connections ---------------------------------------------------------------------

    def _check_handshake(self, connection, request):
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        origins = request.headers.get_all("Origin")
        if any(origin not in self.allowed_origins for origin in origins):
            # Browsers send an Origin; evaluators do not. Without this, any web page the user
            # opens could drive the policy (a WebSocket is not bound by the same-origin rule).
            logger.warning(
                "refused %s: web page origin %s", connection.remote_address, one_line(origins[0], 100)
            )
            return connection.respond(
                http.HTTPStatus.FORBIDDEN,
                "connections from web pages are refused unless --allowed_origins names them\n",
            )
        if self.api_key is not None:
            keys = request.headers.get_all("Authorization")
            if len(keys) > 1:
                logger.warning("refused %s: %d Authorization headers", connection.remote_address, len(keys))
                return connection.respond(http.HTTPStatus.BAD_REQUEST, "send one Authorization header\n")
            given = keys[0] if keys else ""
            if not hmac.compare_digest(given.encode(errors="replace"), f"Api-Key {self.api_key}".encode()):
                logger.warning("refused %s: missing or wrong api key", connection.remote_address)
                return connection.respond(
                    http.HTTPStatus.UNAUTHORIZED,
                    "missing or wrong api key (header Authorization: Api-Key <key>)\n",
                )
        return None

    async def _handle(self, ws) -> None:
        from websockets.exceptions import ConnectionClosed

        session = next(self._sessions)
        self._open += 1
        logger.info("client %d connected from %s", session, _address(ws))
        try:
            await ws.send(wire.pack(self.metadata))
            while True:
                reply = await self._answer(await ws.next_request(), session)
                if isinstance(reply, str):
                    await ws.send(reply)
                    await ws.close_after_error(INTERNAL_ERROR, "error reported in the previous frame")
                    break
                await ws.send(wire.pack(reply))
        except ConnectionClosed:
            pass
        finally:
            self._open -= 1
            self.batcher.changed.set()  # one fewer connection to wait for
            await self.batcher.forget(session)
            logger.info("client %d disconnected", session)

    async def _answer(self, frame: bytes | str, session: int) -> dict[str, Any] | str:
        """The reply to one frame, or the one-line error its client gets."""
        try:
            # Decoding a large frame takes milliseconds: in a thread, so that other clients
            # and health checks are answered meanwhile.
            request = await asyncio.get_running_loop().run_in_executor(
                self._decoder, self._parse, frame, session
            )
        except (wire.WireError, BadRequest) as exc:
            # The message may quote the client's key names or dtype strings: one bounded line.
            reason = one_line(str(exc))
            logger.warning("client %d: bad request: %s", session, reason)
            return f"bad request: {reason}"
        outcome, timing = await self.batcher.submit(request)
        if outcome.error is not None:
            return outcome.error
        if outcome.chunks is not None:  # the client takes several actions per row: one array each
            return {"actions": outcome.chunks, "server_timing": timing.to_dict()}
        actions = outcome.actions[:, None] if request.batched else outcome.actions
        return {"actions": actions, "server_timing": timing.to_dict()}

    def _parse(self, frame: bytes | str, session: int) -> InferenceRequest:
        if isinstance(frame, str):
            raise BadRequest("requests are binary msgpack frames, not text")
        request = parse_request(wire.unpack(frame), session)
        check_inputs(request, self.input_features, self.empty_cameras, self.resizes_images)
        return request


MIN_FRAME_LIMIT_BYTES = 16 * 2**20
"""The frame limit of a policy that declares no inputs, and the least of any."""


def default_frame_limit(features: Mapping[str, PolicyFeature], max_batch: int) -> int:
    """Twice the largest request the policy can use: `max_batch` rows of every declared input
    as float32 (images may come larger when the policy resizes them: at least 16 MiB)."""
    row = sum(4 * math.prod(feature.shape) for feature in features.values())
    return max(MIN_FRAME_LIMIT_BYTES, 2 * row * max_batch)


def server_metadata(policy: PreTrainedPolicy, action_dim: int | None, max_batch: int) -> dict[str, Any]:
    """The first frame of every connection: what is served and how to talk to it."""
    config = policy.config
    features = config.input_features if isinstance(config, CheckpointPolicyConfig) else {}
    if isinstance(config, CheckpointPolicyConfig) and config.action_feature is not None:
        action_dim = config.action_feature.shape[0]
    return {
        "server": "lerobot-serve-policy",
        "policy_type": config.type,
        "action_dim": action_dim,
        "horizon": 1,
        "max_batch": max_batch,
        "input_features": {
            key: {"type": str(ft.type), "shape": list(ft.shape)} for key, ft in features.items()
        },
    }


def _address(ws) -> str:
    address = getattr(ws, "remote_address", None)
    return f"{address[0]}:{address[1]}" if address else "?"
