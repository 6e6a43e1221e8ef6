"""How much memory this process may still use before the operating system kills it instead of refusing.

Beyond a cgroup memory limit (a JupyterHub student's, v2 or v1) the kernel's OOM killer ends the
process, no ``MemoryError``; beyond free RAM an overcommitted allocation is killed when first
touched; ``ulimit -v`` (RLIMIT_AS) is read too. The kernel's memory guard compares with this.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["available_memory"]

_CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63


def available_memory() -> int | None:
    """Bytes this process may still use: free RAM, capped by a cgroup (v2 or v1) limit and ``ulimit -v``.

    None if none of them is known. Beyond the cgroup limit the kernel kills the process (no
    ``MemoryError``); beyond free RAM an overcommitted allocation is killed when first touched.
    """
    known = [b for b in (_meminfo_available(), _cgroup_room(_CGROUP_ROOT), _address_space_room()) if b is not None]
    return min(known) if known else None


def _meminfo_available() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        try:  # macOS and other Unixes: physical memory (no "available" figure without psutil)
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            return None
    match = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_room(root: Path) -> int | None:
    """Room left under the cgroup memory limit (a JupyterHub student's): v2 ``memory.max − memory.current``,
    else v1 ``memory.limit_in_bytes − memory.usage_in_bytes``; None when unlimited or unknown."""
    for limit_file, used_file in (("memory.max", "memory.current"),
                                  ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        limit, used = _read_int(root / limit_file), _read_int(root / used_file)
        if limit is not None and used is not None and limit < _UNLIMITED:
            return max(0, limit - used)
    return None


def _address_space_room() -> int | None:
    """``ulimit -v`` (RLIMIT_AS) minus the address space already mapped; None when unlimited or unknown."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        match = re.search(r"^VmSize:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    except OSError:
        return limit
    return max(0, limit - int(match.group(1)) * 1024) if match else limit
