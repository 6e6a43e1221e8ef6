"""lesson_lib/practice/worker.py: what the learner's code starts ends with the worker that runs it, a worker that
ran it is not reused while something it started still runs, the worker ends with its kernel, and what the code
writes reaches the kernel only as its last few thousand characters.

Every wait here is for an event (a pid file the learner's code writes, a process that ends) up to a deadline
scaled by the machine's load; nothing is timed and no verdict depends on how busy the machine is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import ctrl_c_raises, numbers_in, scaled, wait_for

from lesson_lib.sections import exercises as ex

ROOT = Path(__file__).resolve().parents[1]
POSIX = hasattr(os, "killpg")
LINUX = sys.platform.startswith("linux")
NEVER_S = 10**6  # a budget the check never reaches: something else ends it


def right(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)


def _write_pid(path, pid: int) -> None:
    """Write ``pid`` so that a reader never sees half of it (the tests poll for the file)."""
    with open(f"{path}.part", "w") as f:
        f.write(str(pid))
    os.replace(f"{path}.part", path)


def _gone(pid: int) -> bool:
    """The process has ended (a zombie left to a PID 1 that does not reap counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return False


def _ends(pid: int, seconds: float = 20) -> bool:
    """Whether ``pid`` ends within ``seconds`` stretched by the load (a kill takes effect in microseconds)."""
    deadline = time.monotonic() + scaled(seconds)
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _read_pid(path: Path, what: str, alive=lambda: True) -> int:
    wait_for(lambda: path.exists() or not alive(), what)
    assert path.exists(), f"{what}: the process that should write it ended first"
    return int(path.read_text())


@pytest.fixture
def strays():
    """Pids a failing test would leave running: killed at the end, whatever the verdict."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# ------------------------------------------------------------------ 1. a kill ends the worker's whole group
@pytest.mark.skipif(not POSIX, reason="process groups are POSIX")
@pytest.mark.parametrize("ending", ["budget", "interrupt"])
def test_a_process_the_learner_starts_ends_with_the_checks_kill(tmp_path, strays, ending):
    pid_file = tmp_path / "child.pid"

    def starts_a_child(x, h):
        import subprocess
        import sys
        import time

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(10**6)"])
        _write_pid(pid_file, child.pid)
        while True:  # stuck until the budget or the interrupt (asleep: a spinning loop only burns the suite's CPU)
            time.sleep(0.05)

    if ending == "interrupt":  # Ctrl-C in the kernel once the learner's child runs
        main, done = threading.get_ident(), threading.Event()

        def interrupt():
            while not (pid_file.exists() or done.wait(0.02)):
                pass
            if not done.is_set():  # only while the check still runs
                signal.pthread_kill(main, signal.SIGINT)

        waiter = threading.Thread(target=interrupt)
        with ctrl_c_raises():
            waiter.start()
            try:
                result = ex.check("split_heads", starts_a_child, budget=NEVER_S)
            finally:
                done.set()
                waiter.join()
    else:
        result = ex.check("split_heads", starts_a_child, budget=scaled(3))
    assert result.status == ("interrupted" if ending == "interrupt" else "timeout"), result.message
    assert pid_file.exists(), "the budget ended the check before the learner's child had started"
    child = int(pid_file.read_text())
    strays.append(child)
    assert _ends(child), f"the learner's child {child} outlived the worker's kill"
    assert ex.check("split_heads", right).passed


# ------------------------------------------------------------- 2. something left running: a new worker
def _leaves_a_thread(folder: Path, daemon: bool):
    import threading
    import time

    threading.Thread(target=time.sleep, args=(10**6,), daemon=daemon).start()


def _leaves_a_process(folder: Path):
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(10**6)"])
    _write_pid(folder / f"child-{child.pid}", child.pid)


LEFT = {
    "a thread": lambda folder: _leaves_a_thread(folder, False),
    "a daemon thread": lambda folder: _leaves_a_thread(folder, True),
    "a child process": _leaves_a_process,
}


def _reports_its_worker(path: Path, start=lambda: None):
    """A right answer that first starts something (``start``), then writes the pid of the worker it runs in."""

    def learner(x, h):
        start()
        _write_pid(path, os.getpid())
        return right(x, h)

    return learner


@pytest.mark.parametrize("left", list(LEFT))
def test_a_check_that_leaves_something_running_gets_a_new_worker(tmp_path, strays, left):
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    assert ex.check("split_heads", _reports_its_worker(first)).passed
    assert ex.check("split_heads", _reports_its_worker(second, lambda: LEFT[left](tmp_path))).passed
    assert ex.check("split_heads", _reports_its_worker(third)).passed
    children = [int(path.read_text()) for path in tmp_path.glob("child-*")]  # one a case
    assert bool(children) == (left == "a child process")
    first, second, third = (int(path.read_text()) for path in (first, second, third))
    strays.extend([second, *children])
    assert first == second, "a worker with nothing left running is reused"
    assert third != second, f"{left} left running, and the next check ran in the same worker"
    assert _ends(second), f"the worker that ran the check that left {left} running still runs"
    assert all(_ends(child) for child in children), "a child the learner's code left running outlived its worker"


# ------------------------------------------------------------------------ 3. the worker ends with its kernel
KERNEL = """
import os, sys, threading
from lesson_lib.sections import exercises as ex

pid_file = sys.argv[1]


def never_ends(x, h):
    import os, threading, time
    threading.Thread(target=time.sleep, args=(10**6,)).start()  # not a daemon: it would hold the process up
    with open(pid_file + ".part", "w") as f:
        f.write(str(os.getpid()))
    os.replace(pid_file + ".part", pid_file)
    if held:
        return 7 ** 10**12  # one C call that never lets go of the GIL: no thread of the worker's can run
    while True:
        pass


held = sys.argv[3] == "the GIL held"
check = lambda: ex.check("split_heads", never_ends, budget=10**6)
if sys.argv[2] == "main thread":
    check()
else:
    thread = threading.Thread(target=check)
    thread.start()
    thread.join()
"""


ENDINGS = [("another thread", "a loop")]  # the end of input: a thread of the worker's sees it
if LINUX:  # the parent death signal (asked for by a kernel's main thread): nothing in the worker needs to run
    ENDINGS.append(("main thread", "the GIL held"))


@pytest.mark.skipif(not POSIX, reason="SIGKILL is POSIX")
@pytest.mark.parametrize("caller,learner", ENDINGS)
def test_the_worker_ends_when_its_kernel_is_killed(tmp_path, strays, caller, learner):
    pid_file = tmp_path / "worker.pid"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    kernel = subprocess.Popen([sys.executable, "-c", KERNEL, str(pid_file), caller, learner], env=env)
    strays.append(kernel.pid)
    child = _read_pid(pid_file, "the worker's pid, written by the learner's code", lambda: kernel.poll() is None)
    strays.append(child)
    kernel.kill()
    kernel.wait()
    assert _ends(child), f"the worker {child} lives on after its kernel was killed"


# --------------------------------------------------------------------------------- 4. the output is capped
FLOOD = """
import contextlib, io, json, os, resource, sys
from lesson_lib.sections import exercises as ex


def right(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)


def floods(x, h):
    import os
    block = b"x" * 2**20
    for _ in range(128):  # 128 MB past print: twice what the kernel may grow by (kept whole, it would fail)
        os.write(1, block)
    return right(x, h)


assert ex.check("split_heads", right).passed  # the worker and what a check loads are in memory already
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with contextlib.redirect_stdout(io.StringIO()) as shown:  # what the learner would see under the cell
    flooded = ex.check("split_heads", floods, budget=float(sys.argv[1]))
    after = ex.check("split_heads", right)
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"status": [flooded.status, after.status], "grew_kb": grew, "shown": shown.getvalue(),
                  "message": flooded.message}))
"""


@pytest.mark.skipif(not LINUX, reason="ru_maxrss in KB (Linux)")
def test_128_mb_of_output_ends_the_check_and_reaches_the_kernel_as_its_first_bytes():
    """The worker's file for what a job writes holds FILE_BYTES: the write past it fails, the check ends with an error
    and shows the start of what was written; the next check shows nothing of it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", FLOOD, str(scaled(60))], env=env, capture_output=True,
                         text=True, timeout=scaled(600))  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["status"] == ["error", "passed"]
    assert ex.EXERCISES["split_heads"].hint not in out["message"]  # the output cap's own advice, not the exercise's
    assert out["grew_kb"] < 64 * 1024, f"the kernel grew by {out['grew_kb'] / 1024:.0f} MB"
    assert 0 < len(out["shown"]) <= 2 * ex.worker.OUTPUT_BYTES
    first, *rest = out["shown"].splitlines()
    assert set(first) == {"x"} and [numbers_in(line) for line in rest] == [[1]]  # its start; its one line not whole
