"""A class on one machine: a real JupyterHub, N students, Restart & Run All at the same moment.

    .venv/bin/python benchmarks/classroom.py [--students 8] [--no-solo] [--no-update] [--json out.json]

Needs ``pip install -r benchmarks/classroom-requirements.txt`` in the lesson's environment and the
hub's proxy (``npm install -g configurable-http-proxy``). What it does, all on loopback, in a
temporary directory that is removed afterwards:

1. Lays out an "image" from this repository's committed HEAD, as binder/postBuild does: the course's notebooks and
   scripts/personal_copy.py in ``<tmp>/image/share/day11-multi-head-attention/``, and ``lesson_lib`` (which the
   students' kernels import, through PYTHONPATH) in ``<tmp>/image/lib/``.
2. Starts JupyterHub (dummy authenticator with a random shared password, SimpleLocalProcessSpawner:
   one ``jupyterhub-singleuser`` process per student, home ``<tmp>/home/<name>``), on random free ports.
   Every server starts through ``binder/start``, which makes the student's own copy
   ``~/my_lesson/day11_multi_head_attention.ipynb`` from the image (the README's hub link opens it).
3. Creates N students through the hub's REST API and starts their servers.
4. Each opens their copy (a session, as JupyterLab does), then all press Restart & Run All together:
   the kernel is restarted and every code cell is executed over the kernel websocket, in order; then each
   submits one (wrong) exercise attempt, which the lesson saves to the student's progress file.
5. While they run, a prober fetches the hub's login page and a student's file listing every 0.5 s.
6. A course update (``--no-update`` skips it): each student answers two questions; the image gets a new
   version of the lesson in which one of them (``UPDATED_QUESTION``) is asked differently and the notebook
   says so; every server restarts (binder/start renews the copy), and each student runs the new copy. Each
   progress file is read before and after: the other answer must be kept as it was, and the changed
   question's answer as an earlier version's.

It prints, per student: wall time, CPU-seconds (the kernel with its children, and the student's
server), peak memory of the kernel's process tree (PSS: shared pages split between processes), error
outputs, new kernels (one that never answered replaced, see KERNEL_REPLACEMENTS; the figures are the kernel's
that ran the lesson, the wall time includes the wait), and what the kernel wrote into the student's space (the
progress file); then the class's wall time, the page latencies before and during the load, and, as the
baseline measured in the same run, one student running alone (``--no-solo`` skips it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_notebook_cost import PeakSampler, kernel_peak_rss_bytes, tree_cpu_seconds  # noqa: E402

NOTEBOOK = "notebooks/day11_multi_head_attention.ipynb"
COPY_DIR = "my_lesson"  # where binder/start puts each student's own copy, inside their home
COPY = f"{COPY_DIR}/{Path(NOTEBOOK).name}"
# What binder/postBuild puts into the image (the course folder and the library the kernels import).
IMAGE_FILES = ("notebooks/day11_multi_head_attention.ipynb", "notebooks/lab_real_heads.ipynb",
               "notebooks/lab_ablation.ipynb", "scripts/personal_copy.py", "scripts/cpus.py", "lesson_lib")
COURSE = "share/day11-multi-head-attention"  # binder/start's course folder under NB_PYTHON_PREFIX
# The progress file's location can be set per student; the lesson's default puts it in the student's space.
PROGRESS_ENV = "LESSON_PROGRESS_FILE"
# After Restart & Run All each student submits one exercise attempt, so the lesson has progress to save:
# the classic slip of section 3, a reshape without the transpose (wrong, and recorded as such).
STUDENT_ATTEMPT = (
    "from lesson_lib.sections import exercises\n"
    "_ = exercises.check('split_heads', lambda x, h: x.reshape(h, x.shape[0], -1))"
)
# Before the course update each student answers two questions; the update then asks UPDATED_QUESTION differently.
STUDENT_ANSWERS = (("Q2", ["32", "不变"]), ("Q4", ["B"]))
UPDATED_QUESTION = "Q4"
ANSWER_CODE = (
    "from lesson_lib.practice import progress as _p, quiz as _q\n"
    "for _id, _a in {answers!r}:\n"
    "    _p.default_progress().record(_q.check(_id, _a), _a)"
)
UPDATE_NOTE = "（课程更新：这一版换了一道题的问法。）"
# Printed by each kernel at the end: the CPUs the image's cpus.py gives this student (run from the course folder, as
# binder/start runs it), the BLAS threads binder/start set for the server (OPENBLAS_NUM_THREADS, which the kernel
# inherits) and the BLAS threads the kernel runs.
THREADS_PROBE = (
    "import json as _j, os as _o, runpy as _r\n"
    "from lesson_lib.runtime.blas import blas_threads as _b\n"
    f"_u = _r.run_path(_o.path.join(_o.environ['NB_PYTHON_PREFIX'], {COURSE!r}, 'cpus.py'))['usable_cpus']\n"
    "print(_j.dumps({'usable_cpus': _u(), 'blas_env': _o.environ.get('OPENBLAS_NUM_THREADS'), "
    "'blas_threads': _b()}))"
)
LOOPBACK = "127.0.0.1"
CELL_TIMEOUT_S = 300
# Kernels started at the same moment on one machine each pick free ports, then bind them: another process may bind
# one first (ZMQError: Address already in use) and that kernel never answers. Its restarts keep the same ports
# (jupyter_client caches them for the kernel's life), so the driver does what a student would: a new kernel.
KERNEL_REPLACEMENTS = 3
PROBE_EVERY_S = 0.5


class ClassroomError(RuntimeError):
    pass


def missing_tools(venv_bin: Path) -> list[str]:
    """What this machine lacks for the load test, as install hints; empty when everything is there."""
    missing = []
    if not (venv_bin / "jupyterhub").exists() or not (venv_bin / "jupyterhub-singleuser").exists():
        missing.append("jupyterhub (pip install -r benchmarks/classroom-requirements.txt)")
    if shutil.which("configurable-http-proxy") is None:
        missing.append("configurable-http-proxy (npm install -g configurable-http-proxy)")
    if shutil.which("git") is None:
        missing.append("git")
    return missing


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# The hub
# ---------------------------------------------------------------------------------------------


def hub_config(tmp: Path, port: int, hub_port: int, api_port: int, token: str, password: str, venv_bin: Path,
               lesson_cpus: int | None = None) -> str:
    """jupyterhub_config.py: loopback only, students' homes under ``tmp``, a service token for the driver.

    Each server starts through ``binder/start``, as in a hub image, with ``<tmp>/image`` as the image's prefix
    (its course folder and ``lesson_lib``); ``lesson_cpus`` sets LESSON_CPUS for every student (an instructor's
    cap on a server without per-student quotas).
    """
    environment = {"NB_PYTHON_PREFIX": str(tmp / "image"), "PYTHONPATH": str(tmp / "image" / "lib")}
    if lesson_cpus:
        environment["LESSON_CPUS"] = str(lesson_cpus)
    return textwrap.dedent(f"""
        c = get_config()  # noqa
        c.JupyterHub.bind_url = "http://{LOOPBACK}:{port}"
        c.JupyterHub.hub_bind_url = "http://{LOOPBACK}:{hub_port}"
        c.ConfigurableHTTPProxy.api_url = "http://{LOOPBACK}:{api_port}"
        c.ConfigurableHTTPProxy.command = [{shutil.which("configurable-http-proxy")!r}]
        c.JupyterHub.db_url = "sqlite:///{tmp / "hub.sqlite"}"
        c.JupyterHub.cookie_secret_file = {str(tmp / "cookie_secret")!r}
        c.JupyterHub.pid_file = {str(tmp / "hub.pid")!r}
        c.JupyterHub.cleanup_servers = True
        c.JupyterHub.authenticator_class = "dummy"
        c.DummyAuthenticator.password = {password!r}
        c.Authenticator.allow_all = True
        c.JupyterHub.services = [{{"name": "classroom", "api_token": {token!r}}}]
        c.JupyterHub.load_roles = [{{
            "name": "classroom-driver",
            "scopes": ["admin:users", "admin:servers", "access:servers", "list:users"],
            "services": ["classroom"],
        }}]
        c.JupyterHub.spawner_class = "simple"
        c.SimpleLocalProcessSpawner.home_dir_template = {str(tmp / "home" / "{username}")!r}
        c.Spawner.cmd = [{str(ROOT / "binder" / "start")!r}, {str(venv_bin / "jupyterhub-singleuser")!r}]
        c.Spawner.environment = {environment!r}
        c.Spawner.args = ["--allow-root"]  # harmless for other users; CI runs as root
        c.Spawner.ip = "{LOOPBACK}"
        c.Spawner.default_url = "/lab"
        c.Spawner.notebook_dir = "~"
        c.Spawner.start_timeout = 180
        c.Spawner.http_timeout = 180
        # OPENBLAS_*: this machine's BLAS settings (see .library notes); LESSON_CPUS: an instructor's cap.
        c.Spawner.env_keep.extend(
            [k for k in {sorted(os.environ)!r} if k.startswith("OPENBLAS_") and k != "OPENBLAS_NUM_THREADS"]
        )
    """)


def _descendants(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


class Hub:
    """A JupyterHub process and everything it starts; ``stop()`` leaves no process behind."""

    def __init__(self, tmp: Path, venv_bin: Path, lesson_cpus: int | None = None):
        self.tmp, self.venv_bin, self.lesson_cpus = tmp, venv_bin, lesson_cpus
        self.port, self.hub_port, self.api_port = free_port(), free_port(), free_port()
        self.token, self.password = secrets.token_hex(16), secrets.token_urlsafe(12)
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.proc = None
        self.seen = {}  # pid -> psutil.Process, every descendant ever seen (to clean up)
        self.log_path = tmp / "hub.log"

    def start(self, timeout=90.0):
        config = self.tmp / "jupyterhub_config.py"
        config.write_text(hub_config(self.tmp, self.port, self.hub_port, self.api_port, self.token,
                                     self.password, self.venv_bin, self.lesson_cpus))
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
        env["PATH"] = f"{self.venv_bin}{os.pathsep}{env.get('PATH', '')}"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen([str(self.venv_bin / "jupyterhub"), "-f", str(config)], cwd=self.tmp,
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ClassroomError(f"JupyterHub exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                with socket.create_connection((LOOPBACK, self.port), timeout=1):
                    if self._api_ready():
                        return self
            time.sleep(0.3)
        raise ClassroomError(f"JupyterHub did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def _api_ready(self) -> bool:
        import urllib.request

        try:
            with urllib.request.urlopen(f"{self.url}/hub/api/", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def remember_processes(self):
        if self.proc is not None:
            for p in _descendants(self.proc.pid):
                self.seen.setdefault(p.pid, p)

    def log_tail(self, lines=40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout=30.0) -> list[int]:
        """SIGTERM the hub (it stops the servers and the proxy), then kill whatever it started and left."""
        import psutil

        if self.proc is None:
            return []
        self.remember_processes()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        leftovers = [p for p in self.seen.values() if _alive(p)]
        self.leftover_names = []
        for p in leftovers:
            with contextlib.suppress(psutil.Error):
                self.leftover_names.append(" ".join(p.cmdline())[:120])
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(leftovers, timeout=10)
        self._log.close()
        return [p.pid for p in leftovers]


def _alive(proc) -> bool:
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ---------------------------------------------------------------------------------------------
# Talking to it: REST and the kernel websocket
# ---------------------------------------------------------------------------------------------


class Api:
    def __init__(self, hub: Hub):
        from tornado.httpclient import AsyncHTTPClient

        self.hub = hub
        self.http = AsyncHTTPClient(force_instance=True, max_clients=64)
        self.headers = {"Authorization": f"token {hub.token}"}

    async def call(self, method, path, body=None, timeout=120.0, ok=(200, 201, 202, 204)):
        from tornado.httpclient import HTTPClientError

        data = None if body is None else json.dumps(body)
        if data is None and method in ("POST", "PUT", "PATCH"):
            data = ""
        try:
            response = await self.http.fetch(f"{self.hub.url}{path}", method=method, body=data, headers=self.headers,
                                             request_timeout=timeout, raise_error=False)
        except (OSError, HTTPClientError) as exc:
            raise ClassroomError(f"{method} {path}: {exc}") from exc
        if response.code not in ok:
            raise ClassroomError(f"{method} {path}: HTTP {response.code} {response.body[:300]!r}")
        text = response.body.decode() if response.body else ""
        return json.loads(text) if text.strip().startswith(("{", "[")) else text

    async def wait_for_server(self, name, timeout=180.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            user = await self.call("GET", f"/hub/api/users/{name}")
            server = user.get("servers", {}).get("", {})
            if server.get("ready"):
                return
            if not server.get("pending") and not server:
                raise ClassroomError(f"{name}'s server stopped while starting:\n{self.hub.log_tail()}")
            await asyncio.sleep(0.3)
        raise ClassroomError(f"{name}'s server was not ready within {timeout:.0f} s:\n{self.hub.log_tail()}")

    def ws_request(self, path):
        from tornado.httpclient import HTTPRequest

        return HTTPRequest(f"ws://{LOOPBACK}:{self.hub.port}{path}", headers=self.headers, request_timeout=60)

    def close(self):
        self.http.close()


def _message(msg_type, content, session):
    return {
        "header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "classroom", "session": session,
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "version": "5.3"},
        "parent_header": {}, "metadata": {}, "content": content, "channel": "shell",
    }


class KernelChannel:
    """One websocket to a kernel; ``request`` sends a message and gathers its replies until idle."""

    def __init__(self, ws, session):
        self.ws, self.session = ws, session

    async def request(self, msg_type, content, timeout):
        msg = _message(msg_type, content, self.session)
        msg_id = msg["header"]["msg_id"]
        await self.ws.write_message(json.dumps(msg))
        reply, outputs, idle = None, [], False
        deadline = time.monotonic() + timeout
        while reply is None or not idle:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClassroomError(f"{msg_type} got no reply within {timeout:.0f} s")
            try:
                raw = await asyncio.wait_for(self.ws.read_message(), left)
            except asyncio.TimeoutError:
                raise ClassroomError(f"{msg_type} got no reply within {timeout:.0f} s") from None
            if raw is None:
                raise ClassroomError("the kernel websocket closed")
            if isinstance(raw, bytes):
                continue  # binary protocol frames are not requested; ignore stray ones
            incoming = json.loads(raw)
            if incoming.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = incoming["header"]["msg_type"]
            if incoming.get("channel") == "shell" and kind.endswith("_reply"):
                reply = incoming["content"]
            elif kind == "status" and incoming["content"].get("execution_state") == "idle":
                idle = True
            elif kind in ("error", "stream", "execute_result", "display_data"):
                outputs.append((kind, incoming["content"]))
        return reply, outputs


# ---------------------------------------------------------------------------------------------
# One student
# ---------------------------------------------------------------------------------------------


@dataclass
class StudentRun:
    name: str
    wall_s: float = 0.0
    kernel_cpu_s: float = 0.0
    server_cpu_s: float = 0.0
    kernel_peak_mb: float = 0.0
    tree_peak_mb: float = 0.0  # summed RSS of the kernel's process tree (shared pages once per process)
    tree_peak_pss_mb: float = 0.0  # summed PSS: the tree's own share
    cells: int = 0
    errors: list = field(default_factory=list)
    stderr_cells: int = 0
    written: list = field(default_factory=list)  # files the run created or changed in the student's space
    progress_files: list = field(default_factory=list)
    threads: dict = field(default_factory=dict)  # what the kernel sized itself to (THREADS_PROBE)
    kernel_retries: int = 0  # kernels that never answered and were replaced by a new session's (wall_s includes them)


def kernel_pid(kernel_id: str) -> int | None:
    """The newest local kernel process whose connection file names ``kernel_id`` (a restart reuses it)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "create_time"]):
        cmd = proc.info.get("cmdline") or []
        if any(f"kernel-{kernel_id}.json" in part for part in cmd) and _alive(proc):
            found.append((proc.info["create_time"], proc.pid))
    return max(found)[1] if found else None


def own_cpu_seconds(pid: int) -> float:
    """CPU of one process itself, without its children."""
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


def server_pid(home: Path) -> int | None:
    import psutil

    for proc in psutil.process_iter(["cmdline", "cwd"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if "jupyterhub-singleuser" in cmd and proc.info.get("cwd") == str(home):
            return proc.pid
    return None


def _files(root: Path) -> dict[str, float]:
    out = {}
    for path in root.rglob("*"):
        if path.is_file() and ".ipynb_checkpoints" not in path.parts:
            with contextlib.suppress(OSError):
                out[str(path.relative_to(root))] = path.stat().st_mtime
    return out


class Student:
    def __init__(self, api: Api, name: str, home: Path):
        self.api, self.name, self.home = api, name, home
        self.kernel_id = None
        self.session_id = None
        self.code = []

    async def open_lesson(self):
        """Start the server (binder/start makes the student's copy first) and open the copy in a session."""
        await self.api.call("POST", f"/hub/api/users/{self.name}/server")
        await self.api.wait_for_server(self.name)
        model = await self.api.call("GET", f"/user/{self.name}/api/contents/{quote(COPY)}?content=1")
        self.code = [c["source"] for c in model["content"]["cells"] if c["cell_type"] == "code" and c["source"].strip()]
        self.code.append(STUDENT_ATTEMPT)
        await self.open_session()

    async def open_session(self):
        """Open the copy in a new session (a new kernel), as JupyterLab does."""
        session = await self.api.call("POST", f"/user/{self.name}/api/sessions",
                                      {"path": COPY, "type": "notebook", "name": "", "kernel": {"name": "python3"}})
        self.session_id = session["id"]
        self.kernel_id = session["kernel"]["id"]

    async def connect(self):
        """A websocket to the open kernel: (the websocket, its channel)."""
        from tornado.websocket import websocket_connect

        session = uuid.uuid4().hex
        ws = await websocket_connect(self.api.ws_request(
            f"/user/{self.name}/api/kernels/{self.kernel_id}/channels?session_id={session}"))
        return ws, KernelChannel(ws, session)

    async def execute(self, code: str, timeout: float = 120) -> list:
        """Run ``code`` in the open kernel (as a cell the student adds); its error outputs."""
        ws, channel = await self.connect()
        try:
            reply, outputs = await channel.request(
                "execute_request", {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                                    "allow_stdin": False}, timeout=timeout)
        finally:
            ws.close()
        errors = [f"{c.get('ename')}: {c.get('evalue')}" for kind, c in outputs if kind == "error"]
        return errors or ([] if reply.get("status") == "ok" else [f"reply status {reply.get('status')}"])

    def progress(self) -> dict:
        """The student's progress file (wherever in their home the lesson keeps it by default); {} if none."""
        for path in self.home.rglob("progress.json"):
            with contextlib.suppress(OSError, ValueError):
                return json.loads(path.read_text(encoding="utf-8"))
        return {}

    async def close(self):
        """Shut the kernel down, then the server, as a student logging out would; wait until it is gone."""
        with contextlib.suppress(ClassroomError):
            if self.kernel_id:
                await self.api.call("DELETE", f"/user/{self.name}/api/kernels/{self.kernel_id}", timeout=60)
        with contextlib.suppress(ClassroomError):
            await self.api.call("DELETE", f"/hub/api/users/{self.name}/server", timeout=60)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                user = await self.api.call("GET", f"/hub/api/users/{self.name}")
                if not user.get("servers"):
                    return
                await asyncio.sleep(0.3)

    async def restarted_kernel(self, run: StudentRun):
        """Restart the kernel and wait for its first answer; one that never answers (see KERNEL_REPLACEMENTS) is shut
        down with its session and a new session opened instead. The answering kernel: (its pid, websocket, channel)."""
        from tornado.httpclient import HTTPClientError
        from tornado.websocket import WebSocketError

        for attempt in range(KERNEL_REPLACEMENTS + 1):
            ws = None
            try:
                if attempt == 0:
                    await self.api.call("POST", f"/user/{self.name}/api/kernels/{self.kernel_id}/restart", timeout=180)
                else:
                    await self.api.call("DELETE", f"/user/{self.name}/api/sessions/{self.session_id}", timeout=60,
                                        ok=(204, 404, 410))  # 404, 410: the session, or its kernel, already gone
                    await self.open_session()
                pid = kernel_pid(self.kernel_id)
                if pid is None:
                    raise ClassroomError(f"{self.name}: no kernel process for kernel {self.kernel_id}")
                ws, channel = await self.connect()
                await channel.request("kernel_info_request", {}, timeout=120)
                return pid, ws, channel
            except (WebSocketError, HTTPClientError, OSError, ClassroomError):  # OSError: a stream closed
                if ws is not None:
                    ws.close()
                if attempt == KERNEL_REPLACEMENTS:
                    raise
                run.kernel_retries += 1

    async def restart_and_run_all(self, go: asyncio.Event) -> StudentRun:
        run = StudentRun(self.name)
        before = _files(self.home)
        server = server_pid(self.home)
        server_cpu0 = own_cpu_seconds(server) if server else 0.0
        await go.wait()
        start = time.perf_counter()
        pid, ws, channel = await self.restarted_kernel(run)
        try:
            with PeakSampler(pid) as sampler:
                for index, code in enumerate(self.code):
                    reply, outputs = await channel.request(
                        "execute_request",
                        {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                         "allow_stdin": False, "stop_on_error": True},
                        timeout=CELL_TIMEOUT_S)
                    run.cells += 1
                    for kind, content in outputs:
                        if kind == "error":
                            run.errors.append(f"cell {index}: {content.get('ename')}: {content.get('evalue')}")
                    if any(k == "stream" and c.get("name") == "stderr" for k, c in outputs):
                        run.stderr_cells += 1
                    if reply.get("status") != "ok" and not any(e.startswith(f"cell {index}:") for e in run.errors):
                        run.errors.append(f"cell {index}: reply status {reply.get('status')}")
                run.kernel_cpu_s = tree_cpu_seconds(pid)
                _, probe = await channel.request(
                    "execute_request", {"code": THREADS_PROBE, "silent": False, "store_history": False,
                                        "user_expressions": {}, "allow_stdin": False}, timeout=60)
                text = "".join(c.get("text", "") for k, c in probe if k == "stream" and c.get("name") == "stdout")
                with contextlib.suppress(ValueError):
                    run.threads = json.loads(text.strip().splitlines()[-1])
                peak = kernel_peak_rss_bytes(pid)
        finally:
            ws.close()
        run.wall_s = time.perf_counter() - start
        run.tree_peak_mb = sampler.peak / 2**20
        run.tree_peak_pss_mb = sampler.peak_pss / 2**20
        run.kernel_peak_mb = (peak or 0) / 2**20
        run.server_cpu_s = (own_cpu_seconds(server) - server_cpu0) if server else 0.0
        after = _files(self.home)
        run.written = sorted(p for p, t in after.items() if before.get(p) != t)
        run.progress_files = [p for p in run.written  # the lock beside the file is filelock's, not a second file
                              if "progress" in Path(p).name.lower() and not p.endswith(".lock")]
        return run


# ---------------------------------------------------------------------------------------------
# The class
# ---------------------------------------------------------------------------------------------


class Prober:
    """Fetches a hub page and a student's file listing every PROBE_EVERY_S; latencies in seconds."""

    def __init__(self, api: Api, student: str):
        self.api, self.student = api, student
        self.latencies = {"hub login page": [], "student lab page": [], "student file list": []}
        self.failures = []

    async def once(self):
        from tornado.httpclient import HTTPClientError

        for label, path, headers in (("hub login page", "/hub/login", {}),
                                     ("student lab page", f"/user/{self.student}/lab", self.api.headers),
                                     ("student file list", f"/user/{self.student}/api/contents/{COPY_DIR}",
                                      self.api.headers)):
            start = time.perf_counter()
            try:
                r = await self.api.http.fetch(f"{self.api.hub.url}{path}", headers=headers, request_timeout=60,
                                              raise_error=False)
                code = r.code
            except (OSError, HTTPClientError) as exc:
                code = str(exc)
            if code == 200:
                self.latencies[label].append(time.perf_counter() - start)
            else:
                self.failures.append(f"{label}: {code}")

    async def run(self, stop: asyncio.Event):
        while not stop.is_set():
            await self.once()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), PROBE_EVERY_S)


def build_image(tmp: Path) -> Path:
    """``<tmp>/image`` from this repository's committed HEAD, laid out as binder/postBuild lays out a hub image:
    the course folder binder/start makes each student's copy from, and ``lib/lesson_lib`` for the kernels."""
    src, image = tmp / "src", tmp / "image"
    src.mkdir()
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD", *IMAGE_FILES], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    course = image / COURSE
    (course / "notebooks").mkdir(parents=True)
    for name in IMAGE_FILES[:3]:
        shutil.copy(src / name, course / "notebooks")
    shutil.copy(src / "scripts" / "personal_copy.py", course)
    shutil.copy(src / "scripts" / "cpus.py", course)
    (image / "lib").mkdir()
    shutil.move(src / "lesson_lib", image / "lib" / "lesson_lib")
    shutil.rmtree(src)
    return image


def _in_image(image: Path, code: str, *args: str) -> str:
    """What ``code`` prints when run with the image's lesson_lib (as the students' kernels import it)."""
    env = {**os.environ, "PYTHONPATH": str(image / "lib")}
    # cwd: ``-c`` puts it first on sys.path, and this repository's own lesson_lib must not shadow the image's
    return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=image, capture_output=True, text=True,
                          check=True).stdout.strip()


_PROMPT = "import sys; from lesson_lib.practice.questions import question as q; print(q(sys.argv[1]).{})"


def change_question(image: Path, question_id: str) -> tuple[str, str]:
    """A course update that asks ``question_id`` differently: a note appended to the longest run of Chinese text in
    its prompt, in whichever file of the image's lesson_lib holds it (the question bank, as Python or as data).
    Returns the question's (old, new) version; ClassroomError if the text is not in exactly one place."""
    before = _in_image(image, _PROMPT.format("version"), question_id)
    prompt = _in_image(image, _PROMPT.format("prompt"), question_id)
    fragment = max(re.findall(r"[\u4e00-\u9fff，、：；？]+", prompt), key=len)
    places = [(path, path.read_text(encoding="utf-8")) for path in (image / "lib" / "lesson_lib").rglob("*")
              if path.suffix in (".py", ".toml", ".json")]
    places = [(path, text) for path, text in places if fragment in text]
    if len(places) != 1 or places[0][1].count(fragment) != 1:
        raise ClassroomError(f"{question_id} 的题面片段 {fragment!r} 不止一处或找不到：{[str(p) for p, _ in places]}")
    path, text = places[0]
    path.write_text(text.replace(fragment, fragment + "（新问法）"), encoding="utf-8")
    after = _in_image(image, _PROMPT.format("version"), question_id)
    if after == before:
        raise ClassroomError(f"改了 {path} 里 {question_id} 的题面，题目的版本却没变")
    return before, after


def update_course(image: Path, question_id: str) -> tuple[str, str]:
    """The new image: ``question_id`` asked differently and the notebook saying so (in its first cell)."""
    import nbformat

    versions = change_question(image, question_id)
    notebook = image / COURSE / NOTEBOOK
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[0].source += "\n\n" + UPDATE_NOTE
    nbformat.write(nb, notebook)
    return versions


async def _class_run(api, students, prober) -> tuple[list[StudentRun], float]:
    go, stop = asyncio.Event(), asyncio.Event()
    tasks = [asyncio.ensure_future(s.restart_and_run_all(go)) for s in students]
    await asyncio.sleep(0.5)  # every student is waiting at the barrier
    probe = asyncio.ensure_future(prober.run(stop))
    start = time.perf_counter()
    go.set()
    try:
        runs = await asyncio.gather(*tasks)
    finally:
        stop.set()
        await probe
    return runs, time.perf_counter() - start


async def _course_update(hub: Hub, students: list[Student]) -> dict:
    """Students answer, the course changes one question, every server restarts, each student runs the new copy;
    each progress file before and after, and whether each copy is the new version."""
    for student in students:
        errors = await student.execute(ANSWER_CODE.format(answers=STUDENT_ANSWERS))
        if errors:
            raise ClassroomError(f"{student.name} could not answer: {errors}")
    before = {s.name: s.progress() for s in students}
    versions = update_course(hub.tmp / "image", UPDATED_QUESTION)
    await asyncio.gather(*(s.close() for s in students))  # a new image: every server starts again
    await asyncio.gather(*(s.open_lesson() for s in students))
    go = asyncio.Event()
    go.set()
    runs = await asyncio.gather(*(s.restart_and_run_all(go) for s in students))
    return {"question": UPDATED_QUESTION, "versions": versions, "answers": dict(STUDENT_ANSWERS),
            "errors": {r.name: r.errors for r in runs}, "cells": {r.name: r.cells for r in runs},
            "kernel_retries": {r.name: r.kernel_retries for r in runs},
            "before": before, "after": {s.name: s.progress() for s in students},
            "copy_updated": {s.name: UPDATE_NOTE in (s.home / COPY).read_text(encoding="utf-8") for s in students}}


async def _classroom(hub: Hub, n: int, solo: bool, update: bool = True) -> dict:
    api = Api(hub)
    students = []
    try:
        names = [f"student{i + 1:02d}" for i in range(n)]
        await api.call("POST", "/hub/api/users", {"usernames": names})
        students = [Student(api, name, hub.tmp / "home" / name) for name in names]
        spawn_start = time.perf_counter()
        await asyncio.gather(*(s.open_lesson() for s in students))
        spawn_s = time.perf_counter() - spawn_start
        hub.remember_processes()
        idle = Prober(api, names[0])
        for _ in range(5):
            await idle.once()
        solo_run = None
        if solo:
            (solo_run,), _ = await _class_run(api, students[:1], Prober(api, names[0]))
        prober = Prober(api, names[0])
        sampler_task = asyncio.ensure_future(_remember_while(hub, prober))
        runs, wall = await _class_run(api, students, prober)
        sampler_task.cancel()
        update_result = await _course_update(hub, students) if update else None
        shared_writes = _repository_writes(since=time.time() - (time.perf_counter() - spawn_start))
        return {"students": n, "update": update_result,
                "spawn_and_copy_s": spawn_s, "class_wall_s": wall, "runs": [asdict(r) for r in runs],
                "solo": None if solo_run is None else asdict(solo_run),
                "idle_latency_s": idle.latencies, "load_latency_s": prober.latencies,
                "probe_failures": prober.failures, "repository_written": shared_writes,
                "copies": [str(s.home / COPY) for s in students if (s.home / COPY).exists()]}
    finally:
        hub.remember_processes()
        await asyncio.gather(*(s.close() for s in students))
        api.close()


async def _remember_while(hub, prober):
    while True:
        hub.remember_processes()
        await asyncio.sleep(1.0)


_NOT_SCANNED = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", "artifacts"}


def _repository_writes(since: float) -> list[str]:
    """Files changed in the shared repository (where lesson_lib is installed from) since ``since``."""
    changed = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if _NOT_SCANNED.intersection(rel.parts) or not path.is_file():
            continue
        with contextlib.suppress(OSError):
            if path.stat().st_mtime > since:
                changed.append(str(rel))
    return changed


async def _bounded(coro, seconds):
    try:
        return await asyncio.wait_for(coro, seconds)
    except asyncio.TimeoutError:
        raise ClassroomError(f"the class did not finish within {seconds:.0f} s") from None


def run_classroom(n: int = 8, solo: bool = True, venv_bin: Path | None = None, keep: Path | None = None,
                  deadline_s: float = 1800.0, lesson_cpus: int | None = None, update: bool = True) -> dict:
    """Start a hub, run the class, stop everything; the figures as a dict (``leftover_pids`` should be empty).

    The class is abandoned (ClassroomError) after ``deadline_s``; the hub and its processes are stopped either way.
    """
    venv_bin = venv_bin or Path(sys.executable).parent
    missing = missing_tools(venv_bin)
    if missing:
        raise ClassroomError("missing: " + "; ".join(missing))
    tmp = Path(tempfile.mkdtemp(prefix="classroom-"))
    hub = Hub(tmp, venv_bin, lesson_cpus)
    result = {}
    try:
        hub.start()
        build_image(tmp)
        result = asyncio.run(_bounded(_classroom(hub, n, solo, update), deadline_s))
        result["lesson_cpus"] = lesson_cpus
    finally:
        result["leftover_pids"] = hub.stop()
        result["leftover_commands"] = getattr(hub, "leftover_names", [])
        result["tmp"] = str(tmp)
        result["hub_log_tail"] = hub.log_tail(15)
        if keep is not None:
            shutil.copytree(tmp / "home", keep, dirs_exist_ok=True, symlinks=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def _stats(values):
    if not values:
        return "no successful probe"
    values = sorted(values)
    return f"median {values[len(values) // 2] * 1e3:.0f} ms, max {values[-1] * 1e3:.0f} ms over {len(values)}"


def update_kept(update: dict, name: str) -> dict:
    """For one student: were the unchanged question's answers kept as they were, the changed one's kept as an
    earlier version's (and no longer counted), the copy renewed, every cell of the new copy run without error?"""
    changed = update["question"]
    before, after = update["before"][name], update["after"][name]
    others = [q for q in update["answers"] if q != changed]
    return {"others_kept": bool(others) and all(after["questions"].get(q) == before["questions"].get(q) is not None
                                                 for q in others),
            "changed_as_earlier": changed not in after["questions"]
            and after["earlier"].get(changed, [None])[-1] == before["questions"].get(changed) is not None,
            "copy_updated": update["copy_updated"][name], "ran_clean": not update["errors"][name]}


def update_line(update: dict) -> str:
    names = sorted(update["after"])
    checks = {name: update_kept(update, name) for name in names}
    good = [name for name in names if all(checks[name].values())]
    bad = {name: [k for k, v in checks[name].items() if not v] for name in names if name not in good}
    return (f"course update ({update['question']} asked differently, version {update['versions'][0]} → "
            f"{update['versions'][1]}): {len(good)}/{len(names)} students got the new copy, kept their other "
            f"answers as they were and the changed question's answer as an earlier version's"
            + (f"; NOT for {bad}" if bad else "") + f"; new kernels (one never answered): {update['kernel_retries']}")


def report(result: dict) -> list[str]:
    runs = result["runs"]
    cap = f", LESSON_CPUS={result['lesson_cpus']}" if result.get("lesson_cpus") else ""
    lines = [f"{result['students']} students{cap}; servers started (each making its own copy) in "
             f"{result['spawn_and_copy_s']:.1f} s",
             f"{'student':<10} {'wall s':>7} {'kernel CPU s':>12} {'server CPU s':>12} {'peak MB':>8} "
             f"{'cells':>5} {'errors':>6} {'new kernels':>11} {'CPUs/env/BLAS':>13}  written in own home"]
    for r in runs:
        lines.append(f"{r['name']:<10} {r['wall_s']:7.1f} {r['kernel_cpu_s']:12.1f} {r['server_cpu_s']:12.1f} "
                     f"{r['tree_peak_pss_mb']:8.0f} {r['cells']:5d} {len(r['errors']):6d} {r['kernel_retries']:11d} "
                     f"{r['threads'].get('usable_cpus', '?'):>4}/{r['threads'].get('blas_env') or '?':^3}/"
                     f"{r['threads'].get('blas_threads', '?'):<4}  "
                     f"{', '.join(r['written']) or '(nothing)'}")
    cpu = [r["kernel_cpu_s"] for r in runs]
    peak = [r["tree_peak_pss_mb"] for r in runs]
    peak_rss = [r["tree_peak_mb"] for r in runs]
    lines += [
        f"class: wall {result['class_wall_s']:.1f} s for everyone's Restart & Run All; kernel CPU per student "
        f"mean {sum(cpu) / len(cpu):.1f} s (max {max(cpu):.1f}); peak memory per student max {max(peak):.0f} MB PSS "
        f"({max(peak_rss):.0f} MB summed RSS); "
        f"error outputs {sum(len(r['errors']) for r in runs)}",
        *[f"{page + ':':<19} idle {_stats(result['idle_latency_s'][page])}; under load "
          f"{_stats(result['load_latency_s'][page])}" for page in result["load_latency_s"]],
        f"failed probes during the load: {len(result['probe_failures'])} {result['probe_failures'][:3]}",
    ]
    solo = result.get("solo")
    if solo:
        lines.append(f"baseline in this run, one student alone: wall {solo['wall_s']:.1f} s, kernel CPU "
                     f"{solo['kernel_cpu_s']:.1f} s, peak {solo['tree_peak_pss_mb']:.0f} MB PSS → class wall / solo "
                     f"{result['class_wall_s'] / solo['wall_s']:.1f}×, CPU per student / solo "
                     f"{sum(cpu) / len(cpu) / solo['kernel_cpu_s']:.2f}×, new kernels {solo['kernel_retries']}")
    for r in runs:
        for e in r["errors"][:3]:
            lines.append(f"  {r['name']}: {e}")
    if result.get("update"):
        lines.append(update_line(result["update"]))
    if result["repository_written"]:
        lines.append(f"WRITTEN INTO THE SHARED REPOSITORY during the class: {result['repository_written']}")
    if result["leftover_pids"]:
        lines.append(f"leftover processes after shutdown, killed: {result['leftover_commands']}")
    else:
        lines.append("every hub, proxy, server and kernel process is gone")
    lines.append(f"load average now: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--no-solo", action="store_true", help="skip the one-student baseline run")
    parser.add_argument("--no-update", action="store_true", help="skip the course update after the class")
    parser.add_argument("--lesson-cpus", type=int, metavar="N",
                        help="set LESSON_CPUS=N for every student (BLAS threads and worker processes follow it)")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args(argv)
    if args.students < 1:
        parser.error("--students must be at least 1")
    if args.lesson_cpus is not None and args.lesson_cpus < 1:
        parser.error("--lesson-cpus must be at least 1")
    try:
        result = run_classroom(args.students, solo=not args.no_solo, lesson_cpus=args.lesson_cpus,
                               update=not args.no_update)
    except ClassroomError as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 1
    for line in report(result):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
