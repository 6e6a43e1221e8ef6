"""Fixtures for the browser test: a throwaway JupyterLab server and Debian's Chromium driven by Playwright.

The server runs from this environment's Python (so its default ``python3`` kernel is this venv), listens on
127.0.0.1 with a token, keeps every config/data/runtime/settings folder in a temporary directory and serves a
temporary COPY of ``notebooks/`` -- a run never touches the committed notebook or the user's Jupyter setup.

Skips: outside CI a missing Playwright package or Chromium binary skips with the reason; with ``CI=true`` it fails.
Dev aid: ``DAY11_E2E_NOTEBOOK=/path/draft.ipynb`` serves that file under the lesson notebook's name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from helpers import scaled, wait_for

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_NAME = "day11_multi_head_attention.ipynb"
ALLOWED_HOSTS = {"127.0.0.1", "localhost"}
# The flags that work with Debian's chromium headless in a container (no sandbox as root, no GPU, no /dev/shm).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
# User settings written into the temporary JUPYTERLAB_SETTINGS_DIR before every page load.
BASE_SETTINGS = {
    # JupyterLab 4 attaches off-screen cells lazily; the test must see every cell's outputs.
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    # No news / update toasts (they would also be requests to a public host).
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}
LOCALE_PLUGIN = "@jupyterlab/translation-extension:plugin"
THEME_PLUGIN = "@jupyterlab/apputils-extension:themes"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
_PENDING_KEY = pytest.StashKey[list]()  # e2e_report lines not yet on a test report


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require(condition: bool, reason: str) -> None:
    """Skip (visibly) when a browser dependency is missing; in CI that is a failure, not a skip."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"{reason} -- CI=true, so the browser test must run (install it in .ci/run)", pytrace=False)
    pytest.skip(reason)


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: drives JupyterLab in a real browser (Chromium + Playwright)")
    config.stash[_PENDING_KEY] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Lines reported since the last test phase ride on its report (user_properties "e2e"), so they reach the summary
    (tests/conftest.py) from a pytest-xdist worker too, whose own terminal is never shown."""
    outcome = yield
    pending, properties = item.config.stash[_PENDING_KEY], outcome.get_result().user_properties
    while pending:  # pop: a flow's thread may append meanwhile
        properties.append(("e2e", pending.pop(0)))


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def e2e_report(pytestconfig):
    """Append a line to the e2e section of pytest's terminal summary (shown even without -s)."""

    def report(line: str) -> None:
        print(line)
        pytestconfig.stash[_PENDING_KEY].append(line)

    return report


# --------------------------------------------------------------------------------------------- browser
@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    require(bool(path), "没有 Chromium，请运行 sudo apt-get install chromium fonts-noto-cjk / no Chromium binary "
            "(Debian/Ubuntu: sudo apt-get install chromium fonts-noto-cjk)")
    require(os.access(path, os.X_OK), f"Chromium at {path} is not an executable file")
    # A Chromium that exists but does not start under Playwright is a failure (broken), not a skip (missing).
    return path


@pytest.fixture(scope="session")
def playwright_api():
    try:
        from playwright import sync_api
    except ImportError:
        require(False, "the Playwright Python package is missing (pip install -r requirements-dev.txt)")
    return sync_api


@pytest.fixture(scope="session")
def open_browser(playwright_api, chromium_path):
    """``with open_browser() as browser:`` -- one Playwright + Chromium per call; call it once per thread
    (Playwright's sync API is not thread-safe; each thread needs its own instance)."""

    @contextlib.contextmanager
    def opener():
        with playwright_api.sync_playwright() as pw:
            # Playwright gives every launch a fresh temporary user-data dir.
            browser = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
            try:
                yield browser
            finally:
                browser.close()

    return opener


@pytest.fixture(scope="session")
def artifacts_dir(e2e_report) -> Path:
    """artifacts/e2e/<timestamp>/ (git-ignored): one screenshot per step of each run."""
    # The process id keeps two sessions started in the same second (two suites side by side) apart.
    folder = ROOT / "artifacts" / "e2e" / f"{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    e2e_report(f"screenshots: {folder}")
    return folder


# --------------------------------------------------------------------------------------------- server
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    settings_dir: Path
    log: Path
    process: subprocess.Popen = field(repr=False)
    base: Path = field(repr=False)
    locale: str = "en"
    theme: str = "light"  # a key of THEMES
    notebook: str = NOTEBOOK_NAME  # path relative to the server root
    allowed_hosts: frozenset = frozenset(ALLOWED_HOSTS)

    @property
    def progress_file(self) -> Path:
        """This server's kernels' progress file: one per server, so flows running side by side never see each
        other's answers."""
        return self.base / "progress.json"

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def sessions(self) -> list[dict]:
        return self.api("/api/sessions")

    def kernel_state(self, notebook_path: str) -> str | None:
        """The notebook's kernel state ('idle', 'busy', ...); None if there is none yet or the server is too busy to
        answer in time (callers poll)."""
        try:
            sessions = self.sessions()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None
        for s in sessions:
            if s.get("path") == notebook_path and s.get("kernel"):
                return s["kernel"].get("execution_state")
        return None

    def delete_sessions(self) -> None:
        """Kernels outlive the page: shut every session's kernel down."""
        for s in self.sessions():
            try:
                self.api(f"/api/sessions/{s['id']}", method="DELETE")
            except urllib.error.HTTPError:
                pass

    def write_settings(self) -> None:
        """User settings, read at every page load: all cells rendered, no news, UI language ``self.locale``,
        theme ``self.theme``."""
        settings = dict(BASE_SETTINGS)
        settings[LOCALE_PLUGIN] = {"locale": "zh_CN" if self.locale == "zh_CN" else "en"}
        settings[THEME_PLUGIN] = {"theme": THEMES[self.theme]}
        for plugin, values in settings.items():
            package, _, name = plugin.partition(":")
            target = self.settings_dir / package / f"{name}.jupyterlab-settings"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(values), encoding="utf-8")

    def wait_ready(self) -> None:
        """Until the server answers (it exiting is a failure at once); a hang only fails after a load-scaled wait."""

        def up():
            if self.process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {self.process.returncode}:\n{self.log_tail()}", pytrace=False)
            try:
                return self.api("/api/status") or True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        wait_for(up, f"JupyterLab answering ({self.log})", progress=lambda: self.log.stat().st_size, stall_s=60)

    def wait_kernel_idle(self) -> None:
        """Until the notebook's kernel exists and is idle (the toolbar says idle before a kernel exists)."""
        wait_for(lambda: self.kernel_state(self.notebook) == "idle", f"{self.notebook}'s kernel idle",
                 progress=lambda: self.kernel_state(self.notebook), stall_s=90)

    def open_notebook(self, context, listen=lambda page: None):
        """The notebook in a new page of ``context``, offline (only this server, data: and blob: answer), its kernel
        idle; ``listen(page)`` runs before the page loads (console listeners)."""
        local = ("data:", "blob:", self.url, self.url.replace("http", "ws", 1))
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
        page = context.new_page()
        listen(page)
        page.set_default_timeout(scaled(60) * 1000)
        page.goto(f"{self.url}/lab/tree/{self.notebook}?reset&token={self.token}")
        page.locator("[data-command='notebook:restart-run-all']").first.wait_for(state="visible")
        page.wait_for_function("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
        self.wait_kernel_idle()
        return page

    def stop(self) -> None:
        """Delete the sessions (their kernels run in their own process groups), then end the server's group."""
        try:
            if self.process.poll() is None:
                self.delete_sessions()
        except Exception:  # the server may already be gone; stopping it below is what matters
            pass
        _stop(self.process)
        shutil.rmtree(self.base, ignore_errors=True)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-n:])
        except OSError:
            return "(no server log)"


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)  # the server shuts its kernels down on SIGTERM
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
    except ProcessLookupError:
        pass


def _start_server(locale: str, theme: str = "light") -> LabServer:
    """Start (without waiting for) a JupyterLab server whose UI language is ``locale`` and theme ``theme``."""
    base = Path(tempfile.mkdtemp(prefix=f"day11-e2e-{locale}-{theme}-"))
    root = base / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    draft = os.environ.get("DAY11_E2E_NOTEBOOK")
    if draft:
        shutil.copyfile(draft, root / NOTEBOOK_NAME)
    dirs = {
        name: base / sub
        for name, sub in [
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"),
            ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
            ("IPYTHONDIR", "ipython"),
            ("MPLCONFIGDIR", "mpl"),
        ]
    }
    for d in dirs.values():
        d.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "IPYTHON", "MPL"))}
    env.update({k: str(v) for k, v in dirs.items()})
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env["LESSON_PROGRESS_FILE"] = str(base / "progress.json")  # LabServer.progress_file
    # Two kernels run side by side on a 2-core machine: one BLAS thread each instead of 2 x 2 fighting for the cores
    # (lesson_lib.runtime.blas documents the same setting for learners).
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    # The server's Python is this venv's; the default python3 kernelspec ("python" argv) then resolves to it too.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    port, token = _free_port(), os.urandom(16).hex()
    log = base / "jupyterlab.log"
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--allow-root", "--no-browser",
        f"--port={port}", "--port-retries=0",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        # window.jupyterapp: lets the test read cell models (execution counts, output types) instead of pixels.
        "--LabApp.expose_app_in_browser=True",
    ]  # fmt: skip
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = LabServer(
        f"http://127.0.0.1:{port}", token, root, dirs["JUPYTERLAB_SETTINGS_DIR"], log, process, base, locale, theme
    )
    server.write_settings()
    return server


def _ready_or_port_lost(server: LabServer, last: bool) -> bool:
    """Wait until ``server`` answers (True); False if it exited because its port was taken meanwhile."""
    try:
        server.wait_ready()
        return True
    except pytest.fail.Exception:
        if last or server.process.poll() is None or "already in use" not in server.log_tail():
            raise
        return False


@pytest.fixture(scope="session")
def lab_servers(playwright_api, chromium_path):
    """``lab_servers(["en", "zh_CN"])`` -> {locale: LabServer}, or ``lab_servers({"name": ("zh_CN", "dark")})`` ->
    {name: LabServer}: one JupyterLab per UI language and theme (both are server-wide user settings), started side
    by side on 127.0.0.1, each serving its own copy of notebooks/ with token auth and every config folder in a temp
    dir. All are stopped (sessions deleted, process group killed) and their folders removed at the end."""
    started: list[LabServer] = []

    def start(configs):
        if not isinstance(configs, dict):
            configs = {locale: (locale, "light") for locale in configs}
        servers = {name: _start_server(locale, theme) for name, (locale, theme) in configs.items()}
        started.extend(servers.values())
        for name, (locale, theme) in configs.items():
            for attempt in range(3):  # another suite on this machine may take the free port before the server binds
                if _ready_or_port_lost(servers[name], last=attempt == 2):
                    break
                servers[name] = _start_server(locale, theme)
                started.append(servers[name])
        return servers

    yield start
    for server in started:
        server.stop()
