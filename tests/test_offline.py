"""The whole lesson notebook runs with the network cut (no downloads, no CDN, no "pip install" in a cell).

How the network is cut, the first that works here:
1. ``unshare -n`` (``unshare -rn`` when not root): the notebook runner and its kernel live in a fresh network
   namespace with only the loopback device, brought up by the runner itself so nbclient and the kernel can still talk
   over 127.0.0.1. Nothing, not even a C library, can reach another host.
2. Otherwise a socket guard: an IPython startup file in a temporary IPYTHONDIR makes every Python ``connect``,
   ``sendto`` and name lookup for a non-loopback address raise in the kernel (C libraries and subprocesses are not
   covered by this fallback).
``DAY11_OFFLINE=guard`` forces the guard. Either way a probe cell appended to the executed copy proves that the kernel
could not reach 192.0.2.1 (TEST-NET-1) -- the committed notebook is never modified.

This file is also the runner the test starts inside the namespace: ``python tests/test_offline.py SRC DST``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
CELL_TIMEOUT_S = 300
PROBE_MARK = "OFFLINE-PROBE"
PROBE_CELL = f"""\
import socket
try:
    socket.create_connection(("192.0.2.1", 80), timeout=3).close()
    print("{PROBE_MARK} reached the network")
except OSError as exc:
    print("{PROBE_MARK} blocked:", type(exc).__name__, exc)
"""

GUARD_STARTUP = '''\
"""Offline test guard: no Python socket in this kernel may reach a host other than loopback."""
import errno as _errno
import ipaddress as _ipaddress
import socket as _socket


def _offline_is_local(host):
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host in ("localhost", "", None):
        return True
    try:
        return _ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _offline_check(sock, address):
    if sock.family in (_socket.AF_INET, _socket.AF_INET6) and not _offline_is_local(address[0]):
        raise OSError(_errno.ENETUNREACH, f"offline test: the network is cut (connect to {address!r})")


_offline_connect, _offline_connect_ex = _socket.socket.connect, _socket.socket.connect_ex
_offline_sendto, _offline_getaddrinfo = _socket.socket.sendto, _socket.getaddrinfo


def _guarded_connect(self, address):
    _offline_check(self, address)
    return _offline_connect(self, address)


def _guarded_connect_ex(self, address):
    _offline_check(self, address)
    return _offline_connect_ex(self, address)


def _guarded_sendto(self, data, *args):
    _offline_check(self, args[-1])
    return _offline_sendto(self, data, *args)


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not _offline_is_local(host):
        raise _socket.gaierror(_socket.EAI_NONAME, f"offline test: no name lookups ({host!r})")
    return _offline_getaddrinfo(host, *args, **kwargs)


_socket.socket.connect, _socket.socket.connect_ex = _guarded_connect, _guarded_connect_ex
_socket.socket.sendto, _socket.getaddrinfo = _guarded_sendto, _guarded_getaddrinfo
'''


# ------------------------------------------------------------------------------------ runner (child process)
def _loopback_up() -> None:
    """`ip link set lo up` without needing iproute2: SIOCGIFFLAGS / SIOCSIFFLAGS on 'lo'."""
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = fcntl.ioctl(s, siocgifflags, struct.pack("16sH22x", b"lo", 0))
        flags = struct.unpack("16sH22x", ifreq)[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH22x", b"lo", flags | iff_up))


def run_notebook(src: Path, dst: Path) -> None:
    """Execute ``src`` plus the probe cell with nbclient; write the result to ``dst`` even if a cell fails."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(src, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE_CELL))
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(src.parent)}}
    )
    try:
        client.execute()
    except CellExecutionError:
        pass  # the parent test reports every error output it finds in dst
    finally:
        nbformat.write(nb, dst)


# ------------------------------------------------------------------------------------ the test (parent)
def _unshare_prefix() -> list[str] | None:
    """The first of `unshare -n` / `unshare -rn` that can start a process with its loopback up, else None."""
    if os.environ.get("DAY11_OFFLINE") == "guard" or not shutil.which("unshare"):
        return None
    here = str(Path(__file__).parent)
    probe = f"import sys; sys.path.insert(0, {here!r}); import test_offline as t; t._loopback_up()"
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        try:
            ok = subprocess.run([*prefix, sys.executable, "-c", probe], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return prefix
    return None


def _errors(nb: dict) -> list[str]:
    found = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code" or "raises-exception" in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            if out["output_type"] == "error":
                found.append(f"cell {index}: {out['ename']}: {out['evalue']}\n{cell['source'][:300]}")
        if cell.get("execution_count") is None:
            found.append(f"cell {index} did not run: {cell['source'][:120]!r}")
    return found


def test_lesson_runs_offline(tmp_path, record_property):
    import nbformat

    assert NOTEBOOK.exists(), f"{NOTEBOOK} is missing"
    prefix = _unshare_prefix()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "IPYTHON"))}
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter-data")  # only this venv's python3 kernelspec is found
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "jupyter-runtime")
    env["IPYTHONDIR"] = str(tmp_path / "ipython")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if prefix:
        method = " ".join(prefix)
        script = (
            f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_offline as t; "
            "t._loopback_up(); t.run_notebook(*map(t.Path, sys.argv[1:]))"
        )
        cmd = [*prefix, sys.executable, "-c", script]
    else:
        method = "socket guard (IPython startup file)"
        startup = tmp_path / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True)
        (startup / "00-offline-guard.py").write_text(GUARD_STARTUP, encoding="utf-8")
        cmd = [sys.executable, __file__]
    # A copy of notebooks/ is the kernel's working folder: whatever a cell writes stays out of the repository.
    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOK.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    out = tmp_path / f"executed-{NOTEBOOK.name}"
    started = time.perf_counter()
    proc = subprocess.run(
        [*cmd, str(work / NOTEBOOK.name), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=CELL_TIMEOUT_S + 120,
    )
    seconds = time.perf_counter() - started
    assert proc.returncode == 0 and out.exists(), f"runner failed ({method}):\n{proc.stdout}\n{proc.stderr}"
    nb = nbformat.read(out, as_version=4)
    probe = "".join(o.get("text", "") for o in nb["cells"][-1].get("outputs", []))
    errors = _errors({"cells": nb["cells"][:-1]})
    record_property("offline_method", method)
    record_property("offline_seconds", round(seconds, 1))
    print(f"offline run ({method}): {len(nb['cells']) - 1} cells in {seconds:.1f} s; probe: {probe.strip()}")
    assert not errors, f"cells failed with the network cut ({method}):\n" + "\n\n".join(errors)
    assert f"{PROBE_MARK} blocked" in probe, f"the network was NOT cut in the kernel ({method}): {probe!r}"


def test_socket_guard_blocks_outside_hosts_only(tmp_path, monkeypatch):
    """The fallback guard itself: loopback still works, any other host and name lookup fails in the kernel."""
    import nbformat
    from nbclient import NotebookClient

    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-offline-guard.py").write_text(GUARD_STARTUP, encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import socket, urllib.request\n"
            "server = socket.create_server(('127.0.0.1', 0))\n"
            "socket.create_connection(server.getsockname(), timeout=3).close()\n"
            "results = []\n"
            "for attempt in (lambda: socket.create_connection(('192.0.2.1', 80), timeout=3),\n"
            "                lambda: socket.getaddrinfo('example.org', 443),\n"
            "                lambda: urllib.request.urlopen('http://example.org', timeout=3)):\n"
            "    try:\n"
            "        attempt()\n"
            "        results.append('reached')\n"
            "    except OSError as exc:\n"
            "        results.append('blocked')\n"
            "print(results)"
        )
    )
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"].strip() == "['blocked', 'blocked', 'blocked']"


if __name__ == "__main__":
    run_notebook(Path(sys.argv[1]), Path(sys.argv[2]))
