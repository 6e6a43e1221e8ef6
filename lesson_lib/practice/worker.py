"""One process of its own for the learner's code: reused while it lives, killed at the budget, then replaced.

A loop, ``n ** d_model ** h`` (one big-int power that holds the interpreter), ``os._exit``, a segfault or a huge
array cannot be stopped from inside the process they run in. ``run`` sends a job to a ``python -c`` child over
its stdin/stdout (the same on Linux, macOS and Windows; never re-runs the caller's script like multiprocessing's
spawn) and waits at most ``budget`` seconds; then the child is killed and reaped and a new one started at once.
Nothing starts at import; the child ends with the kernel (its stdin closes, or the exit hook kills it).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import io
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

__all__ = ["Reply", "run", "stop"]

START_S = 60.0  # a cold start on a busy class hub may be slow; not counted in the learner's budget
MEMORY_HEADROOM = 2 * 2**30  # bytes the learner's code may allocate (Linux): a huge array raises MemoryError
OUTPUT_CHARS = 4000  # what the learner's print() calls may show, at most
_HEADER = struct.Struct("<Q")  # each message: its length, then a pickle


@dataclass(frozen=True)
class Reply:
    kind: str  # ok, timeout (killed at the budget), crashed (the process ended), interrupted (Ctrl-C / 中断),
    # nostart (the process could not start: a broken environment, not the learner's code)
    value: object = None  # what the job returned (ok)
    printed: str = ""  # what the job printed (ok)
    stack: str = ""  # timeout: where the job was shortly before the budget ended (faulthandler's dump);
    # nostart: the end of what the process printed to stderr
    exitcode: int | None = None  # crashed: the process's exit code (negative: the signal that ended it)


def _send(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream):
    """The next message, or raise EOFError when the other side is gone."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    data = stream.read(_HEADER.unpack(header)[0])
    return pickle.loads(data)


class _Child:
    def __init__(self, preload: tuple[str, ...]):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # the kernel's lesson_lib
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # tiny arrays: one thread
            env.setdefault(var, "1")
        code = f"from {__name__} import _serve; _serve({preload!r})"
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env,
                                        creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))  # fmt: skip
        self.messages: queue.Queue = queue.Queue()
        self.errors: collections.deque[str] = collections.deque(maxlen=200)  # the child's stderr, last lines
        threading.Thread(target=self._read, daemon=True, name="lesson-checker-reader").start()
        threading.Thread(target=self._read_errors, daemon=True, name="lesson-checker-stderr").start()
        self.pid, self.preload, self.ready = os.getpid(), preload, False

    def _read(self) -> None:
        """Every message from the child, then None when it is gone (EOF)."""
        try:
            while True:
                self.messages.put(_receive(self.process.stdout))
        except Exception:
            self.messages.put(None)

    def _read_errors(self) -> None:
        """The child's stderr (faulthandler's dump, C-level output), kept in a short window; nothing is written."""
        with contextlib.suppress(Exception):
            for line in iter(lambda: self.process.stderr.readline(4096), b""):
                self.errors.append(line.decode("utf-8", "replace"))

    def next(self, timeout: float):
        """The child's next message; None if it died; raise queue.Empty at the timeout."""
        return self.messages.get(timeout=timeout)

    def wait_ready(self) -> bool:
        if not self.ready:
            try:
                self.ready = self.next(START_S) == "ready"
            except queue.Empty:
                pass
        return self.ready

    def where(self) -> str:
        """The child's stack dump, from its stderr; on a busy machine it may come late: wait up to half a second."""
        for _ in range(10):
            lines = list(self.errors)
            starts = [i for i, line in enumerate(lines) if line.startswith("Timeout (")]
            if starts:
                time.sleep(0.05)  # the rest of the dump
                return "".join(list(self.errors)[starts[-1]:])
            time.sleep(0.05)
        return ""

    def kill(self, grace: float = 0.0) -> int | None:
        """Kill and reap (no zombie); ``grace``: a child that is already exiting may first end by itself, so its
        own exit code (os._exit's, a segfault's) is the one reported."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        self.process.kill()
        code = self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass
        return code


_lock = threading.Lock()
_child: _Child | None = None


@atexit.register  # an exiting kernel kills its child (no lock: a check in another thread must not hold up the exit)
def _kill_own() -> None:
    if _child is not None and _child.pid == os.getpid():  # a forked process's copy of _child is not its own
        _child.kill()


def _get(preload: tuple[str, ...]) -> _Child:
    global _child
    if _child is None or _child.pid != os.getpid() or _child.preload != preload or _child.process.poll() is not None:
        _kill_own()
        _child = _Child(preload)
    return _child


def _replace(preload: tuple[str, ...], grace: float = 0.0) -> int | None:
    """Kill the child; start the next one now, so it is warm by the time the learner has fixed the code."""
    global _child
    code = _child.kill(grace) if _child is not None else None
    _child = _Child(preload)
    return code


def run(target: str, payload: bytes, budget: float, preload: tuple[str, ...] = ()) -> Reply:
    """``module:function`` called in the child with ``payload``; its return value (plain data) and print output.

    Never waits longer than ``budget`` seconds once the child is ready; never raises for what the job does."""
    with _lock:
        child = _get(preload)
        try:
            if not child.wait_ready():
                code = _replace(preload, grace=1.0)
                return Reply("nostart", exitcode=code, stack="".join(child.errors)[-300:])  # why, for the teacher
            try:
                child.errors.clear()
                _send(child.process.stdin, (target, payload, budget))
                answer = child.next(budget)
            except (OSError, ValueError):  # the child is gone: a broken pipe
                answer = None
            except queue.Empty:
                stack = child.where()
                _replace(preload)
                return Reply("timeout", stack=stack)
            if answer is None:  # its stdout closed: the child is ending
                return Reply("crashed", exitcode=_replace(preload, grace=1.0))
            value, printed = answer
            return Reply("ok", value, printed)
        except KeyboardInterrupt:
            _replace(preload)
            return Reply("interrupted")


def stop() -> None:
    """Kill the child now (a re-check in a fresh process; tests)."""
    global _child
    with _lock:
        _kill_own()
        _child = None


# ------------------------------------------------------------------------------------------ in the child
class _Printed(io.StringIO):
    """sys.stdout / sys.stderr of a job: keeps the first OUTPUT_CHARS characters (a loop that prints forever
    must not fill the memory before the budget ends it)."""

    def write(self, text) -> int:
        room = OUTPUT_CHARS - self.tell()
        if room > 0:
            super().write(text[:room] if len(text) <= room else text[:room] + "\n…（后面的输出省略了）\n")
        return len(text)


def _limit_memory() -> None:
    """Linux: a huge allocation raises MemoryError instead of pushing the machine into the OOM killer."""
    try:
        import resource

        with open("/proc/self/statm") as f:
            in_use = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = in_use + MEMORY_HEADROOM
        resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    except (ImportError, AttributeError, OSError, ValueError):  # macOS / Windows: the budget ends a slow allocation
        pass


def _serve(preload: tuple[str, ...]) -> None:
    """The child's loop: read a job from stdin, answer on the original stdout (fd 1 then points at stderr, so
    a stray print from C cannot corrupt the answers)."""
    import importlib

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the kernel reads stderr (a pipe) for faulthandler's dump only
    jobs = sys.stdin.buffer
    sys.stdin = io.StringIO()  # input() in the learner's code reads nothing (EOFError), never the job pipe
    for name in preload:
        importlib.import_module(name)
    _limit_memory()
    import faulthandler

    _send(answers, "ready")
    depth = sys.getrecursionlimit()
    while True:
        try:
            target, payload, budget = _receive(jobs)
        except (EOFError, OSError, KeyboardInterrupt):  # the kernel is gone (or Ctrl-C reached the group)
            return
        module, function = target.split(":")
        printed = _Printed()
        sys.stdout = sys.stderr = printed
        faulthandler.dump_traceback_later(0.8 * budget, file=sys.__stderr__)  # where a loop or a C call is stuck
        try:
            value = getattr(importlib.import_module(module), function)(payload)
        finally:
            faulthandler.cancel_dump_traceback_later()
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            sys.setrecursionlimit(depth)  # a learner's setrecursionlimit stays with that check
        _send(answers, (value, printed.getvalue()))
