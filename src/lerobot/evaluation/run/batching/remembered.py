"""Batch sizes measured on this machine (`--eval.measure_batch_size=true`), remembered per workload.

What saturates a machine depends on what runs on it: a state-only MuJoCo env steps in a
fraction of a millisecond and wants several envs per core, 480x480 renders on a GPU box want
as many envs as the GPU can render for, a VLA wants the batch its GPU call amortises best. No
rule of thumb over the core count gets all of them, so a measurement is kept, keyed by what
it depends on: the env's settings, the policy type and its device, and the machine (cores,
CPU and GPU model; not the host name, so the nodes of one kind in a cluster share a file on a
shared home). The file is a list of entries, one per workload, rewritten whole.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import platform
from pathlib import Path
from typing import Any

from lerobot.utils.cache_dir import lerobot_cache_dir
from lerobot.utils.io import write_json_atomic
from lerobot.utils.threads import usable_cores

logger = logging.getLogger(__name__)

FILENAME = "eval_batch_sizes.json"


@dataclasses.dataclass(frozen=True)
class BatchRate:
    """Env steps per second measured at one batch size and grouping."""

    batch_size: int
    env_steps_per_s: float
    row_groups: int = 1
    independent_rows: bool = False


@dataclasses.dataclass(frozen=True)
class RememberedBatchSize:
    batch_size: int
    row_groups: int
    measured_at: str
    rates: tuple[BatchRate, ...]
    """Everything measured, in the order measured."""
    independent_rows: bool = False


def batch_sizes_file() -> Path:
    return lerobot_cache_dir() / FILENAME


def machine_description(device: str) -> dict[str, Any]:
    """What a measurement holds for: the cores this process may use, the CPU and, for a policy
    on a GPU, the GPU's model."""
    described: dict[str, Any] = {"cores": usable_cores(), "cpu": _cpu_model()}
    if device.startswith("cuda"):
        import torch

        described["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return described


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def remembered_batch_size(workload: dict[str, Any]) -> RememberedBatchSize | None:
    """The batch size measured for `workload` on this machine, or None."""
    for entry in _read_entries():
        if entry.get("workload") == workload:
            try:
                return RememberedBatchSize(
                    batch_size=int(entry["batch_size"]),
                    row_groups=int(entry["row_groups"]),
                    measured_at=str(entry["measured_at"]),
                    rates=tuple(
                        BatchRate(
                            int(r["batch_size"]),
                            float(r["env_steps_per_s"]),
                            int(r["row_groups"]),
                            bool(r.get("independent_rows", False)),
                        )
                        for r in entry["measured"]
                    ),
                    independent_rows=bool(entry.get("independent_rows", False)),
                )
            except (KeyError, TypeError, ValueError):
                return None
    return None


def remember_batch_size(workload: dict[str, Any], remembered: RememberedBatchSize) -> Path:
    """Keep `remembered` for `workload`, replacing an earlier measurement of it."""
    entries = [entry for entry in _read_entries() if entry.get("workload") != workload]
    entries.append(
        {
            "workload": workload,
            "batch_size": remembered.batch_size,
            "row_groups": remembered.row_groups,
            "independent_rows": remembered.independent_rows,
            "measured_at": remembered.measured_at,
            "measured": [dataclasses.asdict(rate) for rate in remembered.rates],
        }
    )
    return write_json_atomic(entries, batch_sizes_file(), hint="set LEROBOT_CACHE_DIR to a writable folder")


def _read_entries() -> list[dict[str, Any]]:
    """The file's entries; none when it is missing. A file that is not ours (or damaged) is
    ignored with a warning, and replaced by the next measurement: it only ever saves time."""
    path = batch_sizes_file()
    try:
        entries = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        logger.warning("ignoring %s: %s", path, exc)
        return []
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        logger.warning("ignoring %s: not a list of measurements", path)
        return []
    return entries
