"""Helpers for the remote-policy tests: a policy server in a thread, and a small stateful
policy whose actions depend on every observation its row saw in the current episode."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.policies.random.configuration_random import RandomConfig
from lerobot.serving.server import PolicyServer


class ObservationPolicy(PreTrainedPolicy):
    """Row i's action is a smooth function of the running sum of everything row i observed
    since its episode started (and of its seed), so a row served with another row's state,
    a stale state, or another observation shows at once. It raises on the state `fail_on`."""

    name = "observation_sum"

    def __init__(self, action_dim: int, fail_on: tuple[float, ...] | None = None):
        super().__init__(RandomConfig(device="cpu"))
        self.action_dim, self.fail_on = action_dim, fail_on
        self.scales = np.linspace(0.3, 1.7, action_dim)
        self.sums: dict[int, float] = {}
        self.calls = 0

    def reset(self, env_ids: Sequence[int] | None = None, seeds: Sequence[int] | None = None) -> None:
        if env_ids is None:
            self.sums.clear()
            return
        seeds = seeds if seeds is not None else [None] * len(env_ids)
        for row, seed in zip(env_ids, seeds, strict=True):
            self.sums[row] = 0.001 * (seed or 0)

    def select_action(self, batch) -> torch.Tensor:
        self.calls += 1
        tensors = {
            k: v for k, v in batch.items() if k.startswith("observation") and isinstance(v, torch.Tensor)
        }
        n_rows = next(iter(tensors.values())).shape[0]
        actions = np.empty((n_rows, self.action_dim), dtype=np.float32)
        for row in range(n_rows):
            if self.fail_on is not None and tuple(batch["observation.state"][row].tolist()) == self.fail_on:
                raise ValueError(f"refusing state {self.fail_on}")
            seen = sum(float(np.mean(t[row].cpu().numpy(), dtype=np.float64)) for t in tensors.values())
            self.sums[row] = self.sums.get(row, 0.0) + seen
            actions[row] = np.tanh(np.sin(self.sums[row] * self.scales))
        return torch.from_numpy(actions)

    def save_rows(self, rows):
        return [self.sums.get(row) for row in rows]

    def restore_rows(self, states):
        self.sums = {row: total for row, total in enumerate(states) if total is not None}


@contextlib.contextmanager
def running_server(policy: PreTrainedPolicy, **settings) -> Iterator[PolicyServer]:
    """A PolicyServer on a free loopback port, in a thread; `.port` says which."""
    server = PolicyServer(policy, port=settings.pop("port", 0), **settings)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving_process(
    checkpoint: Path | None,
    port: int,
    log_level: str = "WARNING",
    policy_flags: Sequence[str] = (),
    server_flags: Sequence[str] = (),
    log: Path | None = None,
) -> Iterator[subprocess.Popen]:
    """`lerobot-serve-policy` of `checkpoint` (or of `policy_flags`) on the CPU, in a process of
    its own, once it accepts connections; stopped at the end (SIGTERM: it logs its totals).
    `log` keeps its log; without it the log is dropped."""
    policy = [f"--policy.path={checkpoint}"] if checkpoint is not None else list(policy_flags)
    command = [str(Path(sys.executable).parent / "lerobot-serve-policy"), *policy]
    options = ["--policy.device=cpu", f"--port={port}", f"--log_level={log_level}", *server_flags]
    with open(log, "wb") if log is not None else contextlib.nullcontext(subprocess.DEVNULL) as err:
        server = subprocess.Popen([*command, *options], stderr=err)
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the policy server did not start")
            time.sleep(0.5)
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)


def memory_mb(pid: int, field: str) -> float:
    """`VmRSS` (now) or `VmHWM` (the peak since the last `reset_peak`) of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no {field} for process {pid}")


def reset_peak(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux 4.0+), so that a peak is one step's own."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
