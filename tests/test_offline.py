"""The checked outputs of the lesson and of lab_ablation are the same with the network cut and on other CPU code paths.

Per notebook, one run of strict nbval against the stored notebook, a whole Restart & Run All in a fresh kernel, with
every condition at once (``offline-prescott-blas-1-thread-baseline-simd``):

* the network is cut;
* OpenBLAS uses its generic x86 kernel (``OPENBLAS_CORETYPE=Prescott``; where numpy's OpenBLAS crashes with that
  kernel, Nehalem, the next oldest, and a Prescott item is reported as a skip with the reason) with one thread;
* numpy's own SIMD loops are turned down to its baseline (``NPY_DISABLE_CPU_FEATURES`` with every dispatch target
  the installed numpy offers on this CPU).

The default code path (this CPU's best kernel and SIMD loops, default threads) is the suite's main nbval run, so
together the two show on one machine that no checked output follows the BLAS kernel, the thread count or numpy's
SIMD loops (a difference between the runs is found; which condition caused it is found by re-running with one
variable changed). One combined run instead of one per condition halves this file's cost (one Restart & Run All).
lab_ablation trains its 18 models in the kernel (~25 CPU-s): its printed levels and its pictures are compared, the
pictures too (the sanitize file's figure patterns are left out for it), so a drawing made from digits that follow the
BLAS kernel is caught. The lesson's figures stay sanitized, as in the suite's main nbval run.
Probe cells appended to the copy check that each condition took effect (kernel, thread count, SIMD targets off,
and 192.0.2.1 -- TEST-NET-1 -- unreachable); the committed notebook is never modified. On a CPU that is not x86 the
generic-kernel condition is reported as a skip with its reason and the rest still runs.

How the network is cut, the first that works here:
1. ``unshare -n`` (``unshare -rn`` when not root): pytest, nbval and the kernel live in a fresh network namespace with
   only the loopback device, brought up by the runner itself so nbval and the kernel can still talk over 127.0.0.1.
2. Otherwise a socket guard: an IPython startup file in a temporary IPYTHONDIR makes every Python ``connect``,
   ``sendto`` and name lookup for a non-loopback address raise in the kernel (C libraries and subprocesses are not
   covered by this fallback).
``DAY11_OFFLINE=guard`` forces the guard.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import scaled

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "day11_multi_head_attention.ipynb"
LAB = ROOT / "notebooks" / "lab_ablation.ipynb"  # the lab that trains in the kernel
SANITIZE = ROOT / "notebooks" / "nbval_sanitize.cfg"
FIGURE_PATTERNS = "[figure drawings"  # the sanitize file's section that blanks pictures (not for the lab)
CELL_TIMEOUT_S = 300
X86 = platform.machine().lower() in {"x86_64", "amd64", "i386", "i686"}
PROBE_MARK = "OFFLINE-PROBE"
OFFLINE_PROBE = f"""\
import socket
try:
    socket.create_connection(("192.0.2.1", 80), timeout=3).close()
    print("{PROBE_MARK} reached the network")
except OSError:
    print("{PROBE_MARK} blocked")
"""
VARIANT_PROBE = """\
import json, os
import numpy as np
from threadpoolctl import threadpool_info
try:
    from numpy._core import _multiarray_umath as umath
except ImportError:  # numpy 1.x
    from numpy.core import _multiarray_umath as umath
blas = [p for p in threadpool_info() if p["internal_api"] == "openblas"]
disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES", "").split()
facts = {"blas_threads": sorted({p["num_threads"] for p in blas}),
         "blas_architecture": sorted({str(p.get("architecture")) for p in blas}),
         "simd_still_on": [f for f in disabled if umath.__cpu_features__.get(f)]}
print(json.dumps({key: facts[key] for key in KEYS}))
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



# ------------------------------------------------------------------------------------ network namespace
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


def _unshare_prefix() -> list[str] | None:
    """The first of `unshare -n` / `unshare -rn` that can start a process with its loopback up, else None."""
    if os.environ.get("DAY11_OFFLINE") == "guard" or not shutil.which("unshare"):
        return None
    here = str(Path(__file__).parent)
    probe = f"import sys; sys.path.insert(0, {here!r}); import test_offline as t; t._loopback_up()"
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        try:
            ok = subprocess.run([*prefix, sys.executable, "-c", probe], capture_output=True,
                                timeout=scaled(30)).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return prefix
    return None




# ------------------------------------------------------------------------------------ the variants
def numpy_dispatch_targets() -> list[str]:
    """numpy's SIMD dispatch targets this CPU supports: the names NPY_DISABLE_CPU_FEATURES accepts here."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath
    return [name for name in umath.__cpu_dispatch__ if umath.__cpu_features__.get(name)]


def forced_kernel_works(coretype: str) -> bool:
    """Whether numpy's OpenBLAS survives a float32 and a float64 matmul with OPENBLAS_CORETYPE=coretype.
    (The OpenBLAS inside numpy 2.5.5 segfaults on every float32 matmul with Prescott: an upstream bug.)"""
    probe = ("import numpy as np\nfor n in (32, 512):\n    for dtype in (np.float32, np.float64):\n"
             "        np.ones((n, 512), dtype) @ np.ones((512, 512), dtype)")  # the shapes of §4's timing
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    try:
        return subprocess.run([sys.executable, "-c", probe], env={**env, "OPENBLAS_CORETYPE": coretype},
                              capture_output=True, timeout=scaled(60)).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _variants():
    generic, skip_reason = {}, None
    if not X86:
        skip_reason = f"OPENBLAS_CORETYPE=Prescott is OpenBLAS's generic x86 kernel; this CPU is {platform.machine()}"
    elif forced_kernel_works("Prescott"):
        generic = {"OPENBLAS_CORETYPE": "Prescott"}
    else:
        import numpy

        generic = {"OPENBLAS_CORETYPE": "Nehalem"}  # the oldest kernel after Prescott: still not this CPU's own
        skip_reason = (f"numpy {numpy.__version__}'s OpenBLAS crashes on a float32 matmul with "
                       "OPENBLAS_CORETYPE=Prescott (upstream bug); the offline run uses Nehalem instead")
    kernel = generic.get("OPENBLAS_CORETYPE", "default").lower()
    yield pytest.param({**generic, "OPENBLAS_NUM_THREADS": "1"}, id=f"offline-{kernel}-blas-1-thread-baseline-simd")
    if skip_reason:
        yield pytest.param({}, id="prescott-blas", marks=pytest.mark.skip(reason=skip_reason))


def openblas_facts(env: dict[str, str]) -> dict | None:
    """OpenBLAS's kernel names and thread counts in a fresh process with ``env``; None when numpy's BLAS is not
    OpenBLAS (then the OPENBLAS_* variables do nothing). OPENBLAS_CORETYPE=Prescott reports itself as Katmai."""
    probe = ("import json, numpy; from threadpoolctl import threadpool_info; "
             "b = [p for p in threadpool_info() if p['internal_api'] == 'openblas']; "
             "print(json.dumps(b and {'blas_architecture': sorted({str(p.get('architecture')) for p in b}), "
             "'blas_threads': sorted({p['num_threads'] for p in b})}))")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=scaled(60),
                         check=True)
    return json.loads(out.stdout) or None


def _expected_probe(env: dict[str, str]) -> dict:
    """What VARIANT_PROBE must print in the variant's kernel."""
    expected = {}
    openblas = openblas_facts(env)
    if openblas:
        expected["blas_threads"] = [int(env["OPENBLAS_NUM_THREADS"])]
        if "OPENBLAS_CORETYPE" in env:
            expected["blas_architecture"] = openblas["blas_architecture"]
    expected["simd_still_on"] = []
    return expected


def _notebook_with_probes(src: Path, dst: Path, env: dict[str, str]) -> None:
    """A copy of the stored notebook plus probe cells whose stored outputs are what the variant must print."""
    import nbformat

    nb = nbformat.read(src, as_version=4)
    expected = _expected_probe(env)
    probe = f"KEYS = {list(expected)!r}\n" + VARIANT_PROBE
    cells = [(probe, json.dumps(expected) + "\n"), (OFFLINE_PROBE, f"{PROBE_MARK} blocked\n")]
    for source, text in cells:
        cell = nbformat.v4.new_code_cell(source, execution_count=1)  # nbval compares only cells that were run
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        nb.cells.append(cell)
    nbformat.write(nb, dst)


def _pytest_runner(tmp_path: Path) -> tuple[list[str], str]:
    """The command prefix that starts pytest (with nbval) with the network cut, and how it is cut."""
    prefix = _unshare_prefix()
    if prefix:
        here = str(Path(__file__).parent)
        script = (f"import sys; sys.path.insert(0, {here!r}); import test_offline as t; t._loopback_up(); "
                  "import pytest; sys.exit(pytest.main(sys.argv[1:]))")
        return [*prefix, sys.executable, "-c", script], " ".join(prefix)
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-offline-guard.py").write_text(GUARD_STARTUP, encoding="utf-8")
    return [sys.executable], "socket guard (IPython startup file)"


def _sanitize_file(notebook: Path, tmp_path: Path) -> Path:
    """The lesson: the suite's sanitize file. The lab: its patterns before the figures', so pictures are compared."""
    if notebook != LAB:
        return SANITIZE
    text = SANITIZE.read_text(encoding="utf-8")
    assert FIGURE_PATTERNS in text, f"{SANITIZE.name} no longer has its {FIGURE_PATTERNS}] section: update this test"
    strict = tmp_path / "nbval_sanitize_pictures_compared.cfg"
    strict.write_text(text.split(FIGURE_PATTERNS)[0], encoding="utf-8")
    return strict


@pytest.mark.parametrize("variant_env", list(_variants()))
@pytest.mark.parametrize("notebook", [NOTEBOOK, LAB], ids=lambda path: path.stem)
def test_checked_outputs_are_the_same_on_this_code_path(tmp_path, record_property, variant_env, notebook):
    assert notebook.exists(), f"{notebook} is missing"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "IPYTHON", "OPENBLAS_", "OMP_", "MKL_", "NPY_"))}
    env.update(variant_env)
    env["NPY_DISABLE_CPU_FEATURES"] = " ".join(numpy_dispatch_targets())
    name = "offline, generic BLAS kernel, 1 thread, baseline SIMD"
    env["JUPYTER_DATA_DIR"] = str(tmp_path / "jupyter-data")  # only this venv's python3 kernelspec is found
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "jupyter-runtime")
    env["IPYTHONDIR"] = str(tmp_path / "ipython")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env["MPLBACKEND"] = "Agg"
    env["LESSON_PROGRESS_FILE"] = str(tmp_path / "progress.json")  # a fresh learner, as the build ran it
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    runner, method = _pytest_runner(tmp_path)
    # A copy of notebooks/ is the kernel's working folder: whatever a cell writes stays out of the repository.
    work = tmp_path / "notebooks"
    shutil.copytree(notebook.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    copy = work / notebook.name
    _notebook_with_probes(notebook, copy, env)
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n", encoding="utf-8")
    cell_timeout = round(scaled(CELL_TIMEOUT_S))  # a hang's bound, stretched on a busy machine like every wait
    args = ["-p", "no:cacheprovider", "-q", "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path),
            "--nbval", "--nbval-current-env", "--nbval-cell-timeout", str(cell_timeout),
            "--nbval-sanitize-with", str(_sanitize_file(notebook, tmp_path)), str(copy)]
    if runner == [sys.executable]:
        args = ["-m", "pytest", *args]
    started = time.perf_counter()
    proc = subprocess.run([*runner, *args], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=scaled(CELL_TIMEOUT_S + 300))
    seconds = time.perf_counter() - started
    shown = {k: env[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "NPY_DISABLE_CPU_FEATURES") if k in env}
    shown["OpenBLAS kernel"] = (openblas_facts(env) or {}).get("blas_architecture", "not OpenBLAS")
    record_property("variant", f"{notebook.stem}, {name}: {shown}; network: {method}")
    record_property("variant_seconds", round(seconds, 1))
    print(f"{notebook.stem}, {name} ({shown}; network: {method}): {seconds:.1f} s")
    tail = "\n".join(proc.stdout.splitlines()[-60:])
    assert proc.returncode == 0, (
        f"strict nbval of {notebook.name} under {name} ({shown}; network: {method}) differs from the stored outputs "
        f"(the last probe cells check the variant itself):\n{tail}\n{proc.stderr[-2000:]}")


def test_numpy_names_its_dispatch_targets():
    """The baseline-SIMD condition disables something on this CPU, with names the installed numpy reports."""
    targets = numpy_dispatch_targets()
    if not targets:
        pytest.skip("numpy has no SIMD dispatch targets above its baseline on this CPU: nothing to turn down")
    probe = "import numpy; print('ok')"
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(targets)}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=scaled(60))
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


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
    NotebookClient(nb, timeout=int(scaled(60)), kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"].strip() == "['blocked', 'blocked', 'blocked']"
