"""What one student's Restart & Run All costs: CPU-seconds and wall time, cell by cell.

Goal (issue 29, a class on one hub): Restart & Run All ≤ 6 CPU-seconds and peak memory ≤ 1 GB per student.
The notebook is assembled from ``notebooks/src`` (what the stored notebook is built from) and run in a
fresh ``python3`` kernel, as a learner's Restart & Run All would. CPU is counted for the kernel
process and every process it starts (workers, their reaped children), read from the OS before and
after each cell; memory is the kernel's own peak RSS (``VmHWM``) and the peak of the whole process
tree's PSS (each shared page split among the processes that map it; summed RSS is printed too),
sampled every 20 ms. The baseline, measured in the same run, is an empty kernel: its start-up and
one trivial cell (what any notebook costs before the lesson does anything).

    python benchmarks/run.py notebook_cost
    python benchmarks/bench_notebook_cost.py [--lesson-cpus N] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_CPU_S = 6.0
GOAL_PEAK_MB = 1024.0
TIMEOUT_S = 600


def _build_module():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _over_tree(pid: int, value) -> list:
    """``value(process)`` for a process and each live descendant; vanished processes are left out."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    values = []
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            values.append(value(proc))
    return values


def _cpu(proc) -> float:
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, its live descendants and the children they have reaped."""
    return float(sum(_over_tree(pid, _cpu)))


def _pss(proc) -> int:
    try:
        return proc.memory_full_info().pss  # Linux: each shared page split between the processes that map it
    except AttributeError:
        return proc.memory_info().rss


def _rss_and_pss(proc) -> tuple[int, int]:
    """Both from one read of smaps_rollup (Linux): a process that grows between two separate reads
    could show more PSS than RSS."""
    try:
        lines = Path(f"/proc/{proc.pid}/smaps_rollup").read_text().splitlines()
        kb = {line.split(":")[0]: int(line.split()[1]) for line in lines if line.startswith(("Rss:", "Pss:"))}
        return kb["Rss"] * 1024, kb["Pss"] * 1024
    except (OSError, KeyError, ValueError, IndexError):
        return proc.memory_info().rss, _pss(proc)


def tree_rss_and_pss_bytes(pid: int) -> tuple[int, int]:
    """Summed RSS (shared pages once per process) and summed PSS (the tree's own share) of the tree,
    each process's pair read at one moment."""
    pairs = _over_tree(pid, _rss_and_pss)
    return sum(rss for rss, _ in pairs), sum(pss for _, pss in pairs)


def kernel_peak_rss_bytes(pid: int) -> int | None:
    """The kernel process's own high-water mark of resident memory (Linux), or None where unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class PeakSampler:
    """Samples a process tree's memory in a thread: ``peak`` (summed RSS) and ``peak_pss`` (summed PSS)."""

    def __init__(self, pid: int, interval: float = 0.02):
        self.pid, self.interval, self.peak, self.peak_pss = pid, interval, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self):
        rss, pss = tree_rss_and_pss_bytes(self.pid)
        self.peak = max(self.peak, rss)
        self.peak_pss = max(self.peak_pss, pss)

    def _loop(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def _first_line(source: str) -> str:
    for line in source.splitlines():
        line = line.strip()
        if line and not line.startswith("# NBVAL"):
            return line[:60]
    return ""


def measure(nb, cwd: Path, env: dict | None = None) -> dict:
    """Run ``nb`` in a fresh kernel; per-cell CPU and wall time, start-up cost and peak memory."""
    from nbclient import NotebookClient

    cells = []
    marks = {}
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    wall0 = time.perf_counter()
    saved = dict(os.environ)
    os.environ.update(env or {})
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        with client.setup_kernel():
            pid = client.km.provisioner.process.pid
            startup = {"cpu": tree_cpu_seconds(pid), "wall": time.perf_counter() - wall0}

            def before(cell, cell_index, **_):
                marks[cell_index] = (tree_cpu_seconds(pid), time.perf_counter())

            def after(cell, cell_index, **_):
                cpu0, t0 = marks[cell_index]
                errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                cells.append({"index": cell_index, "cpu": tree_cpu_seconds(pid) - cpu0,
                              "wall": time.perf_counter() - t0, "first_line": _first_line(cell.source),
                              "errors": len(errors)})

            client.on_cell_execute = before
            client.on_cell_executed = after
            with PeakSampler(pid) as sampler:
                for index, cell in enumerate(nb.cells):
                    client.execute_cell(cell, index)
            kernel_peak = kernel_peak_rss_bytes(pid)
            total_cpu = tree_cpu_seconds(pid)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {"startup": startup, "cells": cells, "total_cpu": total_cpu, "total_wall": time.perf_counter() - wall0,
            "tree_peak_mb": sampler.peak / 2**20, "tree_peak_pss_mb": sampler.peak_pss / 2**20,
            "kernel_peak_mb": None if kernel_peak is None else kernel_peak / 2**20}


def empty_notebook():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("1 + 1"))
    return nb


def lesson_notebook():
    return _build_module().assemble()


def section_of_cells() -> list[str]:
    """The source file (section) each cell of the core notebook comes from, e.g. '06_real_heads'."""
    build = _build_module()
    names = []
    for path in sorted(build.SRC.glob("*.md")):
        names += [path.stem] * len(build.parse_cells(path.read_text(encoding="utf-8"), path.name))
    return names


def report(lesson: dict, empty: dict, sections: list[str] | None = None) -> list[str]:
    lines = [f"{'cell':>4}  {'CPU s':>6}  {'wall s':>6}  first line"]
    lines.append(f"{'-':>4}  {lesson['startup']['cpu']:6.2f}  {lesson['startup']['wall']:6.2f}  (kernel start-up)")
    for c in lesson["cells"]:
        if c["cpu"] >= 0.05 or c["wall"] >= 0.2 or c["errors"]:
            flag = f"  [{c['errors']} error output]" if c["errors"] else ""
            lines.append(f"{c['index']:>4}  {c['cpu']:6.2f}  {c['wall']:6.2f}  {c['first_line']}{flag}")
    small = [c for c in lesson["cells"] if c["cpu"] < 0.05 and c["wall"] < 0.2 and not c["errors"]]
    lines.append(f"      ({len(small)} more code cells under 0.05 CPU s each: "
                 f"{sum(c['cpu'] for c in small):.2f} CPU s together)")
    if sections:
        per = {}
        for c in lesson["cells"]:
            per[sections[c["index"]]] = per.get(sections[c["index"]], 0.0) + c["cpu"]
        lines.append("per section (CPU s): " + ", ".join(f"{name} {cpu:.2f}" for name, cpu in per.items()))
    errors = sum(c["errors"] for c in lesson["cells"])
    verdict_cpu = "meets" if lesson["total_cpu"] <= GOAL_CPU_S else "MISSES"
    verdict_mem = "meets" if max(lesson["tree_peak_pss_mb"], lesson["kernel_peak_mb"] or 0) <= GOAL_PEAK_MB \
        else "MISSES"
    lines += [
        f"total: {lesson['total_cpu']:.1f} CPU s (kernel + children, start-up included), "
        f"{lesson['total_wall']:.1f} s wall; {verdict_cpu} the ≤ {GOAL_CPU_S:.0f} CPU s goal; error outputs: {errors}",
        f"peak memory: kernel {lesson['kernel_peak_mb']:.0f} MB (VmHWM); kernel + children, sampled: "
        f"{lesson['tree_peak_pss_mb']:.0f} MB PSS ({lesson['tree_peak_mb']:.0f} MB summed RSS, shared pages counted "
        f"per process); {verdict_mem} the ≤ {GOAL_PEAK_MB:.0f} MB goal",
        f"baseline in this run, an empty kernel (start-up + `1 + 1`): {empty['total_cpu']:.2f} CPU s, "
        f"{empty['total_wall']:.1f} s wall → lesson / empty = {lesson['total_cpu'] / empty['total_cpu']:.1f}×",
        f"load average now: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores",
    ]
    return lines


def run() -> list[str]:
    cwd = ROOT / "notebooks"
    empty = measure(empty_notebook(), cwd)
    lesson = measure(lesson_notebook(), cwd)
    return report(lesson, empty, section_of_cells())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--lesson-cpus", type=int, metavar="N", help="run the kernels with LESSON_CPUS=N")
    args = parser.parse_args(argv)
    cwd = ROOT / "notebooks"
    env = {"LESSON_CPUS": str(args.lesson_cpus)} if args.lesson_cpus else {}
    empty = measure(empty_notebook(), cwd, env)
    lesson = measure(lesson_notebook(), cwd, env)
    for line in report(lesson, empty, section_of_cells()):
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"lesson": lesson, "empty": empty}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
