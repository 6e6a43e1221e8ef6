"""How much memory this kernel may still touch. On a hub the cgroup kills the kernel at its limit,
long before the node's ``MemAvailable`` runs out, and overcommit means numpy sees no
``MemoryError``: the kernel's size guard (lesson_lib.checks) asks here."""

import contextlib
from pathlib import Path

MEMINFO = Path("/proc/meminfo")
CGROUP = Path("/sys/fs/cgroup")  # cgroup v2, as on a JupyterHub


def free_memory() -> int | None:
    """Bytes this process may still touch before being killed: MemAvailable, capped by a cgroup v2
    limit; None when unknown (not Linux: there an allocation too large raises ``MemoryError``)."""
    try:
        room = int(MEMINFO.read_text().split("MemAvailable:")[1].split()[0]) * 1024
    except (OSError, IndexError, ValueError):
        return None
    with contextlib.suppress(OSError, ValueError):
        limit = (CGROUP / "memory.max").read_text().strip()
        if limit != "max":
            used = int((CGROUP / "memory.current").read_text())
            room = min(room, int(limit) - used)
    return room
