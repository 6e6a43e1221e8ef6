"""How many CPUs this kernel may use: on a hub ``os.cpu_count()`` is the node's, the student's share is smaller."""

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def usable_cpus() -> int:
    """Whole CPUs: the smallest of the affinity mask, a cgroup v2 ``cpu.max`` quota and ``LESSON_CPUS``; at least 1."""
    limits = [len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1]  # not macOS
    try:
        quota, period = (CGROUP / "cpu.max").read_text().split()[:2]
        if quota != "max":
            limits.append(max(1, math.floor(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota (on a cgroup v1 hub, set LESSON_CPUS in the spawner)
    override = os.environ.get("LESSON_CPUS", "").strip()
    if override.isdigit() and int(override) > 0:
        limits.append(int(override))
    return max(1, min(limits))
