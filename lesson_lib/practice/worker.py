"""The learner's code runs in a child process, reused while it lives, killed at the budget and
replaced: a loop, a long C call (``n ** d_model ** h``), ``os._exit``, a segfault or a huge array
cannot be stopped inside the process it runs in. The child is ``python -c`` (never a re-run of the
caller's script, as multiprocessing's spawn does): pickled jobs in, one JSON line each out (data,
never code). POSIX only (Linux, macOS; Windows through WSL2). Nothing starts at import."""

import atexit
import codecs
import contextlib
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

START_S = 60.0  # a cold start on a busy class hub may be slow; not in the learner's budget
# past the budget, the wait for an answer: the child's own alarm ends a job at the budget, so this
# grace only ends one whose alarm the job turned off; long, so that a busy machine never ends a job
# before its alarm has named the stuck line (1 s, as before, could: a 2-core hub under load)
GRACE_S = 5.0
MEMORY_HEADROOM = 2 * 2**30  # bytes a job may allocate (Linux): a huge array raises MemoryError
FILE_BYTES = 2**20  # what a job and its children may write to a file, output included: OSError
OUTPUT_LINES = 40  # the start of what a job writes that is shown: these lines, at most
OUTPUT_BYTES = 4000


@dataclass(frozen=True)
class Reply:
    kind: str  # ok, timeout, crashed, interrupted (Ctrl-C), nostart (a broken environment)
    value: object = None  # ok: what the job returned (JSON: a tuple as a list); else: exit code
    text: str = ""  # ok: the end of what the job wrote; timeout, nostart: the child's stderr


class _Child:
    def __init__(self, preload: tuple[str, ...]):
        env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **os.environ}
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env["PYTHONIOENCODING"] = "utf-8"  # the learner's prints are read back as UTF-8
        code = f"from {__name__} import _serve; _serve({preload!r})"
        self.errors = tempfile.TemporaryFile()  # faulthandler's dump, or why the child died
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.errors, env=env,
                                        start_new_session=True)
        self.ready = False  # its "ready" line, after its preload and limits, was read

    def kill(self, grace: float) -> int:
        """Kill the child's process group, the learner's children too, and reap the child: its exit
        code. Within ``grace`` it may end by itself (its own code counts) or finish a dump."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        with contextlib.suppress(OSError):  # the group outlives its leader
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait()
        self.errors.seek(0)  # at most FILE_BYTES
        self.log = self.errors.read().decode("utf-8", "replace")
        for stream in (self.process.stdin, self.process.stdout, self.errors):
            with contextlib.suppress(OSError):
                stream.close()
        return code


_lock = threading.Lock()
_child: _Child | None = None


# an exiting kernel kills its child (no lock: a check in another thread must not hold up the exit)
@atexit.register
def stop(grace: float = 0.0) -> int | None:
    """Kill the child now: its exit code. The next run starts another."""
    global _child
    code = None if _child is None else _child.kill(grace)
    _child = None
    return code


def run(target: str, payload: bytes, budget: float, preload: tuple[str, ...]) -> Reply:
    """``module:function(payload)`` in the child (a new one imports ``preload`` first, outside the
    budget, or "nostart"): its value and what it wrote, or how it ended. Waits at most ``budget``
    and GRACE_S once the child is ready; never raises for what the job does."""
    global _child
    with _lock:
        if _child is None or _child.process.poll() is not None:
            stop()
            _child = _Child(preload)
        child = _child
        late = False
        try:
            # a new child says "ready" within START_S, or a failed preload ends it (ValueError)
            with contextlib.suppress(ValueError):
                child.ready = child.ready or _answer(child, START_S) == "ready"
            if not child.ready:  # the next run starts another child, as after a kernel restart
                return Reply("nostart", stop(1.0), child.log[-300:])
            pickle.dump((target, payload, budget), child.process.stdin, pickle.HIGHEST_PROTOCOL)
            child.process.stdin.flush()
            answer = _answer(child, budget + GRACE_S)
            late = answer is None
        except KeyboardInterrupt:
            stop()
            return Reply("interrupted")
        except (OSError, ValueError):  # a broken pipe, or not one JSON line: the child has ended
            answer = None
        if isinstance(answer, dict):
            if answer.get("left"):  # a thread or a process still runs: not in the next job's child
                stop()
            return Reply("ok", answer.get("value"), str(answer.get("printed", "")))
        code = stop(0.0 if late else 1.0)  # a crash may still be ending
        at = child.log.rfind("Timeout (")  # faulthandler's dump, then its exit, at the budget
        if late or at >= 0:
            return Reply("timeout", text=child.log[max(0, at):])
        return Reply("crashed", code)


def _answer(child: _Child, wait: float) -> object:
    """The child's next JSON line, or None if it writes none within ``wait`` seconds (ValueError:
    it has ended, or wrote what is not one JSON line)."""
    if not select.select([child.process.stdout], [], [], wait)[0]:
        return None
    return json.loads(child.process.stdout.readline(FILE_BYTES))


# --- in the child
def _printed(out: int) -> str:
    """The first OUTPUT_LINES lines (at most OUTPUT_BYTES) the job wrote to ``out`` (fds 1 and 2),
    then how many lines were left out; emptied for the next job."""
    lines = os.pread(out, FILE_BYTES, 0).splitlines(keepends=True)
    os.ftruncate(out, 0)
    os.lseek(out, 0, os.SEEK_SET)
    head = b"".join(lines[:OUTPUT_LINES])[:OUTPUT_BYTES]
    # not final: a character cut at the end is left out, never shown as �
    shown = codecs.getincrementaldecoder("utf-8")("replace").decode(head)
    if len(head) == sum(map(len, lines)):
        return shown
    left = len(lines) - shown.count("\n")  # a line shown in part counts as left out
    return shown.rstrip("\n") + f"\n…（输出太长，后面 {left} 行没有显示）\n"


def _spoiled(threads: int) -> bool:
    """The child must take no other job: what the job printed could not be flushed (a stream closed,
    the file full), or a thread or a child process it started still runs (ended ones are reaped)."""
    try:
        sys.__stdout__.flush()
        sys.__stderr__.flush()
    except Exception:
        return True
    with contextlib.suppress(ChildProcessError):  # no child at all
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
        return True
    return threading.active_count() > threads


def _serve(preload: tuple[str, ...]) -> None:
    """The child's loop. The jobs and answers pipes move off fds 0 and 1 (the learner's children do
    not inherit them); fd 0 reads nothing, so input() raises EOFError; fds 1 and 2 write to a
    file of at most FILE_BYTES, so a job that writes without end fills no memory and no disk."""
    import ctypes
    import faulthandler
    import pkgutil
    import resource

    jobs = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "w", encoding="ascii")  # json.dumps: one ASCII line
    dumps = os.fdopen(os.dup(2), "w")  # the parent's log file: never mixed with the job's output
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    out = tempfile.TemporaryFile(buffering=0)
    for name in preload:
        pkgutil.resolve_name(name)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past FILE_BYTES fails, and is told
    limits = {resource.RLIMIT_FSIZE: FILE_BYTES}
    if sys.platform.startswith("linux"):  # elsewhere: the end of input, or the budget, ends it
        libc = ctypes.CDLL(None)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: dies with the thread that started it
        libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: the learner's orphans are its children, seen
        with open("/proc/self/statm") as f:  # a huge allocation raises MemoryError, no OOM killer
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limits[resource.RLIMIT_AS] = size + MEMORY_HEADROOM
    for kind, soft in limits.items():
        with contextlib.suppress(ValueError):  # a lower hard limit: the soft one is lower already
            resource.setrlimit(kind, (soft, resource.getrlimit(kind)[1]))
    threads = threading.active_count()
    answer = "ready"  # the parent's START_S ends here: what follows is in the learner's budget
    while True:
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        try:
            target, payload, budget = pickle.load(jobs)
        except Exception:  # the end of input: the kernel is gone, and with it this group
            os.killpg(0, signal.SIGKILL)  # started in its own session: never the kernel's group
        os.dup2(out.fileno(), 1)  # again: a job may have closed or moved them
        os.dup2(out.fileno(), 2)
        # at the budget: where the job is stuck, then the end (a C thread: it runs in any C call)
        faulthandler.dump_traceback_later(budget, exit=True, file=dumps)
        value = pkgutil.resolve_name(target)(payload)  # ``module:function``; raising ends the child
        faulthandler.cancel_dump_traceback_later()
        sys.stdout = sys.__stdout__  # a job may have replaced it
        left = _spoiled(threads)
        answer = {"value": value, "printed": _printed(out.fileno()), "left": left}
