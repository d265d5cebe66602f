"""The child process that runs LeRobot: started, asked, watched, stopped.

Requests and replies are frames on the child's stdin and stdout (`child.encode_frame`); its
stderr, where LeRobot logs and prints, is read by a thread that keeps the last lines, so a
child that dies says why in one line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lerobot.policies.lerobot_bridge import child
from lerobot.policies.lerobot_bridge.configuration_lerobot_bridge import child_env

logger = logging.getLogger(__name__)
CHILD_FILE = Path(child.__file__)
STDERR_LINES_KEPT = 200
CLOSE_WAIT_S = 10.0


class ChildGoneError(Exception):
    """The child exited, hung or broke the protocol; the message says how, in one line."""


class ChildFailedError(Exception):
    """The child answered with an error: LeRobot raised (the message is its one line)."""


@dataclass(frozen=True)
class ChildSettings:
    """What the child needs to load the policy as LeRobot's lerobot-eval would."""

    python: str
    checkpoint: str
    device: str | None
    use_amp: bool
    env_type: str | None

    def argv(self) -> list[str]:
        settings = {
            "checkpoint": self.checkpoint,
            "device": self.device,
            "use_amp": self.use_amp,
            "env_type": self.env_type,
        }
        return [self.python, "-u", str(CHILD_FILE), json.dumps(settings)]


class ChildProcess:
    """One running child; `request` sends a frame and waits for the answer."""

    def __init__(self, settings: ChildSettings, startup_timeout_s: float, request_timeout_s: float):
        self.request_timeout_s = request_timeout_s
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_LINES_KEPT)
        self._process = subprocess.Popen(
            settings.argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(),
            cwd=str(CHILD_FILE.parent.parent.parent.parent),  # never a folder that holds a `lerobot`
        )
        self._stderr_reader = threading.Thread(target=self._keep_stderr, daemon=True)
        self._stderr_reader.start()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._process.stdout, selectors.EVENT_READ)
        self.hello, _ = self._receive(startup_timeout_s)

    def request(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[dict, dict]:
        self._send(child.encode_frame(header, arrays))
        reply, reply_arrays = self._receive(self.request_timeout_s)
        return reply, reply_arrays

    def close(self) -> None:
        """Ask the child to exit; kill it when it does not."""
        if self._process.poll() is None:
            try:
                self._send(child.encode_frame({"op": "close"}))
                self._process.wait(timeout=CLOSE_WAIT_S)
            except (ChildGoneError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        self._selector.close()
        for stream in (self._process.stdin, self._process.stdout):
            with contextlib.suppress(OSError):
                stream.close()

    def last_error_line(self) -> str:
        """The child's last meaningful stderr line (a traceback's last line), or ''."""
        lines = [line for line in self._stderr_tail if line.strip()]
        return lines[-1].strip() if lines else ""

    @property
    def pid(self) -> int:
        return self._process.pid

    # -- the pipe --------------------------------------------------------------------------

    def _send(self, frame: bytes) -> None:
        try:
            self._process.stdin.write(frame)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise ChildGoneError(self._gone("exited")) from None

    def _receive(self, timeout_s: float) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        deadline = time.monotonic() + timeout_s
        header, arrays = child.decode_frame(lambda n: self._read_exact(n, deadline))
        if header.get("op") == "error":
            raise ChildFailedError(header.get("message") or "the LeRobot bridge failed")
        return header, arrays

    def _read_exact(self, n: int, deadline: float) -> bytes:
        fd = self._process.stdout.fileno()
        chunks, left = [], n
        while left:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not self._selector.select(timeout):
                self._process.kill()
                raise ChildGoneError(self._gone("did not answer in time and was stopped"))
            data = os.read(fd, min(left, 1 << 20))
            if not data:
                self._process.wait()
                raise ChildGoneError(self._gone(f"exited with code {self._process.returncode}"))
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)

    def _gone(self, what: str) -> str:
        self._stderr_reader.join(timeout=2.0)
        last = self.last_error_line()
        return f"the LeRobot bridge process {what}" + (f": {last}" if last else "")

    def _keep_stderr(self) -> None:
        for raw in iter(self._process.stderr.readline, b""):
            line = raw.decode(errors="replace").rstrip()
            self._stderr_tail.append(line)
            logger.debug("lerobot bridge: %s", line)
