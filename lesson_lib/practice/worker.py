"""The learner's code runs in a child process of its own, reused while it lives, killed at the budget, replaced.

A loop, a long C call (``n ** d_model ** h``), ``os._exit``, a segfault or a huge array cannot be stopped inside
the process it runs in. The child is ``python -c`` exchanging pickles over stdin/stdout (the same on every OS, and
it never re-runs the caller's script as multiprocessing's spawn does). Nothing starts at import.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

START_S = 60.0  # a cold start on a busy class hub may be slow; not counted in the learner's budget
MEMORY_HEADROOM = 2 * 2**30  # bytes the learner's code may allocate (Linux): a huge array raises MemoryError
OUTPUT_CHARS = 4000  # what the learner's print() calls may show, at most


@dataclass(frozen=True)
class Reply:
    kind: str  # ok, timeout, crashed, interrupted (Ctrl-C), nostart (a broken environment, not the learner's code)
    value: object = None  # ok: what the job returned
    printed: str = ""  # ok: what the job printed
    stack: str = ""  # timeout: faulthandler's dump of where the job was; nostart: the end of the child's stderr
    exitcode: int | None = None  # crashed, nostart: the child's exit code (negative: the signal that ended it)


def _send(stream, obj) -> None:
    pickle.dump(obj, stream, protocol=pickle.HIGHEST_PROTOCOL)
    stream.flush()


class _Child:
    def __init__(self, preload: tuple[str, ...]):
        env = dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")  # tiny arrays
        env |= dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the kernel's lesson_lib
        self.errors = tempfile.TemporaryFile()  # the child's stderr: a stack dump, or why it could not start
        self.process = subprocess.Popen([sys.executable, "-c", f"from {__name__} import _serve; _serve({preload!r})"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, env=env,
                                        creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))  # fmt: skip
        self.messages: queue.Queue = queue.Queue()  # the child's answers, then None when its stdout closes
        threading.Thread(target=self._read, daemon=True, name="lesson-checker-reader").start()
        self.pid, self.preload, self.ready, self.log = os.getpid(), preload, False, ""

    def _read(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                self.messages.put(pickle.load(self.process.stdout))
        self.messages.put(None)

    def kill(self, grace: float = 0.0) -> int | None:
        """Kill and reap; within ``grace`` a child may end by itself (its own exit code counts) or finish a dump."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        self.process.kill()
        code = self.process.wait()
        self.errors.seek(0)
        self.log = self.errors.read().decode("utf-8", "replace")  # a stack dump, or why it could not start
        for stream in (self.process.stdin, self.process.stdout, self.errors):
            with contextlib.suppress(OSError):
                stream.close()
        return code


_lock = threading.Lock()
_child: _Child | None = None


@atexit.register  # an exiting kernel kills its child (no lock: a check in another thread must not hold up the exit)
def stop(grace: float = 0.0, restart: tuple[str, ...] | None = None) -> int | None:
    """Kill the child now (at exit; a re-check in a fresh process; tests): its exit code. ``restart``: start the next
    one now with that preload, so it is warm by the time the learner has fixed the code."""
    global _child
    own = _child is not None and _child.pid == os.getpid()  # a forked process's copy of _child is not its own
    code, _child = _child.kill(grace) if own else None, None if restart is None else _Child(restart)
    return code


def run(target: str, payload: bytes, budget: float, preload: tuple[str, ...] = ()) -> Reply:
    """``module:function(payload)`` in the child: its value and prints, or how it ended; never waits longer than
    ``budget`` seconds once the child is ready, never raises for what the job does."""
    with _lock:
        if not (_child and _child.pid == os.getpid() and _child.preload == preload and _child.process.poll() is None):
            stop(restart=preload)
        child = _child
        try:
            with contextlib.suppress(queue.Empty):
                child.ready = child.ready or child.messages.get(timeout=START_S) == "ready"
            if not child.ready:
                return Reply("nostart", exitcode=stop(1.0, restart=preload), stack=child.log[-300:])  # kill, then read
            try:
                _send(child.process.stdin, (target, payload, budget))
                answer = child.messages.get(timeout=budget)
            except (OSError, ValueError):  # a broken pipe: the child is gone
                answer = None
            except queue.Empty:  # faulthandler's dump (at 0.8 × budget) may come a little late on a busy machine
                stop(0.3, restart=preload)
                at = child.log.rfind("Timeout (")
                return Reply("timeout", stack=child.log[at:] if at >= 0 else "")
            return Reply("ok", *answer) if answer is not None else Reply("crashed", exitcode=stop(1.0, restart=preload))
        except KeyboardInterrupt:
            stop(restart=preload)
            return Reply("interrupted")


# ------------------------------------------------------------------------------------------ in the child
class _Printed(io.StringIO):
    """A job's stdout and stderr, first OUTPUT_CHARS characters only (a loop printing forever fills no memory)."""

    def write(self, text) -> int:
        if (room := OUTPUT_CHARS - self.tell()) > 0:
            super().write(text if len(text) <= room else text[:room] + "\n…（后面的输出省略了）\n")
        return len(text)


def _serve(preload: tuple[str, ...]) -> None:
    """The child's loop: a job from stdin, its answer on the original stdout (fd 1 then points at stderr, so a
    stray print from C cannot corrupt the answers; input() reads nothing, never the job pipe)."""
    import faulthandler
    import importlib

    answers, jobs = os.fdopen(os.dup(1), "wb"), sys.stdin.buffer
    os.dup2(2, 1)
    sys.stdin = io.StringIO()
    for name in preload:
        importlib.import_module(name)
    with contextlib.suppress(ImportError, AttributeError, OSError, ValueError):  # elsewhere the budget ends it
        import resource  # Linux: a huge allocation raises MemoryError instead of calling the OOM killer

        with open("/proc/self/statm") as f:
            soft = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + MEMORY_HEADROOM
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    _send(answers, "ready")
    depth = sys.getrecursionlimit()
    while True:
        try:
            target, payload, budget = pickle.load(jobs)
        except (EOFError, OSError, KeyboardInterrupt):  # the kernel is gone (or Ctrl-C reached the group)
            return
        module, function = target.split(":")
        sys.stdout = sys.stderr = printed = _Printed()
        faulthandler.dump_traceback_later(0.8 * budget, file=sys.__stderr__)  # where a loop or a C call is stuck
        try:
            value = getattr(importlib.import_module(module), function)(payload)
        finally:
            faulthandler.cancel_dump_traceback_later()
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            sys.setrecursionlimit(depth)  # a learner's setrecursionlimit stays with that check
        _send(answers, (value, printed.getvalue()))
