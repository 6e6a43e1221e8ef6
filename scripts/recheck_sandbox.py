"""The class report's --recheck: a student's stored source runs again, contained; only a verdict comes back.

Layers (each held by a test in tests/test_class_report.py):
- namespaces (``unshare --net --pid --mount-proc``; ``--user`` when not root): no network, and the supervisor is
  the pid namespace's init, so when it ends every process the student started ends with it (double fork or not);
- the user: as root the supervisor drops to an unprivileged user (``nobody`` unless named) before any student line
  runs; lesson_lib and numpy are imported first, as the caller, so that user needs no read access to them;
- resource limits (CPU time, memory, processes, file size), an empty throw-away working folder owned by that user,
  a scrubbed environment, its own session; the report kills it at the budget;
- the verdict is JSON on a pipe that the student's code never holds: the check runs in a grandchild whose fds 0-2
  are /dev/null and whose other fds are closed, and the supervisor (not dumpable, so /proc/1/fd stays shut) reads
  only the grandchild's exit status. No pickle on this path.
Run as ``python -I recheck_sandbox.py FD UID GID NPROC BUDGET`` (the supervisor; UID/GID ``-``: no switch).
"""

from __future__ import annotations

import json
import os
import pwd
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PASSED, FAILED = 3, 4  # the grandchild's exit status (a bare sys.exit() or a crash is never a pass)
START_S = 60.0  # the supervisor's imports on a busy hub; not counted in the student's budget
MAX_JOB = 1 << 20  # bytes of JSON the supervisor reads (the progress store caps a source far below this)
MAX_ANSWER = 4096  # bytes of verdict the report reads
EXTRA_PROCESSES = 16  # on top of what the sandbox's user already runs


# ------------------------------------------------------------------------------------------ in the report
@dataclass
class Sandbox:
    uid: int | None  # the user to switch to (root only); None: run as the current user
    gid: int | None
    isolated: bool  # namespaces allowed here
    budget: float

    def command(self, verdict_fd: int, nproc: int) -> list[str]:
        ids = [str(self.uid), str(self.gid)] if self.uid is not None else ["-", "-"]
        supervisor = [sys.executable, "-I", __file__, str(verdict_fd), *ids, str(nproc), str(self.budget)]
        return [*namespaces(), *supervisor] if self.isolated else supervisor


def namespaces() -> list[str]:
    user = ["--user", "--map-current-user"] if os.geteuid() != 0 else []
    return [shutil.which("unshare") or "unshare", *user, "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]


def prepare(user: str | None, budget: float, warn) -> Sandbox:
    """The sandbox for this machine; raises ValueError (a Chinese line) when the user is unknown."""
    uid = gid = None
    if os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(user or "nobody")
        except KeyError:
            raise ValueError(f"没有名为 {user or 'nobody'} 的用户：请用 --recheck-user 指定一个已有的普通用户。") \
                from None
        if entry.pw_uid == 0:
            raise ValueError(f"--recheck-user {user} 是管理员（uid 0）：请指定一个普通用户。")
        uid, gid = entry.pw_uid, entry.pw_gid
    probe = subprocess.run([*namespaces(), "true"], capture_output=True)
    if probe.returncode:
        warn("本机不允许新建命名空间（unshare 失败）：重跑的学生代码可以联网，脱离进程组的子进程可能留下。")
    box = Sandbox(uid, gid, probe.returncode == 0, budget)
    import inspect

    from lesson_lib.sections import exercises

    if not confirm(box, "split_heads", inspect.getsource(exercises.EXERCISES["split_heads"].solution)):
        who = f"用户 {user or 'nobody'}" if uid is not None else "当前用户"
        raise ValueError(f"隔离的检查进程（{who}）连参考答案都没能通过：它可能读不到 Python 或 lesson_lib"
                         f"（{sys.executable}、{ROOT}）。请用 --recheck-user 指定一个能读它们的普通用户，"
                         "或让它们对所有人可读（chmod o+rx 所在的各级文件夹），再运行。")
    return box


def confirm(box: Sandbox, name: str, source) -> bool:
    """True only when the supervisor said exactly "ready", then "passed": anything else (nothing in time, a line
    it did not write) is no confirmation."""
    if not isinstance(source, str) or not source.strip() or len(source) > MAX_JOB // 8:
        return False
    return run(box, {"name": name, "source": source}) == [{"ready": True}, {"passed": True}]


def run(box: Sandbox, job: dict) -> list:
    """The supervisor's lines, each parsed as JSON (None where a line is not JSON)."""
    folder = tempfile.mkdtemp(prefix="recheck-")
    read_end, write_end = os.pipe()
    process = None
    try:
        if box.uid is not None:
            os.chown(folder, box.uid, box.gid)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), "HOME": folder,
               "TMPDIR": folder, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        uid = os.geteuid() if box.uid is None else box.uid
        process = subprocess.Popen(box.command(write_end, processes_of(uid) + EXTRA_PROCESSES),
                                   cwd=folder, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, pass_fds=(write_end,), start_new_session=True)
        os.close(write_end)
        write_end = -1
        try:
            process.stdin.write(json.dumps(job).encode("utf-8"))
            process.stdin.close()
        except OSError:  # it ended before reading: no verdict
            return []
        return _lines(read_end, box.budget)
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
        if process is not None:
            _end(process)
        shutil.rmtree(folder, ignore_errors=True)


def _lines(fd: int, budget: float) -> list:
    """Until the pipe closes: the first line within START_S, the rest within the budget after it."""
    data, deadline = b"", time.monotonic() + START_S
    while len(data) <= MAX_ANSWER:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, MAX_ANSWER) if ready else b""
        if not chunk:  # closed, or out of time
            break
        if b"\n" not in data and b"\n" in chunk:  # "ready": the student's code starts now
            deadline = time.monotonic() + budget
        data += chunk
    return [_parse(line) for line in data.splitlines()]


def _parse(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


def _end(process: subprocess.Popen) -> None:
    """Kill the supervisor (the pid namespace's init: everything inside ends with it), then the whole group."""
    for pid in children(process.pid):  # unshare's child; without namespaces, the supervisor's own child
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=START_S)  # unshare returns once its child, the namespace's init, is gone
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)  # without namespaces: what stayed in the session's group
    except (ProcessLookupError, PermissionError):
        pass


def children(pid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                if int(f.read().rsplit(b")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def processes_of(uid: int) -> int:
    """How many processes ``uid`` runs now (RLIMIT_NPROC counts them all, not only the sandbox's)."""
    count = 0
    for entry in os.scandir("/proc"):
        try:
            count += entry.name.isdigit() and os.stat(entry.path).st_uid == uid
        except OSError:
            continue
    return count


# ------------------------------------------------------------------------------------------ the supervisor
def supervise(verdict_fd: int, uid: int | None, gid: int | None, nproc: int, budget: float) -> None:
    import ctypes
    import resource

    sys.path.insert(0, str(ROOT))
    from lesson_lib.sections import exercises  # the lesson's own code, imported before the user switch

    job = json.loads(sys.stdin.buffer.read(MAX_JOB) or b"{}")
    verdict = os.fdopen(verdict_fd, "w")
    with open("/proc/self/statm") as f:
        memory = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + 2**30
    cpu = int(time.process_time() + budget) + 2
    for limit, value in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, memory),
                         (resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_FSIZE, 1 << 20)):  # fmt: skip
        resource.setrlimit(limit, (value, value))
    if uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: the student's code cannot open /proc/1/fd/…
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # init ignores what the student may send it
    verdict.write(json.dumps({"ready": True}) + "\n")
    verdict.flush()
    pid = os.fork()
    if pid == 0:
        verdict.close()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        code = FAILED
        try:
            code = PASSED if passes(exercises, job["name"], job["source"]) else FAILED
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    verdict.write(json.dumps({"passed": os.waitstatus_to_exitcode(status) == PASSED}) + "\n")
    verdict.flush()


def passes(exercises, name: str, source: str) -> bool:
    """Every case of the exercise, on the last function the source defines (as the checker's own _check_here)."""
    import inspect
    import math

    import numpy as np

    ex = exercises.EXERCISES[name]
    namespace = {"__name__": "__learner__", "np": np, "numpy": np, "math": math, "softmax": exercises.softmax,
                 "exercises": type("Cell", (), {"check": staticmethod(lambda *a, **k: None)})}
    exec(compile(source, "<learner>", "exec"), namespace)  # in the sandbox, as its user
    fn = [v for v in namespace.values() if inspect.isfunction(v) and v.__module__ == "__learner__"][-1]
    rng = np.random.default_rng(0)
    for n, d, h in ex.cases:
        case, args = f"n={n}, d_model={d}, h={h}", ex.inputs(rng, n, d, h)
        ex.verdict(case, exercises._call(ex, case, fn, args, source), *args)  # raises on a wrong answer
    return True


if __name__ == "__main__":
    fd_arg, uid_arg, gid_arg, nproc_arg, budget_arg = sys.argv[1:6]
    supervise(int(fd_arg), None if uid_arg == "-" else int(uid_arg), None if gid_arg == "-" else int(gid_arg),
              int(nproc_arg), float(budget_arg))
