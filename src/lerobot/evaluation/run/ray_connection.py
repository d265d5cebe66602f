"""Joining the Ray cluster a run uses (or starting one) and sizing the worker pool on it.

`--eval.ray_address` takes what `ray.init` takes: none starts an instance on this machine for
the run, `auto` or `host:port` joins a cluster's GCS from one of its nodes, `ray://host:10001`
drives a cluster through Ray Client from anywhere that reaches its head.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Mapping

import ray
from ray._private import ray_constants

from lerobot.configs.eval import EvalConfig, ray_address_endpoint
from lerobot.utils.errors import ConfigError

CPUS_PER_WORKER = 1
"""A worker steps its envs in its own process, one after the other. Env worker processes would
be restarted with every unit (its env is closed at the end of each): with 2 envs per worker
that made state-only runs 3x slower in benchmarks/ray_scaling.py. Parallelism comes from more
workers instead; several envs per worker batch the policy calls."""


def resolve_num_workers(eval_cfg: EvalConfig, resources: Mapping[str, float], n_units: int) -> int:
    """--eval.num_workers, or as many as the cluster's CPUs (one kept for the driver) and GPUs
    hold; never more than there are units."""
    auto = int(resources.get("CPU", 1) - 1) // CPUS_PER_WORKER
    if eval_cfg.gpus_per_worker:
        auto = min(auto, int(resources.get("GPU", 0) / eval_cfg.gpus_per_worker))
    return max(1, min(eval_cfg.num_workers or auto or 1, n_units))


ANSWER_TIMEOUT_S = 10.0
"""How long the head's port may take to accept a connection before the address counts as wrong."""


def require_cluster_answers(eval_cfg: EvalConfig) -> None:
    """One line now for an address nothing listens on: ray.init would retry it twenty times,
    for up to a minute each, before saying anything."""
    endpoint = ray_address_endpoint(eval_cfg.ray_address) if eval_cfg.ray_address else None
    if endpoint is None:
        return
    try:
        with socket.create_connection(endpoint, timeout=ANSWER_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"--eval.ray_address={eval_cfg.ray_address}: nothing answers at {endpoint[0]}:{endpoint[1]} "
            f"({reason}); start the cluster's head there (ray start --head) or fix the address"
        ) from None


def connect(eval_cfg: EvalConfig) -> bool:
    """Join `--eval.ray_address` or start a local Ray; True when this call started Ray.

    An already initialized Ray (a notebook, a test) is used as it is and left running.
    """
    if ray.is_initialized():
        return False
    use_the_driver_interpreter()
    address, local = eval_cfg.ray_address, {}
    # A new instance on this machine (unless RAY_ADDRESS names a cluster, which ray.init then
    # joins): honour an explicit worker count even above the number of cores. `local`: without
    # it ray.init would join a cluster that `ray start` once ran here (its address file outlives
    # a crash), which the flag's None does not mean.
    if address is None and not os.environ.get("RAY_ADDRESS"):
        num_cpus = max(os.cpu_count() or 1, eval_cfg.num_workers * CPUS_PER_WORKER)
        address, local = "local", {"num_cpus": num_cpus, "include_dashboard": False}
    # ray.init replaces the SIGTERM handler with sys.exit; keep lerobot-eval's, which stops the
    # run cleanly and writes the partial results.
    sigterm_handler = signal.getsignal(signal.SIGTERM)
    try:
        ray.init(address=address, logging_level=logging.WARNING, **local)
    except BaseException:
        # A Ray Client init that fails part-way leaves this process's Ray half set up, and
        # every later ray.init in it (a notebook, tests) fails on an assertion: reset it.
        ray.shutdown()
        raise
    if threading.current_thread() is threading.main_thread() and sigterm_handler is not None:
        signal.signal(signal.SIGTERM, sigterm_handler)
    return True


def check_cluster_resources(eval_cfg: EvalConfig) -> None:
    """Fail now rather than wait forever for an actor that no node can host."""
    resources = ray.cluster_resources()
    gpus = resources.get("GPU", 0.0)
    if eval_cfg.gpus_per_worker > gpus:
        raise ConfigError(
            f"--eval.gpus_per_worker={eval_cfg.gpus_per_worker:g}: the Ray cluster has {gpus:g} GPUs"
        )


def use_the_driver_interpreter() -> None:
    """Turn off Ray's `uv run` integration unless RAY_ENABLE_UV_RUN_RUNTIME_ENV asks for it.

    When the driver runs under `uv run`, Ray re-creates that command for every worker in a
    packaged copy of the working directory; with our install (a venv filled by `uv pip install`)
    the copy gets an empty .venv without ray, every worker dies at import and Ray retries
    forever. Workers must use the driver's own interpreter. Ray reads the setting once, when it
    is imported, so the flag it keeps is set here as well as the variable its children read.
    """
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    enabled = os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"].strip().lower() in ("1", "true", "yes", "on")
    ray_constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = enabled
