"""A healthy client beside abusive ones: does lerobot-serve-policy stay responsive and small?

    .venv/bin/python benchmarks/server_soak.py

Starts `lerobot-serve-policy` (the tests' ACT checkpoint, which LeRobot 0.6.1 saved; CPU) in
its own process and a healthy client that asks for an action every 20 ms. Then, one after
another, each abuse case of issue 33 runs on other connections while the healthy client
keeps asking. Prints, per case, what the abuser got back, the healthy client's worst latency
during the case (against its median before any abuse) and how much the server grows during
the case: its peak RSS (VmHWM, reset through /proc/<pid>/clear_refs before each case) over
its RSS at the start of the case, against the size of the frame the server read. Memory is
measured in a second pass with the server otherwise idle: serving the healthy client grows
and shrinks it by 10-20 MB at its own rhythm (the first case, which sends nothing, shows it).
Goal: no case stalls the healthy client by more than 100 ms, nor grows the server by more
than twice its largest accepted frame (a frame over the limit is refused at its header,
unread).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgpack
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
FRAME_LIMIT_MB = 16
"""The server's frame limit for the tests' ACT (`default_frame_limit`: its least, 16 MiB)."""


def observation() -> dict:
    rng = np.random.default_rng(0)
    return {
        "observation.image": rng.integers(0, 256, (96, 96, 3), dtype=np.uint8),
        "observation.state": rng.normal(size=4).astype(np.float32),
    }


def tagged(data: bytes, dtype: str, shape: list) -> dict:
    return {b"__ndarray__": True, b"data": data, b"dtype": dtype, b"shape": shape}


def run_case(name: str, port: int, answers) -> None:
    """In a process of its own, so that building a 300 MiB frame never starves the healthy
    client of this process's interpreter."""
    logging.getLogger("websockets").setLevel(logging.CRITICAL)  # its traceback of a dropped peer
    answers.put(abuse_cases(port)[name]())


def abuse_cases(port: int) -> dict[str, callable]:
    from websockets.sync.client import connect

    uri = f"ws://127.0.0.1:{port}"

    def send(frame: bytes | str, **kwargs) -> tuple[str, int]:
        """(what the abuser got, the frame's size)."""
        try:
            with connect(uri, compression=None, max_size=None, open_timeout=30, **kwargs) as ws:
                ws.recv()
                ws.send(frame)
                answer = ws.recv(timeout=60)
                return (answer[:100] if isinstance(answer, str) else "answered"), len(frame)
        except Exception as exc:  # what the abuser sees is the result
            return f"{type(exc).__name__}: {str(exc)[:90]}", len(frame)

    def send_behind_a_request(junk: bytes, count: int) -> tuple[str, int]:
        """A request, then `count` more frames without waiting for its reply."""
        try:
            with connect(uri, compression=None, max_size=None, open_timeout=30) as ws:
                ws.recv()
                ws.send(
                    msgpack.packb(
                        {k: tagged(v.tobytes(), v.dtype.str, list(v.shape)) for k, v in good.items()}
                    )
                )
                for _ in range(count):
                    ws.send(junk)
                answer = ws.recv(timeout=60)
                return ("answered" if isinstance(answer, bytes) else answer[:100]), len(junk)
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc)[:90]}", len(junk)

    def nothing() -> tuple[str, int]:
        """The control: how much the server grows serving the healthy client alone."""
        time.sleep(2.0)
        return "(nothing sent)", 0

    good = observation()
    return {
        "none (the healthy client alone, 2 s)": nothing,
        "32 MiB of empty maps": lambda: send(b"\x80" * (32 * 2**20)),
        "15 MiB of nested empty maps": lambda: send(msgpack.packb([[{}] * 1000] * 15_000)),
        "300 MiB array": lambda: send(
            msgpack.packb({"observation.state": tagged(b"\0" * (300 * 2**20), "<f4", [300 * 2**18])})
        ),
        "1 MB dtype string": lambda: send(
            msgpack.packb({"observation.state": tagged(b"\0" * 16, "<" + "f" * 2**20, [4])})
        ),
        "12 MiB task string": lambda: send(
            msgpack.packb(
                {
                    **{k: tagged(v.tobytes(), v.dtype.str, list(v.shape)) for k, v in good.items()},
                    "prompt": "x" * (12 * 2**20),
                }
            )
        ),
        "key with a newline": lambda: send(
            msgpack.packb({"observation.state\n17:00:00 INFO forged": tagged(b"\0" * 16, "<f4", [4])})
        ),
        "10 MiB unknown array": lambda: send(
            msgpack.packb(
                {
                    **{k: tagged(v.tobytes(), v.dtype.str, list(v.shape)) for k, v in good.items()},
                    "observation.extra": tagged(b"\0" * (10 * 2**20), "<f4", [10 * 2**18]),
                }
            )
        ),
        "wrong image size (384x384)": lambda: send(
            msgpack.packb(
                {
                    "observation.image": tagged(b"\0" * (384 * 384 * 3), "|u1", [384, 384, 3]),
                    "observation.state": tagged(good["observation.state"].tobytes(), "<f4", [4]),
                }
            )
        ),
        "16 frames of 15 MiB behind a request": lambda: send_behind_a_request(b"\0" * (15 * 2**20), 16),
        "two Authorization headers": lambda: send(
            b"", additional_headers=[("Authorization", "a"), ("Authorization", "b")]
        ),
        "a web page's Origin": lambda: send(b"", origin="https://evil.example"),
    }


class HealthyClient(threading.Thread):
    """Asks for an action every 20 ms and keeps (time, latency) of each answer."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        from openpi_client.websocket_client_policy import WebsocketClientPolicy

        self.client = WebsocketClientPolicy("127.0.0.1", port)
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        obs = observation()
        while not self.stop.is_set():
            started = time.perf_counter()
            self.client.infer(obs)
            self.samples.append((started, time.perf_counter() - started))
            time.sleep(0.02)

    def worst_between(self, start: float, end: float) -> float:
        inside = [latency for at, latency in self.samples if start <= at + latency and at <= end]
        return max(inside, default=0.0)


def main() -> int:
    from tests.policies.checkpoints import materialize
    from tests.remote import free_port, memory_mb, reset_peak, serving_process

    port = free_port()
    spawn = mp.get_context("spawn")
    answers = spawn.Queue()

    def abuse(name: str) -> tuple[str, int, float, float]:
        """(what the abuser got, the frame's size, when it started, when it ended)."""
        abuser = spawn.Process(target=run_case, args=(name, port, answers))
        abuser.start()
        started = time.perf_counter()  # the abuser's start-up is not its abuse, but counts
        got, frame_bytes = answers.get(timeout=300)
        ended = time.perf_counter()
        abuser.join(timeout=30)
        time.sleep(0.2)
        return got, frame_bytes, started, ended

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = materialize("act", Path(tmp) / "act")
        with serving_process(checkpoint, port, "ERROR") as server:
            healthy = HealthyClient(port)
            healthy.start()
            time.sleep(3.0)
            baseline = statistics.median(latency for _, latency in healthy.samples)
            print(
                f"server pid {server.pid}, healthy client median {1000 * baseline:.1f} ms, "
                f"RSS {memory_mb(server.pid, 'VmRSS'):.0f} MB before abuse, frame limit {FRAME_LIMIT_MB} MiB"
            )
            latencies = {}
            for name in abuse_cases(port):
                got, _, started, ended = abuse(name)
                latencies[name] = (got, healthy.worst_between(started, ended))
            healthy.stop.set()
            healthy.join(timeout=5)
            # Memory, each case again with the server otherwise idle: the healthy client's
            # inference takes and gives back 10-20 MB at its own rhythm, which would be counted.
            print("| case | the abuser got | healthy worst ms (extra) | frame read MB | server growth MB |")
            print("| --- | --- | --- | --- | --- |")
            limit_mb = FRAME_LIMIT_MB * 2**20 / 1e6
            for name, (got, worst) in latencies.items():
                reset_peak(server.pid)
                before = memory_mb(server.pid, "VmRSS")
                _, frame_bytes, _, _ = abuse(name)
                growth = memory_mb(server.pid, "VmHWM") - before
                read = frame_bytes / 1e6 if frame_bytes <= FRAME_LIMIT_MB * 2**20 else 0.0
                print(
                    f"| {name} | {got.replace('|', '/')} | {1000 * worst:.0f} ({1000 * (worst - baseline):+.0f}) "
                    f"| {read:.1f} | {growth:+.1f} ({growth / read if read else 0:.2f}x read, "
                    f"{growth / limit_mb:.2f}x limit) |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
