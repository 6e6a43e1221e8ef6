"""How long §10's exercise checks take, cold and warm, and how soon every attack on them returns.

    python benchmarks/run.py exercises

Goal: a check of a right or a wrong body returns in under 50 ms, cold (first check in a fresh kernel) and
warm; the baseline is the same learner function called on the same cases without the checker, in the
same run. Every attack returns within its budget (learner_code.TIME_BUDGET_S per call + GRACE_S) with a
Chinese message. Progress saves are timed too (each takes the file lock, merges and fsyncs).
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
name, body, after_lesson = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if after_lesson:  # what §1-§9 leave in the kernel before §10: numpy.random, the kernel and its checks imported
    from lesson_lib.attention import multi_head_attention
    rng = np.random.default_rng(0)
    multi_head_attention(rng.standard_normal((4, 8)), *(np.eye(8),) * 4, 2)
t = time.perf_counter()
from lesson_lib.practice import exercises
imported = time.perf_counter() - t
t = time.perf_counter()
result = exercises.check(name, globals()[body])
print(f"{(time.perf_counter() - t) * 1000:.1f} {imported * 1000:.1f} {result.status}")
'''


def _cold(name: str, body: str, env: dict, after_lesson: bool) -> tuple[float, float, str]:
    out = subprocess.run([sys.executable, "-c", COLD, name, body, str(int(after_lesson))], capture_output=True,
                         text=True, env=env,
                         check=True, cwd=ROOT).stdout.split()  # fmt: skip
    return float(out[0]), float(out[1]), out[2]


def _warm(check, fn, repeat: int = 15) -> tuple[float, float, float]:
    """(median wall ms, min wall ms, median CPU ms of the process's threads): on a loaded shared machine the
    wall time is mostly waiting for a CPU; the CPU time is what the check costs."""
    times, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        check(fn)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(times) * 1000, min(times) * 1000, statistics.median(cpu) * 1000


def _bare(name: str, fn) -> float:
    """The same learner function on the checker's cases, without the checker (the baseline)."""
    import math

    import numpy as np

    from lesson_lib.practice import exercises

    calls = []
    if name == "split_heads":
        rng = np.random.default_rng(0)
        calls = [(rng.standard_normal((n, d)), h) for n, d, h in exercises._split_cases()]
    elif name == "multi_head_attention_loop":
        rng = np.random.default_rng(1)
        for n, d, h in exercises._MHA_CASES:
            x = rng.standard_normal((n, d))
            calls.append((x, *[rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(4)], h))
    else:
        calls = list(exercises._COUNT_CASES)
    times = []
    for _ in range(15):
        start = time.perf_counter()
        for args in calls:
            fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _attacks() -> dict:
    import signal

    import numpy as np

    class LoopingArray:
        def __array__(self, *a, **k):
            while True:
                pass

    class LoopingMessage(Exception):
        def __str__(self):
            while True:
                pass

    def looping_array(x, h):
        return LoopingArray()

    def looping_message(x, h):
        raise LoopingMessage()

    def sig_ign(x, h):
        try:
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
        except ValueError:
            pass
        while True:
            pass

    def itimer(x, h):
        signal.setitimer(signal.ITIMER_REAL, 0)
        while True:
            pass

    def swallow(x, h):
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass

    def big(x, h):
        return np.ones(BIG)

    def patch_allclose(x, h):
        np.allclose = lambda *a, **k: True
        return x

    def reference(x, w_q, w_k, w_v, w_o, h):
        from lesson_lib.attention import multi_head_attention_reference

        return multi_head_attention_reference(x, w_q, w_k, w_v, w_o, h)[0]

    def fast(x, w_q, w_k, w_v, w_o, h):
        from lesson_lib.attention_fast import multi_head_attention_fast

        return multi_head_attention_fast(x, w_q, w_k, w_v, w_o, h)[0]

    available_gb = _available_gb()
    BIG = 10**9 if available_gb > 12 else 2 * 10**8
    return {
        "__array__ loops": ("split_heads", looping_array),
        "exception whose __str__ loops": ("split_heads", looping_message),
        "signal(SIGALRM, SIG_IGN) + loop": ("split_heads", sig_ign),
        "setitimer(ITIMER_REAL, 0) + loop": ("split_heads", itimer),
        "except BaseException around a loop": ("split_heads", swallow),
        f"np.ones({BIG:.0e})": ("split_heads", big),
        "patch np.allclose": ("split_heads", patch_allclose),
        "multi_head_attention_reference": ("multi_head_attention_loop", reference),
        "multi_head_attention_fast": ("multi_head_attention_loop", fast),
    }


def _available_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def run() -> list[str]:
    tmp = tempfile.mkdtemp(prefix="bench-exercises-")
    os.environ["LESSON_PROGRESS_FILE"] = str(Path(tmp) / "progress.json")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    namespace: dict = {}
    exec(BODIES, namespace)
    from lesson_lib.practice import exercises, learner_code

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = ["check times (ms), goal < 50: cold = first check in a fresh process (median of 3), 'fresh' with only",
             "numpy imported, 'lesson' after the kernel ran once as §1-§9 do (numpy.random, numpy.ma then loaded);",
             "warm = median (min; CPU time) of 15 in one process; bare = the learner's function on the same cases;",
             f"every check records to the progress file. Load average now {load:.1f} on {os.cpu_count()} CPUs."]
    for name, bodies in CASES.items():
        for verdict, body in zip(("right", "wrong"), bodies):
            fresh = statistics.median(_cold(name, body, env, False)[0] for _ in range(3))
            colds = [_cold(name, body, env, True) for _ in range(3)]
            cold, imported = (statistics.median(c[i] for c in colds) for i in (0, 1))
            status = colds[0][2]
            warm, best, cpu = _warm(lambda fn, name=name: exercises.check(name, fn), namespace[body])
            bare = _bare(name, namespace[body])
            lines.append(f"{name:26s} {verdict:5s} {status:7s} cold fresh {fresh:4.0f} lesson {cold:5.1f}  warm "
                         f"{warm:5.1f} (min {best:5.1f}, cpu {cpu:5.1f})  bare {bare:4.2f}  (import {imported:.0f})")
    limit = learner_code.TIME_BUDGET_S + learner_code.GRACE_S
    lines.append(f"attacks (budget {learner_code.TIME_BUDGET_S:g} s per call + grace {learner_code.GRACE_S:g} s "
                 f"= {limit:g} s):")  # fmt: skip
    for label, (name, fn) in _attacks().items():
        start = time.perf_counter()
        result = exercises.check(name, fn)
        elapsed = time.perf_counter() - start
        ok = "ok  " if elapsed <= limit + 0.5 else "LATE"
        lines.append(f"{ok} {label:36s} {elapsed:5.2f} s  {result.status:9s} {result.message[:70]}")
    lines += _progress_saves(Path(tmp))
    return lines


def _progress_saves(folder: Path) -> list[str]:
    from lesson_lib.practice.progress import Progress, ProgressFile

    p = Progress(("Q2",), store=ProgressFile(folder / "saves.json"))
    times = []
    for i in range(50):
        start = time.perf_counter()
        p.record("Q2", {"kind": "answer", "answer": str(i), "verdict": "wrong"})
        times.append(time.perf_counter() - start)
    return [f"progress save (lock, read, merge, atomic write): median {statistics.median(times) * 1000:.1f} ms"
            f" over 50"]  # fmt: skip
