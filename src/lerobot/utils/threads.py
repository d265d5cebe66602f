"""CPU threads: torch's OpenMP pool on the cores that simulators render on.

Torch runs each large CPU op on an OpenMP thread pool. By default (libgomp, which torch ships)
a thread that finishes its share keeps spinning for a while before it sleeps. Beside Mesa's
llvmpipe render threads, env worker processes or any other job, a spinning thread holds a core
that another thread needs, and the next op's barrier waits for whichever thread was
descheduled. On a busy 2-core machine that made an ACT chunk (ResNet-18 on a 480x480 frame)
take 2.6-5.1 s with two threads against 0.8-1.5 s with one; told to sleep at once
(`OMP_WAIT_POLICY=PASSIVE`), the same two threads took 1.1-1.4 s. libgomp reads the setting
when it is loaded, that is when torch is first imported, so the command-line tools set it
before they import torch.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

WAIT_POLICY = "OMP_WAIT_POLICY"


def prefer_passive_omp_waits() -> bool:
    """Let OpenMP threads sleep as soon as they are idle, unless `OMP_WAIT_POLICY` is already
    set; True when the setting is in force for this process (torch not yet imported)."""
    if "torch" in sys.modules:
        logger.debug("torch is already imported: %s stays %r", WAIT_POLICY, os.environ.get(WAIT_POLICY))
        return os.environ.get(WAIT_POLICY, "").upper() == "PASSIVE"
    os.environ.setdefault(WAIT_POLICY, "PASSIVE")
    return os.environ[WAIT_POLICY].upper() == "PASSIVE"


CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cores(cgroup_cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """The cores this process may run on: its CPU affinity (taskset, a cluster's cpuset),
    capped by a cgroup v2 CPU quota (`docker run --cpus=2` on a big host), at least 1.

    `os.cpu_count()` counts the host's cores whatever the container is allowed: choices that
    only pay when each process has a core of its own (a worker watching its pipe instead of
    sleeping) would burn the quota there.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = cgroup_cpu_max.read_text().split()[:2]
        if quota != "max":
            cores = min(cores, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 limit to read: the affinity stands
    return max(1, cores)
