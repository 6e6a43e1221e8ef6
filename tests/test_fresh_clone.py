"""The README's first command, run as a learner runs it: a fresh clone, a path with spaces and Chinese, no flags.

One clone, two runs: first a normal user (made with ``useradd`` when the suite runs as root, removed afterwards)
installs into a fresh ``.venv`` and opens JupyterLab; then root (a container, a cloud server) runs the same command
in the same clone: the stamp skips the install (one install instead of two halves this file's cost) and root's own
path -- the ``--allow-root`` notice, the settings, the personal copy, JupyterLab answering -- still runs. When no
normal user can run first, root's run installs. Each run must end with JupyterLab serving the whole course and the
learner's own copy, answering its contents API, and must write nothing in its home; then the server is stopped by
its PID and its process group killed. ``BROWSER=true`` makes the browser JupyterLab opens a no-op. pip's downloads
are kept between sessions in ``.test-cache/pip`` (git-ignored), so only the first ever downloads.
Skips (CI fails instead): running as root is impossible (not root, no password-free sudo), or no normal user can
be made.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import scaled, wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "bash scripts/setup.sh"
COPY = "my_lesson/day11_multi_head_attention.ipynb"
PIP_CACHE = ROOT / ".test-cache" / "pip"
START_TIMEOUT_S = 900  # a first install downloads a few hundred MB


def _require(ok: bool, reason: str) -> None:
    if ok:
        return
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason} -- CI=true, so this must run", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def base():
    path = Path(tempfile.mkdtemp(prefix="day11-fresh-clone-"))
    path.chmod(0o755)  # the normal user must reach its clone inside
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def learner(base):
    """(uid, gid, home) of a normal user: this one when not root, else a throwaway account."""
    if os.geteuid() != 0:
        yield os.getuid(), os.getgid(), Path.home()
        return
    _require(shutil.which("useradd") is not None,
             "没有 useradd，建不了普通用户（sudo apt-get install passwd）/ no useradd to make a normal user")
    name = f"day11-{os.getpid()}"
    home = base / "home"
    made = subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", name],
                          capture_output=True, text=True)
    _require(made.returncode == 0,
             f"useradd 建不了普通用户 / useradd could not make a normal user: {made.stderr.strip()}")
    try:
        entry = pwd.getpwnam(name)
        yield entry.pw_uid, entry.pw_gid, home
    finally:  # a process of the user's left running would make userdel refuse and leave the account behind
        subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
        subprocess.run(["userdel", name], capture_output=True)


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    for where, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(where, name), uid, gid)
    os.lchown(path, uid, gid)


@pytest.fixture(scope="module")
def clone(base):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    dest = base / "我的 课程"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(dest)], check=True, timeout=scaled(300))
    subprocess.run(["git", "-c", "advice.detachedHead=false", "checkout", "--quiet", head.stdout.strip()],
                   cwd=dest, check=True)
    return dest


# What JupyterLab, IPython and npm (which JupyterLab asks for its registry) keep in a home of their own accord.
TOOLS_OWN = (".ipython", ".jupyter", ".local/share/jupyter", ".npm")


def _files(home: Path) -> set[str]:
    """Files and folders under home, but for the tools' own folders (and the folders leading to them)."""
    names = {str(p.relative_to(home)) for p in home.rglob("*")}
    return {n for n in names if not any(n == t or n.startswith(t + "/") or t.startswith(n + "/") for t in TOOLS_OWN)}


def _clean_env(home: Path, runtime: Path) -> dict:
    """What a learner's shell has: no venv, no PYTHONPATH into this checkout, no lesson or Jupyter settings."""
    drop = ("LESSON_", "JUPYTER", "PYTHON", "VIRTUAL_ENV", "MPLBACKEND", "IPYTHONDIR", "PYTEST", "CI")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    venv = os.environ.get("VIRTUAL_ENV", "\0")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not p.startswith((venv, str(ROOT))) and "/.pyenv/" not in p)
    env.update(HOME=str(home), BROWSER="true", JUPYTER_RUNTIME_DIR=str(runtime), PIP_CACHE_DIR=str(PIP_CACHE),
               LANG="C.UTF-8")
    return env


URL_LINE = re.compile(r"http://localhost:\d+/lab/tree/my_lesson/\S+\?token=\w+")  # the copy's, token included


def _serve(clone: Path, env: dict, runtime: Path, uid: int | None, gid: int | None) -> dict:
    """Run the README's first command; wait until the server answers; return what it said and served."""
    log = clone.parent / f"{clone.name}.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", COMMAND], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, user=uid, group=gid, extra_groups=[] if uid else None)
    try:
        server = None
        while time.monotonic() - started < scaled(START_TIMEOUT_S):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            for info in runtime.glob("jpserver-*.json"):
                try:  # jupyter_server truncates then writes this file: a read can land between the two
                    server = json.loads(info.read_text())
                except ValueError:
                    pass
            if server:
                try:
                    listing = _get(server, "")
                    break
                except OSError:
                    pass
            time.sleep(1)
        else:
            pytest.fail(f"no server after {scaled(START_TIMEOUT_S):.0f} s:\n" + log.read_text(errors="replace")[-3000:])
        seconds = time.monotonic() - started
        copy = _get(server, COPY + "?content=0")
        # setup.sh prints the URL line only after its own poll of that URL got a 200: wait for the line too, or the
        # log is read between the server's first answer and the line (a race this test lost once, as root)
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        wait_for(lambda: URL_LINE.search(log.read_text(errors="replace")), "setup.sh's URL line",
                 progress=lambda: (proc.poll(), log.stat().st_size))
        # What the browser is sent to (the server deletes these pages when it stops).
        opened = [p.read_text(encoding="utf-8") for p in runtime.glob("jpserver-*-open.html")]
        return {"server": server, "listing": listing, "copy": copy, "seconds": seconds, "opened": opened,
                "output": log.read_text(errors="replace"), "pid": proc.pid}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the server left in its group (kernels, terminals)
        proc.wait(timeout=30)


def _get(server: dict, path: str) -> dict:
    url = f"{server['url'].rstrip('/')}/api/contents/{urllib.request.quote(path, safe='/?=')}"
    request = urllib.request.Request(url, headers={"Authorization": f"token {server['token']}"})
    with urllib.request.urlopen(request, timeout=scaled(10)) as response:
        return json.load(response)


def _assert_serves_the_course(run: dict, clone: Path) -> None:
    assert Path(run["server"]["root_dir"]).resolve() == clone.resolve()  # the course, not my_lesson/
    names = {item["name"] for item in run["listing"]["content"]}
    assert {"README.md", "notebooks", "lesson_lib", "my_lesson"} <= names, names
    assert (clone / "lesson_lib.egg-info").is_dir() and "lesson_lib.egg-info" not in names  # there, but hidden
    assert run["copy"]["path"] == COPY and run["copy"]["type"] == "notebook"
    assert (clone / COPY).is_file()
    out = run["output"]
    # nothing pip or the build backend says in English to a learner who cannot act on it
    assert "BuildBackendWarning" not in out and "DEPRECATION" not in out and "Traceback" not in out
    # no English sentence in the terminal before the lesson opens (pip's output goes to a log; the server logs
    # warnings only), and the one URL is the copy's, token included
    english = re.compile(r"[A-Za-z]{2,}(?:[ ,']+[A-Za-z]{2,}){3,}")
    assert [line for line in out.splitlines() if english.search(re.sub(r"https?://\S+", "", line))] == []
    assert re.findall(r"https?://\S+", out) == [URL_LINE.search(out).group(0)]
    settings = json.loads((clone / ".venv/share/jupyter/lab/settings/overrides.json").read_text(encoding="utf-8"))
    assert settings["@jupyterlab/translation-extension:plugin"]["locale"] == "zh_CN"  # JupyterLab's own menus
    assert settings["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    status = subprocess.run(["git", "-c", f"safe.directory={clone}", "status", "--porcelain"], cwd=clone,
                            capture_output=True, text=True, check=True)
    assert status.stdout == ""  # the learner's run dirties nothing git tracks
    # JupyterLab opens the copy: the page it sends the browser to names it.
    assert any("lab/tree/my_lesson/day11_multi_head_attention.ipynb" in text for text in run["opened"]), run["opened"]


def _wait_gone(pid: int) -> None:
    def gone() -> bool:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(gone, f"process group {pid} gone after SIGKILL", stall_s=10, poll_s=0.1)


def _run(base: Path, clone: Path, who: str, uid: int | None, gid: int | None, home: Path, report) -> dict:
    runtime = base / f"runtime-{who}"
    runtime.mkdir()
    PIP_CACHE.mkdir(parents=True, exist_ok=True)
    if uid is not None:
        for path in (clone, runtime, PIP_CACHE):
            _chown_tree(path, uid, gid)
    ours = home.is_relative_to(base)  # a home this test made (not the real home of whoever runs the suite)
    before = _files(home) if ours else set()
    stamp = clone / ".venv" / ".lesson-installed"  # setup.sh writes it when an install finishes
    stamped_before = stamp.stat().st_mtime_ns if stamp.exists() else None
    try:
        run = _serve(clone, _clean_env(home, runtime), runtime, uid, gid)
    finally:
        if uid is not None and os.geteuid() == 0:
            _chown_tree(PIP_CACHE, 0, 0)
    _wait_gone(run["pid"])
    run["installed"] = stamp.exists() and stamp.stat().st_mtime_ns != stamped_before  # this run installed
    report(f"fresh clone as {who}: JupyterLab answered {run['seconds']:.0f} s after `{COMMAND}` "
           f"({'installed' if run['installed'] else 'install skipped: already done in this clone'})")
    if ours:
        assert _files(home) - before == set()  # the lesson wrote nothing outside the clone and its data folder
    return run


@pytest.fixture(scope="module")
def report(pytestconfig):
    lines = []
    yield lines.append
    terminal = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
    if terminal is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # shown even when the tests pass
            for line in lines:
                terminal.write_line(line)


def test_as_a_normal_user(base, clone, learner, report):
    uid, gid, home = learner
    as_other = uid != os.getuid()
    run = _run(base, clone, "user", uid if as_other else None, gid if as_other else None, home, report)
    _assert_serves_the_course(run, clone)
    assert run["installed"]  # a fresh clone: the first run installs
    assert "--allow-root" not in run["output"]


def test_as_root(base, clone, report):
    _require(os.geteuid() == 0, "不是 root：以 root 运行测试（例如 sudo bash scripts/test.sh）时才跑这一项 / "
                                "not root: run the suite as root (e.g. in a container) for the root case")
    home = base / "root-home"
    home.mkdir()
    run = _run(base, clone, "root", None, None, home, report)
    _assert_serves_the_course(run, clone)
    notice = [line for line in run["output"].splitlines() if "--allow-root" in line]
    assert len(notice) == 1 and re.search(r"[\u4e00-\u9fff]", notice[0]) and "root" in notice[0], notice
    assert "Running as root is not recommended" not in run["output"]
