"""Every figure the README states, measured in one run:   python benchmarks/run.py readme

On a fresh clone of this checkout (its committed state, in a temporary folder) with an empty pip cache:
  - setup: ``bash scripts/setup.sh --no-open`` builds the clone's .venv, as a learner's first command (wall time and
    CPU-seconds); then ``--dev`` adds the test tools;
  - tests collected: ``pytest --collect-only`` over what ``bash scripts/test.sh`` runs;
  - the fast set: ``bash scripts/test.sh -m "not slow"``'s pytest command (no notebook, nbval unloaded),
    CPU-seconds of pytest and every child it reaps (the xdist workers, the kernels and workers they start), and
    whether it passed; its costliest files under it (benchmarks/pytest_cpu.py). It runs after the collection
    above, which wrote pytest's cache of the rewritten test modules: the figure is what every run costs from the
    second on. The very first run in a new checkout costs ~3-4 CPU-s more (both xdist workers rewrite every test
    module's asserts at once: each worker's start measured 3.2-3.4 CPU-s, against 1.25-1.6 with the cache);
  - Restart & Run All: one student's fresh kernel running the core notebook (bench_notebook_cost: CPU-seconds of the
    kernel and its children, peak memory as PSS of the process tree).
CPU-seconds come from the OS (getrusage of reaped children; psutil for the kernel's tree), so a busy machine changes
the wall times much more than the CPU-seconds, but these grow too (caches shared, waits that poll): the same warm
clone's fast set measured 52-54 CPU-s at load 2-3 on 2 CPUs and 59-60 at load 5 or beside two busy loops. The
load average is printed beside them.
"""

from __future__ import annotations

import datetime
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ["notebooks/day11_multi_head_attention.ipynb", "notebooks/lab_real_heads.ipynb",
             "notebooks/lab_ablation.ipynb"]
PYTEST = ["-m", "pytest", "-p", "no:cacheprovider", "--nbval", *NOTEBOOKS,
          "--nbval-sanitize-with", "notebooks/nbval_sanitize.cfg", "tests"]  # as scripts/test.sh runs it
FAST = ["-m", "pytest", "-p", "no:cacheprovider", "-p", "no:nbval", "tests", "-m", "not slow"]  # test.sh -m "not slow"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], cwd: Path, env: dict) -> tuple[int, float, float, str]:
    """(exit status, wall seconds, CPU-seconds of the command and every process it reaped, its output)."""
    cpu, wall = _children_cpu(), time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return done.returncode, time.monotonic() - wall, _children_cpu() - cpu, done.stdout + done.stderr


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def _clone(base: Path) -> Path:
    clone = base / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    return clone


def run() -> list[str]:
    lines = [f"date {datetime.date.today().isoformat()}, commit "
             + subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
             .stdout.strip()]
    with tempfile.TemporaryDirectory(prefix="day11-readme-") as tmp:
        # enterable by others, as a clone in a home or /tmp is: in the 0700 temp folder the --recheck sandbox's
        # user could not read the checkout, and its 7 tests skipped (a fast set smaller than the one users run)
        os.chmod(tmp, 0o755)
        clone = _clone(Path(tmp))
        env = dict(os.environ, PIP_CACHE_DIR=str(Path(tmp) / "pip-cache"), MPLBACKEND="Agg",
                   PYTHONDONTWRITEBYTECODE="")  # as scripts/test.sh: bytecode cached
        env.pop("VIRTUAL_ENV", None)
        status, wall, cpu, out = _timed(["bash", "scripts/setup.sh", "--no-open"], clone, env)
        lines.append(f"setup (bash scripts/setup.sh --no-open, fresh clone, empty pip cache): {wall:.0f} s wall, "
                     f"{cpu:.0f} CPU-s, exit {status}; {_load()}")
        if not status:  # the test tools on top (what scripts/test.sh installs first); not a README figure
            status, wall, cpu, out = _timed(["bash", "scripts/setup.sh", "--no-open", "--dev"], clone, env)
            lines.append(f"  then --dev (the test tools): {wall:.0f} s wall, {cpu:.0f} CPU-s, exit {status}")
        if status:
            return [*lines, out[-2000:]]
        python = str(clone / ".venv" / "bin" / "python")
        env["PATH"] = f"{clone / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"  # as test.sh's activate
        env["VIRTUAL_ENV"] = str(clone / ".venv")
        _, _, _, out = _timed([python, *PYTEST, "--collect-only", "-q"], clone, env)
        collected = re.search(r"(\d+) tests? collected", out)
        lines.append(f"tests collected (pytest --collect-only, as scripts/test.sh): "
                     f"{collected.group(1) if collected else '? ' + out[-300:]}")
        cpus = subprocess.run([python, "scripts/cpus.py"], cwd=clone, env=env, capture_output=True, text=True,
                              check=True).stdout.strip()
        workers = str(min(2, int(cpus)))  # as scripts/test.sh
        # The fast set with benchmarks/pytest_cpu.py loaded: its costliest files are listed under the figure.
        fast = [python, *FAST, "-n", workers if int(workers) > 1 else "0", "--dist", "loadfile",
                "-p", "benchmarks.pytest_cpu"]
        tsv = Path(tmp) / "fast-cpu.tsv"
        status, wall, cpu, out = _timed(fast, clone, env | {"PYTEST_CPU_TSV": str(tsv)})
        summary = next((line.strip("= ") for line in reversed(out.splitlines()) if " in " in line and "=" in line),
                       "?")
        lines.append(f"fast set (pytest -m 'not slow', {workers} workers): {cpu:.0f} CPU-s of pytest and its children, "
                     f"{wall:.0f} s wall, exit {status} ({summary}); {_load()}")
        lines += [f"  {line}" for line in out.splitlines() if line.startswith(("FAILED", "ERROR"))]  # which, if any
        lines += _costliest(tsv)
        lines += _run_all(clone, python, env)
    return lines


def _costliest(tsv: Path, count: int = 8) -> list[str]:
    """The fast set's costliest test files (CPU-s of the xdist worker that ran each and of its children)."""
    if not tsv.exists():
        return []
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pytest_cpu import by_file

    files = by_file(tsv)
    files.pop("(main end)", None)  # the workers themselves, reaped by the main process: counted in their rows
    top = sorted(files.items(), key=lambda item: -item[1])[:count]
    return ["  costliest: " + ", ".join(f"{name.removeprefix('tests/')} {cpu:.1f}" for name, cpu in top)]


def _run_all(clone: Path, python: str, env: dict) -> list[str]:
    """bench_notebook_cost's measurement of one student's Restart & Run All, in the clone's environment."""
    code = ("import json, sys; sys.path.insert(0, 'benchmarks'); import bench_notebook_cost as c; from pathlib import "
            "Path; r = c.measure(c.lesson_notebook(), Path('notebooks')); print(json.dumps({'cpu': r['total_cpu'], "
            "'wall': r['total_wall'], 'pss': r['tree_peak_pss_mb'], 'rss': r['kernel_peak_mb'], 'errors': "
            "sum(x['errors'] for x in r['cells'])}))")
    done = subprocess.run([python, "-c", code], cwd=clone, env=env, capture_output=True, text=True)
    if done.returncode:
        return [f"Restart & Run All: failed: {done.stderr[-1500:]}"]
    import json

    r = json.loads(done.stdout.strip().splitlines()[-1])
    return [f"Restart & Run All, one student (bench_notebook_cost): {r['cpu']:.1f} CPU-s (kernel and its children, "
            f"start-up included), peak memory {r['pss']:.0f} MB (PSS of kernel and children; kernel VmHWM "
            f"{r['rss']:.0f} MB), {r['wall']:.1f} s wall, {r['errors']} error outputs; {_load()}"]


if __name__ == "__main__":
    for line in run():
        print(line, flush=True)
    sys.exit(0)
