"""A healthy client beside abusive ones: does lerobot-serve-policy stay responsive and small?

    .venv/bin/python benchmarks/server_soak.py

Starts `lerobot-serve-policy` (the tests' ACT checkpoint, which LeRobot 0.6.1 saved; CPU) in
its own process and a healthy client that asks for an action every 20 ms. Then, one after
another, each abuse case of issue 33 runs on other connections while the healthy client
keeps asking. Prints, per case, what the abuser got back, the healthy client's worst latency
during the case (against its median before any abuse) and how much the server grew during it:
its peak RSS (VmHWM, reset through /proc/<pid>/clear_refs before each case) over its RSS at
the start of the case, against the size of the frame the server read. Goal: no case stalls
the healthy client by more than 100 ms, nor grows the server by more than twice the frame it
read (a frame over the limit is refused at its header, unread).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgpack
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BIN = Path(sys.executable).parent
FRAME_LIMIT_MB = 16
"""The server's frame limit for the tests' ACT (`default_frame_limit`: its least, 16 MiB)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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

    good = observation()
    return {
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


def memory_mb(pid: int, field: str) -> float:
    """`VmRSS` (now) or `VmHWM` (the peak since the last `reset_peak`) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux 4.0+), so each case's peak is its own."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


@contextlib.contextmanager
def serving(checkpoint: Path, port: int, log_level: str = "WARNING"):
    """`lerobot-serve-policy` of `checkpoint` on this machine's CPU, in its own process, once
    it accepts connections; stopped at the end."""
    server = subprocess.Popen(
        [
            str(BIN / "lerobot-serve-policy"),
            f"--policy.path={checkpoint}",
            "--policy.device=cpu",
            f"--port={port}",
            f"--log_level={log_level}",
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.5)
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    from tests.policies.checkpoints import materialize

    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = materialize("act", Path(tmp) / "act")
        with serving(checkpoint, port, "ERROR") as server:
            healthy = HealthyClient(port)
            healthy.start()
            time.sleep(3.0)
            baseline = statistics.median(latency for _, latency in healthy.samples)
            print(
                f"server pid {server.pid}, healthy client median {1000 * baseline:.1f} ms, "
                f"RSS {memory_mb(server.pid, 'VmRSS'):.0f} MB before abuse, frame limit {FRAME_LIMIT_MB} MiB"
            )
            print("| case | the abuser got | healthy worst ms (extra) | frame read MB | server growth MB |")
            print("| --- | --- | --- | --- | --- |")
            spawn = mp.get_context("spawn")
            answers = spawn.Queue()
            for name in abuse_cases(port):
                reset_peak(server.pid)
                before = memory_mb(server.pid, "VmRSS")
                abuser = spawn.Process(target=run_case, args=(name, port, answers))
                abuser.start()
                started = time.perf_counter()  # the abuser's start-up is not its abuse, but counts
                got, frame_bytes = answers.get(timeout=300)
                ended = time.perf_counter()
                abuser.join(timeout=30)
                time.sleep(0.2)
                worst = healthy.worst_between(started, ended)
                growth = memory_mb(server.pid, "VmHWM") - before
                read = frame_bytes / 1e6 if frame_bytes <= FRAME_LIMIT_MB * 2**20 else 0.0
                print(
                    f"| {name} | {got.replace('|', '/')} | {1000 * worst:.0f} ({1000 * (worst - baseline):+.0f}) "
                    f"| {read:.1f} | {growth:+.1f} ({growth / read if read else 0:.2f}x) |",
                    flush=True,
                )
            healthy.stop.set()
            healthy.join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
