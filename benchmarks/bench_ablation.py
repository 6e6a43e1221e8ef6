"""§7 costs: CPU-seconds of the section in a real kernel, and the sweep's speed against the naive loop.

- section CPU: §7's code cells run in a fresh Jupyter kernel (as Restart & Run All runs them),
  user + system CPU of the kernel and every process it started, minus the same kernel running only
  the imports. ``python benchmarks/bench_ablation.py --section-cpu DIR`` measures another checkout
  (for example an export of main) with this environment.
- sweep variants at STEPS_COMPARED steps: naive one (h, seed) model after another; seeds batched in
  one process; seeds batched in worker processes. Each timed REPEATS times in turn and the fastest
  kept, because other work on a shared machine only ever adds time.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADS = (1, 2, 4, 8, 16, 32)
SEEDS = 3
STEPS_COMPARED = 100
REPEATS = 3

_PRELUDE = "import matplotlib\nmatplotlib.use('Agg')\n"
_RUSAGE = (
    "import json, resource\n"
    "s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps(s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime))"
)


def _section_code_cells(root: Path, prefix: str = "07") -> list[str]:
    spec = importlib.util.spec_from_file_location("build_notebook_measured", root / "scripts" / "build_notebook.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    path = next((root / "notebooks" / "src").glob(f"{prefix}_*.md"))
    return [c["source"] for c in build.parse_cells(path.read_text(encoding="utf-8")) if c["kind"] == "code"]


def _kernel_cpu(root: Path, cells: list[str]) -> float:
    """CPU-seconds of a fresh kernel (and its children) that runs ``cells`` with ``root`` first on sys.path."""
    import os

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    setup = f"import sys\nsys.path.insert(0, {str(root)!r})\n" + _PRELUDE
    nb.cells = [nbformat.v4.new_code_cell(src) for src in [setup, *cells, _RUSAGE]]
    env_root = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(root) + (os.pathsep + env_root if env_root else "")  # workers import it too
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(root)}}).execute()
    finally:
        if env_root is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = env_root
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
    return json.loads(printed.split()[-1])  # the last word: other output (warnings) may come first


def section_cpu_seconds(root: Path = ROOT) -> tuple[float, float]:
    """(§7's CPU-seconds, the bare kernel's CPU-seconds), the second already subtracted from the first."""
    bare = _kernel_cpu(root, [])
    return _kernel_cpu(root, _section_code_cells(root)) - bare, bare


def _timed(fn):
    from lesson_lib.models.toy import training

    training._FINISHED.clear()  # identical runs are reused within a process: time a fresh one
    wall = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - wall


def run() -> list[str]:
    from lesson_lib.models.toy.config import TrainConfig
    from lesson_lib.models.toy.sweeping import sweep

    section, bare = section_cpu_seconds()
    lines = [f"§7 in a fresh kernel: {section:.1f} CPU-s (the bare kernel's {bare:.1f} s subtracted)"]
    cfg = replace(TrainConfig(), steps=STEPS_COMPARED)
    variants = {
        "naive": lambda: [sweep(HEADS, [seed], cfg=cfg) for seed in range(SEEDS)],  # distinct runs
        "batched": lambda: sweep(HEADS, SEEDS, cfg=cfg),
    }
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(REPEATS):
        for name, fn in variants.items():  # interleaved, so a burst of load hits both alike
            best[name] = min(best[name], _timed(fn)[1])
    naive, batched = best["naive"], best["batched"]
    lines.append(f"at {STEPS_COMPARED} steps, fastest of {REPEATS}: naive one model at a time {naive:.2f} s (baseline)")
    lines.append(f"  seeds batched, 1 process {batched:.2f} s = {naive / batched:.2f}× faster")
    return lines


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--section-cpu":
        section, bare = section_cpu_seconds(Path(sys.argv[2]).resolve())
        print(f"§7 of {sys.argv[2]}: {section:.2f} CPU-s (bare kernel {bare:.2f} s subtracted)")
    else:
        print("\n".join(run()))
