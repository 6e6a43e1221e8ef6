"""How many CPUs a hub student may use, for deployment and tooling (binder/start sizes BLAS to it at
each student's server start; scripts/test.sh and the benchmarks size their workers): on a hub
``os.cpu_count()`` is the node's. The student's share is the smallest cgroup v2 ``cpu.max`` quota
from the process's own cgroup up to the top of the hierarchy (a per-user limit sits in a nested
group: The Littlest JupyterHub's ``user.slice/…``; a container sees its own group as the top).
cgroup v1 is not read: there the affinity mask and ``LESSON_CPUS`` decide.

    python scripts/cpus.py      # prints usable_cpus(): a whole number, at least 1
    python "$course/cpus.py"    # the same in a hub image (binder/postBuild copies it there)
"""

import contextlib
import math
import os
from pathlib import Path

ROOT = Path("/")  # the tests pass a fixture tree instead
MOUNT = "sys/fs/cgroup"  # where cgroup v2 is mounted


def cgroup_cpus(root: Path = ROOT) -> float | None:
    """The smallest CPU quota from this process's cgroup up to the top; None when none is set."""
    try:
        lines = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    own = next((line[3:] for line in lines if line.startswith("0::")), None)  # the v2 line
    if own is None:
        return None
    top = root / MOUNT
    folder = top / own.lstrip("/")
    places = [place for place in (folder, *folder.parents) if place == top or top in place.parents]
    shares = []  # CPUs each quota allows: 1.5 = one and a half
    for place in places:
        with contextlib.suppress(OSError, ValueError, ZeroDivisionError):
            quota, period = (place / "cpu.max").read_text().split()[:2]
            if quota != "max":  # "max": this group sets no quota
                shares.append(int(quota) / int(period))
    return min(shares, default=None)


def usable_cpus(root: Path = ROOT) -> int:
    """Whole CPUs: the smallest of the affinity mask, the cgroup quota and ``LESSON_CPUS``; >= 1."""
    limits = [os.cpu_count() or 1]
    if hasattr(os, "sched_getaffinity"):  # not on macOS
        limits = [len(os.sched_getaffinity(0))]
    if (share := cgroup_cpus(root)) is not None:
        limits.append(math.floor(share))
    override = os.environ.get("LESSON_CPUS", "").strip()
    if override.isdigit() and int(override) > 0:
        limits.append(int(override))
    return max(1, min(limits))


if __name__ == "__main__":
    print(usable_cpus())
