"""One WebSocket connection to a policy server, and what each way of failing means.

- the server cannot be reached (refused, unknown host, timeout): `PolicyUnreachableError`, a
  one-line error about the address, at startup; once a lost server has stayed away too long,
  `PolicyServerLostError` (the run stops, its finished episodes kept);
- the server refuses the api key (HTTP 401 or 403): `ConfigError` naming `--policy.api_key`;
- the connection drops or a request times out: `HarnessError`; the next request reconnects,
  with backoff, and the rollout re-runs the episodes from their seeds;
- the server answers with a text frame (openpi's way of reporting an exception, followed by
  close code 1011) or closes with 1011: `PolicyError` with the server's message.
"""

from __future__ import annotations

import http
import itertools
import logging
import time
from typing import Any

from lerobot.policies.websocket import wire
from lerobot.utils.errors import (
    ConfigError,
    HarnessError,
    PolicyError,
    PolicyServerLostError,
    PolicyUnreachableError,
)

logger = logging.getLogger(__name__)

INTERNAL_ERROR = 1011
"""The close code openpi's server (and ours) sends after an error frame."""
MESSAGE_TOO_BIG = 1009
MAX_REPLY_BYTES = 64 * 2**20
"""The largest frame taken from a server. Our server's largest reply (4096 rows handed a
50-step chunk of 32-d actions) is 26 MB; a broken or hostile server's 10 GB frame is refused
at its header instead of being read into this process."""
BACKOFF_S = (0.2, 0.5, 1.0, 2.0)
"""Waits between reconnection attempts; the last repeats."""


class ServerConnection:
    """Requests go out with `send`, replies come back in order with `receive`.

    A connection is opened on first use; after a failure it is dropped, and the next use
    reconnects with backoff for up to `reconnect_timeout_s`.
    """

    def __init__(
        self,
        uri: str,
        api_key: str | None = None,
        connect_timeout_s: float = 10.0,
        request_timeout_s: float = 600.0,
        reconnect_timeout_s: float = 300.0,
    ):
        self.uri, self.api_key = uri, api_key
        self.connect_timeout_s = connect_timeout_s
        self.request_timeout_s = request_timeout_s
        self.reconnect_timeout_s = reconnect_timeout_s
        self.metadata: dict[str, Any] = {}
        self._ws = None
        self._ever_connected = False

    def open(self) -> dict[str, Any]:
        """Connect now (one attempt); the server's metadata. Unreachable: one-line error."""
        self._connect_once()
        return self.metadata

    def send(self, message: dict[str, Any]) -> None:
        self._ensure_open()
        try:
            self._ws.send(wire.pack(message))
        except Exception as exc:
            raise self._lost(exc) from None

    def receive(self) -> dict[str, Any]:
        """The reply to the oldest request sent and not yet answered."""
        if self._ws is None:
            raise HarnessError(f"policy server at {self.uri}: connection lost before the reply")
        try:
            frame = self._ws.recv(timeout=self.request_timeout_s)
        except TimeoutError:
            raise self._lost(
                TimeoutError(f"no reply within {self.request_timeout_s:g} s (--policy.request_timeout_s)")
            ) from None
        except Exception as exc:
            raise self._lost(exc) from None
        if isinstance(frame, str):
            self.close()
            raise PolicyError(f"policy server error: {last_line(frame)}")
        try:
            reply = wire.unpack(frame)
        except wire.WireError as exc:
            self.close()
            raise PolicyError(f"policy server sent a malformed reply: {exc}") from None
        if not isinstance(reply, dict) or "actions" not in reply:
            self.close()
            raise PolicyError("policy server reply has no 'actions'")
        return reply

    def close(self) -> None:
        if self._ws is not None:
            ws, self._ws = self._ws, None
            ws.close()

    def _ensure_open(self) -> None:
        if self._ws is not None:
            return
        deadline = time.monotonic() + self.reconnect_timeout_s
        for attempt in itertools.count():
            try:
                self._connect_once()
                return
            except PolicyUnreachableError:
                if time.monotonic() >= deadline:
                    raise PolicyServerLostError(
                        f"--policy.host={self.uri}: the policy server did not come back within "
                        f"{self.reconnect_timeout_s:g} s (--policy.reconnect_timeout_s); finished episodes "
                        "are kept, continue with --eval.resume=true"
                    ) from None
                wait = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
                logger.info("policy server at %s not answering; retrying in %.1f s", self.uri, wait)
                time.sleep(min(wait, max(0.0, deadline - time.monotonic())))

    def _connect_once(self) -> None:
        from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
        from websockets.sync.client import connect

        headers = {"Authorization": f"Api-Key {self.api_key}"} if self.api_key else None
        try:
            ws = connect(
                self.uri,
                compression=None,
                max_size=MAX_REPLY_BYTES,
                additional_headers=headers,
                open_timeout=self.connect_timeout_s,
                # No keepalive pings: openpi's server blocks its event loop during inference (a
                # first call may compile for minutes) and would miss the pongs' deadline.
                ping_interval=None,
            )
        except InvalidURI as exc:
            raise ConfigError(f"--policy.host={self.uri}: not a valid ws:// address ({exc})") from None
        except InvalidStatus as exc:
            raise _refused(self.uri, exc.response.status_code) from None
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise PolicyUnreachableError(
                f"--policy.host/--policy.port: no policy server answers at {self.uri} ({describe(exc)}); "
                "start one (lerobot-serve-policy, or openpi's serve_policy.py) or fix the address"
            ) from None
        # Held open, not closed at the end of a `with`: websockets >= 17.1 warns about a
        # connection used outside its context, and `close` ends it here.
        ws.__enter__()
        try:
            metadata = wire.unpack(ws.recv(timeout=self.connect_timeout_s))
        except (OSError, TimeoutError, ConnectionClosed, wire.WireError) as exc:
            ws.close()
            raise PolicyUnreachableError(
                f"--policy.host/--policy.port: {self.uri} accepted the connection but sent no metadata "
                f"({describe(exc)}); is it a policy server?"
            ) from None
        self._ws, self.metadata = ws, metadata if isinstance(metadata, dict) else {}
        if self._ever_connected:
            logger.warning("policy server at %s: reconnected", self.uri)
        self._ever_connected = True

    def _lost(self, exc: BaseException) -> Exception:
        """The error a failed send or receive means; the connection is dropped either way."""
        code = getattr(getattr(exc, "rcvd", None), "code", None)
        reason = getattr(getattr(exc, "rcvd", None), "reason", "")
        self.close()
        if code == INTERNAL_ERROR:
            return PolicyError(f"policy server error: {reason or 'internal error (close code 1011)'}")
        if getattr(getattr(exc, "sent", None), "code", None) == MESSAGE_TOO_BIG:
            return PolicyError(
                f"policy server sent a reply over {MAX_REPLY_BYTES // 2**20} MiB, this client's limit"
            )
        return HarnessError(f"policy server at {self.uri}: connection lost ({describe(exc)})")


def _refused(uri: str, status: int) -> Exception:
    if status in (http.HTTPStatus.UNAUTHORIZED, http.HTTPStatus.FORBIDDEN):
        return ConfigError(
            f"--policy.api_key: the policy server at {uri} refused the connection (HTTP {status}); "
            "pass the key it was started with"
        )
    return PolicyUnreachableError(
        f"--policy.host/--policy.port: {uri} answered HTTP {status} instead of opening a WebSocket; "
        "is it a policy server?"
    )


def describe(exc: BaseException) -> str:
    """`Type: message` on one line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def last_line(text: str) -> str:
    """The line of a server's error text that says what happened: the last of a traceback."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(empty error message)"
