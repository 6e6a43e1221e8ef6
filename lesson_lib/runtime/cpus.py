"""How many CPUs this kernel may use: on a hub ``os.cpu_count()`` is the node's. The student's
share is the smallest CPU quota from the process's own cgroup up to the top of its hierarchy (a
per-user limit sits in a nested group: The Littlest JupyterHub's ``user.slice/…``, a container's
``/docker/<id>``): cgroup v2's ``cpu.max``, v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``."""

import math
import os
from pathlib import Path

ROOT = Path("/")  # the tests pass a fixture tree instead
# (mount root, mount point) when mountinfo names no cgroup2 mount
V2_DEFAULT = ("/", "/sys/fs/cgroup")


def _cgroup_mounts(root: Path) -> list[tuple[str, str, str, set[str]]]:
    """(fstype, mount root, mount point, super options) of each cgroup file system mounted."""
    try:
        text = (root / "proc/self/mountinfo").read_text()
    except OSError:
        return []
    mounts = []
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        tail = right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            mounts.append((tail[0], fields[3], fields[4], set(tail[2].split(","))))
    return mounts


def _places(version: str, mounts: list) -> list[tuple[str, str]]:
    """(mount root, mount point) of the v2 hierarchy, or of v1's that holds the cpu controller."""
    if version == "v2":
        return [(m[1], m[2]) for m in mounts if m[0] == "cgroup2"] or [V2_DEFAULT]
    return [(m[1], m[2]) for m in mounts if m[0] == "cgroup" and "cpu" in m[3]]


def cgroup_folders(root: Path = ROOT) -> list[tuple[str, Path, Path]]:
    """(version, this process's cgroup folder, the top of its hierarchy): cgroup v2, v1's cpu."""
    try:
        lines = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    mounts = _cgroup_mounts(root)
    found = []
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:
            version = "v2"
        elif "cpu" in controllers.split(","):
            version = "v1"
        else:
            continue
        for mount_root, mount_point in _places(version, mounts):
            inside = os.path.relpath(path, mount_root)
            if inside.startswith(".."):
                continue  # a mount of another part of the hierarchy
            top = root / mount_point.lstrip("/")
            found.append((version, top / inside, top))
    return found


def _share(version: str, folder: Path) -> float | None:
    """CPUs the quota in ``folder`` allows (1.5 = one and a half), or None when it sets none."""
    try:
        if version == "v2":
            quota, period = (folder / "cpu.max").read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
        return None if quota < 0 else quota / period  # -1: no quota
    except (OSError, ValueError, ZeroDivisionError):
        return None


def cgroup_cpus(root: Path = ROOT) -> float | None:
    """The smallest CPU quota from this process's cgroup up to the top; None when none is set."""
    shares = []
    for version, folder, top in cgroup_folders(root):
        for place in (folder, *folder.parents):
            if (share := _share(version, place)) is not None:
                shares.append(share)
            if place == top or top not in place.parents:
                break
    return min(shares, default=None)


def usable_cpus(root: Path = ROOT) -> int:
    """Whole CPUs: the smallest of the affinity mask, the cgroup quota and ``LESSON_CPUS``; >= 1."""
    limits = [os.cpu_count() or 1]
    if hasattr(os, "sched_getaffinity"):  # not on macOS
        limits = [len(os.sched_getaffinity(0))]
    if (share := cgroup_cpus(root)) is not None:
        limits.append(max(1, math.floor(share)))
    override = os.environ.get("LESSON_CPUS", "").strip()
    if override.isdigit() and int(override) > 0:
        limits.append(int(override))
    return max(1, min(limits))
