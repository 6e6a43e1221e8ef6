"""Print the lesson's speed figures.   python benchmarks/run.py [topic ...]

``python benchmarks/run.py readme`` measures every figure the README states (a fresh clone's setup, tests collected,
the fast set's CPU-seconds, one student's Restart & Run All); it runs only when named.

Each ``benchmarks/bench_<topic>.py`` defines ``run() -> list[str]``; every figure is reported with
the baseline it is compared against, measured in the same run (shared machines are noisy, so
absolute times alone mean little).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(topics: list[str]) -> int:
    files = sorted(HERE.glob("bench_*.py"))
    if not topics:  # readme sets up a fresh clone and runs the fast test set: only when named
        files = [f for f in files if f.stem != "bench_readme"]
    if topics:
        files = [f for f in files if f.stem.removeprefix("bench_") in topics]
        if not files:
            print(f"no benchmark named {topics}; available: {[f.stem[6:] for f in sorted(HERE.glob('bench_*.py'))]}")
            return 2
    for path in files:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"== {path.stem.removeprefix('bench_')}")
        start = time.perf_counter()
        for line in module.run():
            print(f"  {line}", flush=True)
        print(f"  ({time.perf_counter() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
