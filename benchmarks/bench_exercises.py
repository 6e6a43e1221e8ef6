"""How long an exercise check takes, cold and warm, and when each learner accident returns.

    python benchmarks/run.py exercises

A check runs the learner's function in the checker's worker process (lesson_lib/practice/worker.py).
Goal: a warm check (worker already running) in under 50 ms; cold = the first check in a fresh kernel,
which starts the worker (Python + numpy + the checker). The baseline is the same learner function called
on the same cases in this process, without the checker. Every accident returns within the budget plus
the worker's kill (and, for the next check, a restart): printed, not asserted.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The bodies a learner writes: right, and a usual mistake, for each exercise (source, run in a fresh kernel too).
BODIES = '''
import numpy as np
from lesson_lib.attention import softmax

def split_right(x, h):
    n, d = x.shape
    return x.reshape(n, h, d // h).transpose(1, 0, 2)

def split_wrong(x, h):
    n, d = x.shape
    return x.reshape(h, n, d // h)  # no transpose

def mha_right(x, w_q, w_k, w_v, w_o, h):
    d_k = x.shape[1] // h
    heads = []
    for i in range(h):
        c = slice(i * d_k, (i + 1) * d_k)
        q, k, v = x @ w_q[:, c], x @ w_k[:, c], x @ w_v[:, c]
        heads.append(softmax(q @ k.T / np.sqrt(d_k), axis=-1) @ v)
    return np.concatenate(heads, axis=-1) @ w_o

def mha_wrong(x, w_q, w_k, w_v, w_o, h):
    d_k = x.shape[1] // h
    heads = []
    for i in range(h):
        c = slice(i * d_k, (i + 1) * d_k)
        q, k, v = x @ w_q[:, c], x @ w_k[:, c], x @ w_v[:, c]
        heads.append(softmax(q @ k.T, axis=-1) @ v)  # no 1/sqrt(d_k)
    return np.concatenate(heads, axis=-1) @ w_o

def count_right(n, d, h):
    return 4 * n * d * d + 2 * n * n * d

def count_wrong(n, d, h):
    return 3 * n * d * d + 2 * n * n * d  # forgot W^O
'''

CASES = {  # exercise: (right body, wrong body)
    "split_heads": ("split_right", "split_wrong"),
    "multi_head_attention_loop": ("mha_right", "mha_wrong"),
    "count_multiplies": ("count_right", "count_wrong"),
}

COLD = BODIES + '''
import sys, time
name, body = sys.argv[1], sys.argv[2]
t = time.perf_counter()
from lesson_lib.sections import exercises
imported = time.perf_counter() - t
t = time.perf_counter()
result = exercises.check(name, globals()[body])
cold = time.perf_counter() - t
t = time.perf_counter()
exercises.check(name, globals()[body])
print(f"{cold * 1000:.1f} {imported * 1000:.1f} {(time.perf_counter() - t) * 1000:.1f} {result.status}")
'''


def _cold(name: str, body: str, env: dict) -> tuple[float, float, float, str]:
    """(first check ms, import ms, second check ms, status) in a fresh process."""
    out = subprocess.run([sys.executable, "-c", COLD, name, body], capture_output=True, text=True, env=env,
                         check=True, cwd=ROOT).stdout.split()  # fmt: skip
    return float(out[0]), float(out[1]), float(out[2]), out[3]


def _warm(check, fn, repeat: int = 15) -> tuple[float, float, float]:
    """(median wall ms, min wall ms, median CPU ms of this process): on a loaded shared machine the wall
    time is mostly waiting for a CPU."""
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        check(fn)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(times) * 1000, min(times) * 1000, statistics.median(cpu) * 1000


def _bare(name: str, fn) -> float:
    """The same learner function on the checker's cases, in this process, without the checker (the baseline)."""
    import numpy as np

    from lesson_lib.sections import exercises

    ex, rng = exercises.EXERCISES[name], np.random.default_rng(0)  # the checker's inputs
    calls = [ex.inputs(rng, *case) for case in ex.cases]
    times = []
    for _ in range(15):
        start = time.perf_counter()
        for args in calls:
            fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


ACCIDENTS = '''
import ctypes, os, sys
import numpy as np

def endless_loop(x, h):
    while True:
        pass

def big_power(n, d_model, h):
    return n ** d_model ** h

def exits(x, h):
    os._exit(3)

def segfault(x, h):
    return ctypes.string_at(0)

def deep_recursion(x, h):
    sys.setrecursionlimit(10**7)
    def down(k):
        return list(map(down, [k + 1]))
    return down(0)

def huge_allocation(x, h):
    return np.ones((10**6, 10**6))
'''


def run() -> list[str]:
    tmp = tempfile.mkdtemp(prefix="bench-exercises-")
    os.environ["LESSON_PROGRESS_FILE"] = str(Path(tmp) / "progress.json")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    namespace: dict = {"__name__": "__main__"}  # as in a notebook: the learner's functions live in __main__
    exec(BODIES + ACCIDENTS, namespace)
    from lesson_lib.sections import exercises

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = ["check times (ms), goal warm < 50: cold = first check in a fresh process (starts the worker; median of",
             "3), then its second check; warm = median (min; CPU of this process) of 15; bare = the learner's function",
             f"on the same cases in this process. Load average now {load:.1f} on {os.cpu_count()} CPUs."]
    for name, bodies in CASES.items():
        for verdict, body in zip(("right", "wrong"), bodies):
            colds = [_cold(name, body, env) for _ in range(3)]
            cold, imported, second = (statistics.median(c[i] for c in colds) for i in (0, 1, 2))
            warm, best, cpu = _warm(lambda fn, name=name: exercises.check(name, fn), namespace[body])
            bare = _bare(name, namespace[body])
            lines.append(f"{name:26s} {verdict:5s} {colds[0][3]:7s} cold {cold:5.0f} (import {imported:3.0f}, "
                         f"then {second:4.1f})  warm {warm:5.1f} (min {best:5.1f}, cpu {cpu:4.1f})  bare {bare:4.2f}")
    budget = 1.0
    lines.append(f"accidents (budget {budget:g} s): the check returns; then the next right check (worker restarted):")
    for label, name in [("endless_loop", "split_heads"), ("big_power", "count_multiplies"), ("exits", "split_heads"),
                        ("segfault", "split_heads"), ("deep_recursion", "split_heads"),
                        ("huge_allocation", "split_heads")]:  # fmt: skip
        exercises.check(name, namespace[CASES[name][0]])  # warm before the accident
        start = time.perf_counter()
        result = exercises.check(name, namespace[label], budget=budget)
        elapsed = time.perf_counter() - start
        start = time.perf_counter()
        after = exercises.check(name, namespace[CASES[name][0]])
        again = time.perf_counter() - start
        lines.append(f"{label:16s} {elapsed:5.2f} s  {result.status:8s} next check {again:5.2f} s {after.status:6s}  "
                     f"{result.message[:60]}")
    lines += _progress_saves(Path(tmp))
    return lines


def _progress_saves(folder: Path) -> list[str]:
    from lesson_lib.practice.feedback import Feedback
    from lesson_lib.practice.progress import Progress

    p = Progress(folder / "saves.json")
    times = []
    for i in range(50):
        start = time.perf_counter()
        p.record(Feedback(False, "", question_id="Q2"), str(i))
        times.append(time.perf_counter() - start)
    return [f"progress save (lock, read, merge, atomic write): median {statistics.median(times) * 1000:.1f} ms"
            f" over 50"]  # fmt: skip
