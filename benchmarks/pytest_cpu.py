"""A pytest plugin: where a run's CPU-seconds go, per test phase, into a TSV (every xdist worker appends to it).

    python -m pytest -p benchmarks.pytest_cpu -p no:nbval -m "not slow" tests   (from the repository's root)
    PYTEST_CPU_TSV=cpu.tsv (default pytest-cpu.tsv in the current folder)

Columns: process (main or the xdist worker), test id, phase, CPU-seconds of the process itself, CPU-seconds of the
children it reaped during the phase (kernels, check workers, CLIs; a module fixture's child is counted in the
teardown that stops it). The phase "start" is what the process cost before its first test (Python, pytest, the
plugins, the conftest and the test modules' imports); "before" is what passed between two tests; "end" is
what followed the last test (for the main process of an xdist run: its workers, reaped); "exit" the shutdown.
"""

from __future__ import annotations

import atexit
import os
import resource
from pathlib import Path

import pytest

_OUT = os.environ.get("PYTEST_CPU_TSV", "pytest-cpu.tsv")
_WHO = os.environ.get("PYTEST_XDIST_WORKER", "main")


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


_last = (0.0, 0.0)  # the process's CPU when the previous row was written (0: the process's start)
_out = None  # the TSV, opened at the first row (importing by_file writes nothing)


def _row(test: str, phase: str) -> None:
    global _last, _out
    now = _cpu()
    if _out is None:  # line-buffered, appending: each row is one short write, whole lines from every worker
        _out = open(_OUT, "a", buffering=1, encoding="utf-8")  # closed by _exit
    _out.write(f"{_WHO}\t{test}\t{phase}\t{now[0] - _last[0]:.3f}\t{now[1] - _last[1]:.3f}\n")
    _last = now


def by_file(tsv) -> dict[str, float]:
    """CPU-seconds per test file (own and children's, every phase), and per process its start and end."""
    totals: dict[str, float] = {}
    for line in Path(tsv).read_text(encoding="utf-8").splitlines():
        who, test, phase, own, kids = line.split("\t")
        key = test.split("::")[0] if test and phase != "before" else f"({who} {phase})"
        totals[key] = totals.get(key, 0.0) + float(own) + float(kids)
    return totals


def _phase(name: str):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item, *args):
        if name == "setup":
            _row(item.nodeid, "before")  # between tests: the previous teardown's leftovers, xdist's messages
        yield
        _row(item.nodeid, name)

    return hook


pytest_runtest_setup = _phase("setup")
pytest_runtest_call = _phase("call")
pytest_runtest_teardown = _phase("teardown")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    _row("", "start")


def pytest_sessionfinish(session):
    _row("", "end")
    atexit.register(_exit)


def _exit() -> None:
    _row("", "exit")  # the process's shutdown: plugins' unconfigure, other atexit handlers
    _out.close()
