"""How many CPUs this kernel may really use: affinity and the cgroup quota, not the machine's count.

On a JupyterHub a student's server sees every core of the node in ``os.cpu_count()`` but may use
only its share (a CPU affinity mask, or a cgroup ``cpu.max`` quota). Sizing worker pools or BLAS
threads to the node's count makes a class of students fight over the same cores.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["usable_cpus"]

_CGROUP_ROOT = Path("/sys/fs/cgroup")


def _affinity_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS has no sched_getaffinity
        return os.cpu_count() or 1


def _quota_cpus(root: Path) -> float | None:
    """CPUs allowed by a cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``; None when unlimited or unknown."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        if quota != "max":
            return int(quota) / int(period)
        return None
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


def usable_cpus(cgroup_root: Path = _CGROUP_ROOT) -> int:
    """Whole CPUs this process may use: the smallest of affinity, cgroup quota and ``LESSON_CPUS``; at least 1."""
    limits = [_affinity_cpus()]
    quota = _quota_cpus(cgroup_root)
    if quota is not None:
        limits.append(max(1, math.floor(quota)))
    override = os.environ.get("LESSON_CPUS", "").strip()
    if override.isdigit() and int(override) > 0:
        limits.append(int(override))
    return max(1, min(limits))
