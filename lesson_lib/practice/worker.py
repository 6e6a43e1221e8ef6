"""The learner's code runs in a child process of its own, reused while it lives, killed at the
budget, replaced.

A loop, a long C call (``n ** d_model ** h``), ``os._exit``, a segfault or a huge array cannot be
stopped inside the process it runs in. The child is ``python -c`` taking pickled jobs on stdin and
answering one JSON line each on stdout (the same on every OS, and it never re-runs the caller's
script as multiprocessing's spawn does). It moves both pipes off fds 0 and 1 at once: what the
learner's code writes to fd 1 or 2 goes to a pipe of its own, of which only the end is kept, and the
answers are data (JSON), never code. It starts in a session of its own: a kill ends its whole
process group, the learner's own children too. It is replaced after a job that left a thread or a
child process running, and it ends when its kernel ends: at the end of input, and on Linux (a check
from the kernel's main thread) by the parent death signal, even while a C call holds the GIL.
Nothing starts at import.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import pickle
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

START_S = 60.0  # a cold start on a busy class hub may be slow; not counted in the learner's budget
# bytes the learner's code may allocate (Linux): a huge array raises MemoryError
MEMORY_HEADROOM = 2 * 2**30
# what the learner's code writes to stdout and stderr: its last characters are shown
OUTPUT_CHARS = 4000
# kept by the child while a job writes (UTF-8: up to 4 bytes a character)
OUTPUT_BYTES = 4 * OUTPUT_CHARS
# read from the end of the child's stderr file (a stack dump, or why it could not start)
LOG_BYTES = 64 * 1024
ANSWER_BYTES = 2**20  # a longer answer line is not an answer: the child is treated as crashed
LINUX = sys.platform.startswith("linux")


@dataclass(frozen=True)
class Reply:
    # ok, timeout, crashed, interrupted (Ctrl-C), nostart (a broken environment, not the learner's
    # code)
    kind: str
    # ok: what the job returned (as JSON gives it back: a tuple comes back as a list)
    value: object = None
    printed: str = ""  # ok: the end of what the job wrote to stdout and stderr
    # timeout: faulthandler's dump of where the job was; nostart: the end of the child's stderr
    stack: str = ""
    # crashed, nostart: the child's exit code (negative: the signal that ended it)
    exitcode: int | None = None


class _Child:
    def __init__(self, preload: tuple[str, ...]):
        # tiny arrays
        env = dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")
        # the kernel's lesson_lib
        env |= dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        env["PYTHONIOENCODING"] = "utf-8"  # the learner's prints travel as UTF-8 bytes on every OS
        # a print loop writes to the output pipe 8 KB at a time, not line by line
        env.pop("PYTHONUNBUFFERED", None)
        # Linux kills the child when the THREAD that started it ends: asked for only from the main
        # thread
        watched = os.getpid() if threading.current_thread() is threading.main_thread() else 0
        # the child's stderr: a stack dump, or why it could not start
        self.errors = tempfile.TemporaryFile()
        code = f"from {__name__} import _serve; _serve({preload!r}, {watched})"
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE,
                                        stderr=self.errors, env=env, start_new_session=True,
                                        creationflags=getattr(subprocess, "CREATE_NO_WINDOW",
                                                              0))
        # the child's answers, then None when its answers end
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="lesson-checker-reader").start()
        self.pid = os.getpid()
        self.preload = preload
        self.ready = False
        self.log = ""

    def _read(self) -> None:
        """JSON lines only (data, never code); a line too long or not JSON ends the reading."""
        with contextlib.suppress(Exception):
            while (line := self.process.stdout.readline(ANSWER_BYTES)).endswith(b"\n"):
                self.messages.put(json.loads(line))
        self.messages.put(None)

    def kill(self, grace: float = 0.0) -> int | None:
        """Kill the child's whole process group and reap the child; within ``grace`` it may end by
        itself (its own exit code counts) or finish a dump."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        # the group outlives its leader: the learner's children are killed too
        if hasattr(os, "killpg"):
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.kill()  # elsewhere (Windows); nothing once the child is reaped
        code = self.process.wait()
        self.errors.seek(max(0, self.errors.seek(0, os.SEEK_END) - LOG_BYTES))
        # a stack dump, or why it could not start
        self.log = self.errors.read().decode("utf-8", "replace")
        for stream in (self.process.stdin, self.process.stdout, self.errors):
            with contextlib.suppress(OSError):
                stream.close()
        return code


_lock = threading.Lock()
_child: _Child | None = None


# an exiting kernel kills its child (no lock: a check in another thread must not hold up the exit)
@atexit.register
def stop(grace: float = 0.0, restart: tuple[str, ...] | None = None) -> int | None:
    """Kill the child now (at exit; a re-check in a fresh process; tests): its exit code.
    ``restart``: start the next one now with that preload, so it is warm by the time the learner has
    fixed the code."""
    global _child
    # a forked process's copy of _child is not its own
    own = _child is not None and _child.pid == os.getpid()
    code = _child.kill(grace) if own else None
    _child = None if restart is None else _Child(restart)
    return code


def pid() -> int | None:
    """The process id of the child that runs the next job, if one is running."""
    child = _child
    return child.process.pid if child is not None and child.pid == os.getpid() else None


def run(target: str, payload: bytes, budget: float, preload: tuple[str, ...] = ()) -> Reply:
    """``module:function(payload)`` in the child: its value (JSON) and what it wrote, or how it
    ended; never waits longer than ``budget`` seconds once the child is ready, never raises for what
    the job does."""
    with _lock:
        own = _child is not None and _child.pid == os.getpid()
        if own and _child.ready:
            # keep what a working child has warm: a new exercise restarts it once, not every switch
            preload = tuple(dict.fromkeys((*_child.preload, *preload)))
        if not (own and _child.preload == preload and _child.process.poll() is None):
            stop(restart=preload)
        child = _child
        try:
            with contextlib.suppress(queue.Empty):
                child.ready = child.ready or child.messages.get(timeout=START_S) == "ready"
            if not child.ready:
                # kill, then read
                return Reply("nostart", exitcode=stop(1.0, restart=preload), stack=child.log[-300:])
            try:
                pickle.dump((target, payload, budget), child.process.stdin,
                            protocol=pickle.HIGHEST_PROTOCOL)
                child.process.stdin.flush()
                answer = child.messages.get(timeout=budget)
            except (OSError, ValueError):  # a broken pipe: the child is gone
                answer = None
            # faulthandler's dump (at 0.8 × budget) may come a little late on a busy machine
            except queue.Empty:
                stop(0.3, restart=preload)
                at = child.log.rfind("Timeout (")
                return Reply("timeout", stack=child.log[at:] if at >= 0 else "")
            if not isinstance(answer, dict):
                return Reply("crashed", exitcode=stop(1.0, restart=preload))
            # a thread or a process still runs: it must not share the next job's worker
            if answer.get("left"):
                stop(restart=preload)
            return Reply("ok", answer.get("value"), str(answer.get("printed", "")))
        except KeyboardInterrupt:
            stop(restart=preload)
            return Reply("interrupted")


# --- in the child
class _Output:
    """The child's fds 1 and 2: a pipe that a thread empties, keeping only its last OUTPUT_BYTES (a
    job that writes without end fills no memory and no disk), whoever writes: print, sys.__stdout__,
    os.write, a child."""

    def __init__(self):
        read, self.write = os.pipe()  # self.write: a spare copy, to mend fds 1 and 2 after a job
        self.kept = bytearray()
        self.dropped = False
        self.mark = b""
        self.taken = b""
        self.changed = threading.Condition()
        self.mend()
        threading.Thread(target=self._drain, args=(read,), daemon=True).start()

    def mend(self) -> None:
        """Point fds 1 and 2 at the pipe again (a job may have closed or moved them)."""
        os.dup2(self.write, 1)
        os.dup2(self.write, 2)

    def _drain(self, fd: int) -> None:
        while chunk := os.read(fd, 2**16):
            with self.changed:
                self.kept += chunk
                # all the job wrote has come through
                if self.mark and (at := self.kept.find(self.mark)) >= 0:
                    self.taken = bytes(self.kept[:at])
                    del self.kept[: at + len(self.mark)]
                    self.mark = b""
                    self.changed.notify()
                self.dropped |= len(self.kept) > OUTPUT_BYTES
                del self.kept[:-OUTPUT_BYTES]

    def take(self) -> str:
        """The end of what the last job wrote: a mark written now comes out of the pipe after all of
        it."""
        self.mend()
        for stream in (sys.__stdout__, sys.__stderr__):
            # a job may have closed it: then the worker is replaced
            with contextlib.suppress(Exception):
                stream.flush()
        with self.changed:
            self.mark = b"\0" + os.urandom(8).hex().encode() + b"\0"
        os.write(self.write, self.mark)
        with self.changed:
            self.changed.wait_for(lambda: not self.mark)
            text = self.taken.decode("utf-8", "replace")
            dropped = self.dropped
            self.dropped = False
        if dropped or len(text) > OUTPUT_CHARS:
            text = text[-OUTPUT_CHARS:]
            # from the first whole line
            text = "…（前面的输出省略了）\n" + text[text.find("\n") + 1 :]
        return text


def _answer(stream, obj) -> None:
    stream.write(json.dumps(obj) + "\n")  # ASCII only: one line, whatever the text holds
    stream.flush()


def _watch(jobs, inbox: queue.Queue) -> None:
    """Hand each job to the main thread; at the end of input (the kernel is gone, however it ended)
    end this process and its group at once, whatever threads the learner left or whatever the main
    thread is doing."""
    with contextlib.suppress(Exception):
        while True:
            inbox.put(pickle.load(jobs))
    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os._exit(0)


def _left_behind(threads: int) -> bool:
    """A thread or a child process the job started still runs (the ended children are reaped
    here)."""
    if threading.active_count() > threads:
        return True
    with contextlib.suppress(ChildProcessError, AttributeError):  # no child; no WNOHANG (Windows)
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
        return True
    return False


def _die_with(parent: int) -> None:
    """Linux: the kernel kills this process when its parent goes, even while a C call holds the GIL;
    orphans of the learner's children become this process's children, so they are seen (and the
    worker replaced)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if parent:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    if parent and os.getppid() != parent:  # the parent was gone before the line above
        os._exit(0)


def _serve(preload: tuple[str, ...], parent: int = 0) -> None:
    """The child's loop: a job from the jobs pipe, its answer on the answers pipe. Both are moved
    off fds 0 and 1 (their copies are not inherited by the learner's children); fd 0 reads nothing,
    so input() cannot take a job."""
    import faulthandler
    import importlib

    if LINUX:
        # no ctypes: the end of input still ends it
        with contextlib.suppress(ImportError, OSError, AttributeError):
            _die_with(parent)
    jobs = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "w", encoding="ascii")
    # the parent's log file, for faulthandler: never mixed with the job's output
    dumps = os.fdopen(os.dup(2), "w")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = io.StringIO()
    for name in preload:
        importlib.import_module(name)
    # elsewhere the budget ends it
    with contextlib.suppress(ImportError, AttributeError, OSError, ValueError):
        # Linux: a huge allocation raises MemoryError instead of calling the OOM killer
        import resource

        with open("/proc/self/statm") as f:
            soft = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + MEMORY_HEADROOM
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS,
                           (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    output = _Output()
    inbox = queue.Queue()
    threading.Thread(target=_watch, args=(jobs, inbox), daemon=True).start()
    threads = threading.active_count()
    depth = sys.getrecursionlimit()
    _answer(answers, "ready")
    while True:
        target, payload, budget = inbox.get()
        module, function = target.split(":")
        # one buffer: prints and warnings come out in the order they were made
        sys.stderr = sys.stdout
        # where a loop or a C call is stuck
        faulthandler.dump_traceback_later(0.8 * budget, file=dumps)
        try:
            value = getattr(importlib.import_module(module), function)(payload)
        finally:
            faulthandler.cancel_dump_traceback_later()
            sys.stdout = sys.__stdout__
            sys.stderr = sys.__stderr__
            sys.setrecursionlimit(depth)  # a learner's setrecursionlimit stays with that check
        left = _left_behind(threads) or sys.__stdout__.closed
        _answer(answers, {"value": value, "printed": output.take(), "left": left})
