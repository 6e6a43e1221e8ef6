"""The class report's --recheck: a student's stored source runs again, contained; only a verdict comes back.

Root only: the report refuses --recheck otherwise, since the student's code would run with the caller's own rights.
Layers (each held by a test in tests/test_class_report.py):
- namespaces (``unshare --net --ipc --pid --mount-proc``): no network, none of the machine's System V IPC (shared
  memory a desktop leaves 0666), and the supervisor is the pid namespace's init, so when it ends every process the
  student started ends with it (double fork or not);
- the mount namespace: fresh tmpfs over /tmp, /var/tmp and /dev/shm (nothing written there is seen outside or
  survives: no link planted for the report to write through) and /dev/mqueue (the machine's POSIX message queues,
  which a path reaches from any IPC namespace), and over the homes (/root, /home, the caller's) and any folder other
  users cannot enter above what the check needs; the interpreter's stdlib, the environment's site-packages and
  lesson_lib are bound back read-only, so the user imports what a student may import and reads no home;
- the user: the supervisor drops to an unprivileged user (``nobody`` unless named) before any student line runs;
- no sockets: a seccomp filter fails socket(2), so no daemon's Unix socket is reachable wherever it lives (the
  network namespace cuts only the network and abstract sockets), and no new privileges (setuid programs raise none);
- resource limits (CPU time, memory, processes, file size), an empty working folder in that private /tmp owned by
  that user, a scrubbed environment, its own session; the report kills it at the budget;
- the verdict is JSON on a pipe that the student's code never holds: the check runs in a grandchild whose fds 0-2
  are /dev/null and whose other fds are closed, and the supervisor (not dumpable, so /proc/1/fd stays shut) reads
  only the grandchild's exit status. No pickle on this path.
Run as ``python -I recheck_sandbox.py FD UID GID NPROC BUDGET`` (the supervisor, inside the namespaces).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import select
import shutil
import signal
import struct
import subprocess
import sys
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
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue")  # a fresh tmpfs each in the sandbox, where they exist
SYSCALLS = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}  # AUDIT_ARCH_…, socket(2)'s number
WORK = "/tmp/recheck"  # the student's working folder and HOME, in the sandbox's private /tmp
PREFLIGHT_IMPORT = "import colorsys\n"  # a stdlib module the supervisor never loads: the user must read the stdlib


@dataclass
class Sandbox:
    uid: int  # the unprivileged user the supervisor switches to
    gid: int
    budget: float
    hide: list[str]  # folders an empty tmpfs covers in the sandbox
    keep: list[str]  # folders under them bound back read-only: what the check imports

    def command(self, verdict_fd: int, nproc: int) -> list[str]:
        ids = [str(self.uid), str(self.gid)]
        return [*namespaces(), sys.executable, "-I", __file__, str(verdict_fd), *ids, str(nproc), str(self.budget)]


def namespaces() -> list[str]:
    return [shutil.which("unshare") or "unshare", "--net", "--ipc", "--pid", "--fork", "--kill-child", "--mount-proc"]


class Refused(ValueError):
    """--recheck cannot run here: ``reason`` names the requirement missing (a key of REFUSALS), str() says it in
    Chinese with what to do."""

    def __init__(self, reason: str, **named):
        super().__init__(REFUSALS[reason].format(**named) + WITHOUT)
        self.reason = reason


WITHOUT = "；或者去掉 --recheck（通过的练习照常列出，只是没有重跑确认）。"
REFUSALS = {
    "root": "不是以 root 运行：这时学生的代码只能带着你自己的文件权限运行（能读写你的家目录、你的密钥），所以不跑。"
            "请用 root 权限运行报告（例如 sudo .venv/bin/python scripts/class_report.py … --recheck --out 新文件夹），"
            "学生的代码会以 nobody 运行",
    "no_user": "没有名为 {user} 的用户：请用 --recheck-user 指定一个已有的普通用户",
    "admin_user": "--recheck-user {user} 是管理员（uid 0）：请指定一个普通用户",
    "arch": "沙箱不认得本机的处理器架构 {machine}（只认 x86_64、aarch64），挡不住学生的代码去连本机程序的套接字，"
            "所以不跑：请在这样的机器上运行",
    "namespaces": "本机不允许新建命名空间或在其中挂载（unshare 或 mount 失败，常见于容器里），学生的代码无法隔离："
                  "请在允许的机器上运行（容器要有 CAP_SYS_ADMIN，或在容器外的主机上跑）",
    "user": "检查进程换不成用户 {user}（setuid 失败，常见于不允许换用户的容器里）：学生的代码只能以 root 运行，"
            "所以不跑：请在允许换用户的机器上运行，或用 --recheck-user 指定另一个普通用户",
    "seccomp": "本机内核不支持 seccomp 过滤器（prctl 失败：内核没开 CONFIG_SECCOMP_FILTER，或容器禁用了它），"
               "挡不住学生的代码去连本机程序的套接字，所以不跑：请在内核支持 seccomp 的机器上运行",
    "readable": "隔离的检查进程（用户 {user}）连参考答案都没能通过，多半是它读不到 Python 的标准库、site-packages "
                "或 lesson_lib（{python}、{root}）。诚实的学生会被标成「未确认」，所以不跑："
                "请让这些文件夹对所有人可读（chmod o+rX），或用 --recheck-user 指定一个能读它们的普通用户",
    "silent": "隔离的检查进程没有回话（没能启动，或 {seconds:.0f} 秒内没有开始）：请检查 {python} 能否在 unshare 里"
              "启动（手动运行 unshare --pid --fork --mount-proc {python} -c pass 看它报什么错）",
}


def prepare(user: str | None, budget: float) -> Sandbox:
    """The sandbox for this machine; raises Refused (a Chinese line naming the missing requirement) when it cannot
    contain the student's code."""
    if os.geteuid() != 0:
        raise Refused("root")
    name = user or "nobody"
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise Refused("no_user", user=name) from None
    if entry.pw_uid == 0:
        raise Refused("admin_user", user=name)
    if os.uname().machine not in SYSCALLS:
        raise Refused("arch", machine=os.uname().machine)
    if subprocess.run([*namespaces(), "true"], capture_output=True).returncode:
        raise Refused("namespaces")
    keep = needed()
    box = Sandbox(entry.pw_uid, entry.pw_gid, budget, hidden(keep), keep)
    import inspect

    from lesson_lib.sections import exercises

    reference = inspect.getsource(exercises.EXERCISES["split_heads"].solution)
    reason = missing(run(box, {"name": "split_heads", "source": PREFLIGHT_IMPORT + reference}))
    if reason:
        raise Refused(reason, user=entry.pw_name, python=sys.executable, root=ROOT, seconds=START_S)
    return box


def missing(lines: list) -> str | None:
    """What the preflight's run (the reference solution) says is missing, a key of REFUSALS; None when it passed.
    The supervisor names the step it could not take (supervise); a run that got to the reference and failed it
    could not import what it needs; no line at all: it never started."""
    if lines == [{"ready": True}, {"passed": True}]:
        return None
    said = lines[0] if lines and isinstance(lines[0], dict) else {}
    if said.get("failed") in STEPS:
        return said["failed"]
    return "readable" if said == {"ready": True} else "silent"


def needed() -> list[str]:
    """The folders the student's imports read: the stdlib, the environment's site-packages, lesson_lib."""
    import sysconfig

    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")} | {str(ROOT / "lesson_lib")}
    return outermost({os.path.realpath(p) for p in found if os.path.isdir(p)})


def hidden(keep: list[str]) -> list[str]:
    """What the sandbox covers: the private folders, the homes, and above each kept folder the first folder other
    users cannot enter (/root, a 0700 temp folder …), outermost only."""
    homes = {"/root", "/home", os.path.expanduser("~")}
    if os.environ.get("SUDO_USER"):  # the instructor who ran sudo
        homes.add(os.path.expanduser("~" + os.environ["SUDO_USER"]))
    for path in keep:
        shut = [p for p in Path(path).parents if p != p.parent and not os.stat(p).st_mode & 0o001]
        if shut:
            homes.add(str(shut[-1]))  # parents run inward to outward
    return outermost({os.path.realpath(p) for p in (*PRIVATE, *homes) if os.path.isdir(p)} - {"/"})


def outermost(paths: set[str]) -> list[str]:
    """The paths that lie in none of the others."""
    return sorted(p for p in paths if not any(Path(p).is_relative_to(q) and p != q for q in paths))


def confirm(box: Sandbox, name: str, source) -> bool:
    """True only when the supervisor said exactly "ready", then "passed": anything else (nothing in time, a line
    it did not write) is no confirmation."""
    if not isinstance(source, str) or not source.strip() or len(source) > MAX_JOB // 8:
        return False
    return run(box, {"name": name, "source": source}) == [{"ready": True}, {"passed": True}]


def run(box: Sandbox, job: dict) -> list:
    """The supervisor's lines, each parsed as JSON (None where a line is not JSON)."""
    read_end, write_end = os.pipe()
    process = None
    try:
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), "HOME": WORK,
               "TMPDIR": WORK, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        process = subprocess.Popen(box.command(write_end, processes_of(box.uid) + EXTRA_PROCESSES),
                                   cwd="/", env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, pass_fds=(write_end,), start_new_session=True)
        os.close(write_end)
        write_end = -1
        try:
            process.stdin.write(json.dumps({**job, "hide": box.hide, "keep": box.keep}).encode("utf-8"))
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
    """Kill the supervisor, the pid namespace's init: everything inside ends with it."""
    for pid in children(process.pid):  # unshare's child
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=START_S)  # unshare returns once its child, the namespace's init, is gone
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32  # mount(2)'s flags
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2  # prctl(2)
BPF_LD_ABS, BPF_JEQ, BPF_JGE, BPF_RET = 0x20, 0x15, 0x35, 0x06  # load the word at k; jump if == k, if >= k; return k
RET_ALLOW, RET_ERRNO, RET_KILL = 0x7FFF0000, 0x50000, 0x80000000  # seccomp's verdicts (RET_KILL: the process)
X32_SYSCALL_BIT, IO_URING_SETUP = 0x40000000, 425  # io_uring_setup's number is the same on both machines


def supervise(verdict_fd: int, uid: int, gid: int, nproc: int, budget: float) -> None:
    import ctypes
    import resource

    sys.path.insert(0, str(ROOT))
    from lesson_lib.sections import exercises  # the lesson's own code, imported before the user switch

    job = json.loads(sys.stdin.buffer.read(MAX_JOB) or b"{}")
    verdict = os.fdopen(verdict_fd, "w")
    with step(verdict, "namespaces"):
        seal(job["hide"], job["keep"], uid, gid)
    with open("/proc/self/statm") as f:
        memory = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + 2**30
    cpu = int(time.process_time() + budget) + 2
    for limit, value in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, memory),
                         (resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_FSIZE, 1 << 20)):  # fmt: skip
        resource.setrlimit(limit, (value, value))
    with step(verdict, "user"):
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: the student's code cannot open /proc/1/fd/…
    with step(verdict, "seccomp"):
        no_sockets()
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


STEPS = ("namespaces", "user", "seccomp")  # what the supervisor needs of the machine, in the order it takes them


@contextlib.contextmanager
def step(verdict, name: str):
    """One of STEPS: if the machine refuses it, the line {"failed": name} and the supervisor ends, before any
    student line runs (the preflight says which requirement is missing, never a guess)."""
    try:
        yield
    except OSError:
        verdict.write(json.dumps({"failed": name}) + "\n")
        verdict.flush()
        raise SystemExit(1) from None


def seal(hide: list[str], keep: list[str], uid: int, gid: int) -> None:
    """In the sandbox's own mount namespace, as root: an empty tmpfs over each hidden folder, the kept folders bound
    back read-only where one covered them, and an empty working folder of the user's own in the private /tmp."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def mount(source: str, target: str, kind: str, flags: int, data: str = "") -> None:
        if libc.mount(source.encode(), target.encode(), kind.encode(), flags, data.encode()):
            raise OSError(ctypes.get_errno(), "mount", target)

    mount("none", "/", "", MS_REC | MS_PRIVATE)  # nothing mounted below reaches the caller's namespace
    covered = [k for k in keep if any(Path(k).is_relative_to(h) for h in hide)]
    held = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in covered}  # before a tmpfs covers them
    for folder in hide:
        mode = "1777" if folder in PRIVATE else "755"
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size=32m,nr_inodes=4096,mode={mode}")
    os.umask(0o022)  # the recreated folders above a kept one: the user passes through them
    for folder, fd in held.items():
        os.makedirs(folder, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", folder, "", MS_BIND)
        mount("none", folder, "", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    os.mkdir(WORK, 0o700)
    os.chown(WORK, uid, gid)
    os.chdir(WORK)


def no_sockets() -> None:
    """A seccomp filter, kept by every process the student's code starts: socket(2) fails (EPERM) whatever the family,
    so no Unix socket on the machine is reachable wherever it lives (D-Bus's system bus, docker's, the journal's under
    /run; the Nix daemon's under /nix; WSLg's X server under /mnt/wslg), nor a VM's host by AF_VSOCK. io_uring's
    requests pass no filter: its setup fails too. Another ABI (x32, 32-bit) is killed. No new privileges either: a
    setuid program the student's code runs raises none."""
    import ctypes

    audit_arch, socket_nr = SYSCALLS[os.uname().machine]
    program = [(BPF_LD_ABS, 0, 0, 4), (BPF_JEQ, 0, 6, audit_arch),  # seccomp_data.arch: not ours, kill
               (BPF_LD_ABS, 0, 0, 0), (BPF_JGE, 4, 0, X32_SYSCALL_BIT),  # seccomp_data.nr: x32's, kill
               (BPF_JEQ, 2, 0, socket_nr), (BPF_JEQ, 1, 0, IO_URING_SETUP),
               (BPF_RET, 0, 0, RET_ALLOW), (BPF_RET, 0, 0, RET_ERRNO | errno.EPERM), (BPF_RET, 0, 0, RET_KILL)]
    filters = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *op) for op in program))
    fprog = ctypes.create_string_buffer(struct.pack("=H6xQ", len(program), ctypes.addressof(filters)))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    for option, value, arg in ((PR_SET_NO_NEW_PRIVS, 1, None), (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog)):
        if libc.prctl(option, value, arg, 0, 0):
            raise OSError(ctypes.get_errno(), "prctl", option)


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
    supervise(int(fd_arg), int(uid_arg), int(gid_arg), int(nproc_arg), float(budget_arg))
