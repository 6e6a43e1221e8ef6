"""The learner's code runs in a child process, reused while it lives, killed at the budget and
replaced.

A loop, a long C call (``n ** d_model ** h``), ``os._exit``, a segfault or a huge array cannot be
stopped inside the process it runs in. The child is ``python -c`` (never a re-run of the caller's
script, as multiprocessing's spawn does): pickled jobs in, one JSON line each out (data, never
code). POSIX only (Linux, macOS; Windows through WSL2). Nothing starts at import.
"""

from __future__ import annotations

import atexit
import contextlib
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
MEMORY_HEADROOM = 2 * 2**30  # bytes a job may allocate (Linux): a huge array raises MemoryError
# what a job (and what it starts) may write to a file, its output included: past it, OSError
FILE_BYTES = 2**20
OUTPUT_CHARS = 4000  # the end of what a job writes that is shown


@dataclass(frozen=True)
class Reply:
    kind: str  # ok, timeout, crashed, interrupted (Ctrl-C), nostart (a broken environment)
    value: object = None  # ok: what the job returned, as JSON gives it back (a tuple as a list)
    # ok: the end of what the job wrote; timeout: faulthandler's dump; nostart: the child's stderr
    text: str = ""
    exitcode: int | None = None  # crashed, nostart: negative is the signal that ended it


class _Child:
    def __init__(self, preload: tuple[str, ...]):
        env = dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")
        env |= dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        env["PYTHONIOENCODING"] = "utf-8"  # the learner's prints are read back as UTF-8
        # Linux kills the child when the THREAD that started it ends: asked for by the main thread
        main = threading.current_thread() is threading.main_thread()
        code = f"from {__name__} import _serve; _serve({preload!r}, {os.getpid() if main else 0})"
        self.errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.errors, env=env,
                                        start_new_session=True)
        self.answers: queue.Queue = queue.Queue()  # the child's JSON lines, then None at their end
        threading.Thread(target=self._read, daemon=True).start()
        self.owner = os.getpid()  # a forked kernel's copy of this child is not its own
        self.preload = preload
        self.ready = False
        self.log = ""

    def _read(self) -> None:
        """JSON lines only; a line too long or not JSON ends the reading."""
        with contextlib.suppress(Exception):
            while (line := self.process.stdout.readline(FILE_BYTES)).endswith(b"\n"):
                self.answers.put(json.loads(line))
        self.answers.put(None)

    def kill(self, grace: float = 0.0) -> int:
        """Kill the child's process group, the learner's children too, and reap the child: its exit
        code. Within ``grace`` it may end by itself (its own code counts) or finish a dump."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        with contextlib.suppress(OSError):  # the group outlives its leader
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait()
        self.errors.seek(0)  # a stack dump, or why it died: at most FILE_BYTES
        self.log = self.errors.read().decode("utf-8", "replace")
        for stream in (self.process.stdin, self.process.stdout, self.errors):
            with contextlib.suppress(OSError):
                stream.close()
        return code


_lock = threading.Lock()
_child: _Child | None = None


def _own() -> bool:
    return _child is not None and _child.owner == os.getpid()


# an exiting kernel kills its child (no lock: a check in another thread must not hold up the exit)
@atexit.register
def stop(grace: float = 0.0, restart: tuple[str, ...] | None = None) -> int | None:
    """Kill the child now: its exit code. ``restart``: start the next one at once with that preload,
    so it is warm by the time the learner has fixed the code."""
    global _child
    code = _child.kill(grace) if _own() else None
    _child = None if restart is None else _Child(restart)
    return code


def run(target: str, payload: bytes, budget: float, preload: tuple[str, ...] = ()) -> Reply:
    """``module:function(payload)`` in the child: its value and what it wrote, or how it ended.
    A new child first imports ``preload``; a running one imports what a job needs, and stays.
    Waits about ``budget`` seconds once the child is ready; never raises for what the job does."""
    with _lock:
        if not (_own() and _child.process.poll() is None):
            stop(restart=preload)
        _child.preload = preload  # what its replacement loads, should this job end it
        try:
            return _ask(_child, (target, payload, budget))
        except KeyboardInterrupt:
            stop(restart=preload)
            return Reply("interrupted")


def _ask(child: _Child, job: tuple) -> Reply:
    with contextlib.suppress(queue.Empty):
        child.ready = child.ready or child.answers.get(timeout=START_S) == "ready"
    if not child.ready:  # the next run starts another child, as it would after a kernel restart
        return Reply("nostart", exitcode=stop(1.0), text=child.log[-300:])
    late = False
    try:
        pickle.dump(job, child.process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        child.process.stdin.flush()
        answer = child.answers.get(timeout=job[2] + 1.0)  # the child ends itself at the budget
    except (OSError, ValueError):  # a broken pipe: the child is gone
        answer = None
    except queue.Empty:  # its alarm is late, or the learner's code turned it off
        answer = None
        late = True
    if isinstance(answer, dict):
        if answer.get("left"):  # a thread or a process still runs: not in the next job's child
            stop(restart=child.preload)
        return Reply("ok", answer.get("value"), str(answer.get("printed", "")))
    code = stop(0.0 if late else 1.0, restart=child.preload)  # a crash may still be ending
    at = child.log.rfind("Timeout (")  # faulthandler's dump, then its exit, at the budget
    if late or at >= 0:
        return Reply("timeout", text=child.log[max(0, at) :])
    return Reply("crashed", exitcode=code)


# --- in the child
def _printed(out: int) -> str:
    """The end of what the job wrote to ``out`` (fds 1 and 2); ``out`` is emptied for the next."""
    size = os.fstat(out).st_size
    tail = os.pread(out, 4 * OUTPUT_CHARS, max(0, size - 4 * OUTPUT_CHARS))  # UTF-8: 4 bytes a char
    os.ftruncate(out, 0)
    os.lseek(out, 0, os.SEEK_SET)
    text = tail.decode("utf-8", "replace")
    if size > len(tail) or len(text) > OUTPUT_CHARS:
        text = text[-OUTPUT_CHARS:]
        text = "…（前面的输出省略了）\n" + text[text.find("\n") + 1 :]  # from a whole line
    return text


def _watch(jobs, inbox: queue.Queue) -> None:
    """Hand each job to the main thread; at the end of input (the kernel is gone, however it ended)
    end this process and its group at once, whatever the learner's threads or the main thread do."""
    with contextlib.suppress(Exception):
        while True:
            inbox.put(pickle.load(jobs))
    if os.getpgrp() == os.getpid():  # as started by _Child: never the kernel's group
        os.killpg(0, signal.SIGKILL)
    os._exit(0)


def _spoiled(threads: int) -> bool:
    """The child must take no other job: what the job printed could not be flushed (a stream closed,
    the file full), or a thread or a child process it started still runs (ended ones are reaped)."""
    try:
        sys.__stdout__.flush()
        sys.__stderr__.flush()
    except Exception:
        return True
    if threading.active_count() > threads:
        return True
    with contextlib.suppress(ChildProcessError):  # no child at all
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
        return True
    return False


def _die_with(parent: int) -> None:
    """Linux: die with the parent, even while a C call holds the GIL; adopt the orphans of the
    learner's children, so that they are seen (and the child replaced)."""
    import ctypes

    libc = ctypes.CDLL(None)
    if parent:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    if parent and os.getppid() != parent:  # the parent was gone before the line above
        os._exit(0)


def _limit(kind: int, soft: int) -> None:
    import resource

    hard = resource.getrlimit(kind)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(kind, (soft, hard))


def _serve(preload: tuple[str, ...], parent: int = 0) -> None:
    """The child's loop. The jobs and answers pipes move off fds 0 and 1 (the learner's children do
    not inherit them); fd 0 reads nothing, so input() raises EOFError; fds 1 and 2 write to a
    file of at most FILE_BYTES, so a job that writes without end fills no memory and no disk."""
    import faulthandler
    import importlib
    import resource

    linux = sys.platform.startswith("linux")
    if linux:
        with contextlib.suppress(ImportError, OSError, AttributeError):  # no ctypes: _watch ends it
            _die_with(parent)
    jobs = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "w", encoding="ascii")  # json.dumps: one ASCII line
    dumps = os.fdopen(os.dup(2), "w")  # the parent's log file: never mixed with the job's output
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out = tempfile.TemporaryFile(buffering=0)
    for name in preload:
        importlib.import_module(name)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past FILE_BYTES fails, and is told
    _limit(resource.RLIMIT_FSIZE, FILE_BYTES)
    if linux:
        with open("/proc/self/statm") as f:  # a huge allocation raises MemoryError, no OOM killer
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _limit(resource.RLIMIT_AS, size + MEMORY_HEADROOM)
    inbox: queue.Queue = queue.Queue()
    threading.Thread(target=_watch, args=(jobs, inbox), daemon=True).start()
    threads = threading.active_count()
    depth = sys.getrecursionlimit()
    answer = "ready"
    while True:
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        target, payload, budget = inbox.get()
        module, function = target.split(":")
        os.dup2(out.fileno(), 1)  # again: a job may have closed or moved them
        os.dup2(out.fileno(), 2)
        sys.stderr = sys.stdout  # one buffer: prints and warnings come out in the order made
        # at the budget: where the job is stuck, then the end (a C thread: it runs in any C call)
        faulthandler.dump_traceback_later(budget, exit=True, file=dumps)
        try:
            value = getattr(importlib.import_module(module), function)(payload)
        finally:
            faulthandler.cancel_dump_traceback_later()
            sys.stdout = sys.__stdout__
            sys.stderr = sys.__stderr__
            sys.setrecursionlimit(depth)  # a learner's setrecursionlimit stays with that check
        left = _spoiled(threads)
        answer = {"value": value, "printed": _printed(out.fileno()), "left": left}
