"""Section 6's speed goals: load all-MiniLM-L6-v2 ≤ 100 ms, forward of the 27-token "Law" sentence ≤ 30 ms.

Each figure is measured in a fresh subprocess, because the number of BLAS threads can only be set
(without threadpoolctl) through OPENBLAS_NUM_THREADS before NumPy is imported. Baselines from the
same run:
  load    vs reading the whole 91 MB file into memory with np.fromfile (what a non-memmap reader pays);
          shown with the sha256 check (what ``load()`` does the first time in a process) and without;
  forward vs the same encoder calling the kernel once per head (``per_head=True``, the paper's loop);
          and one BLAS thread vs two (the machine has 2 cores; other processes share them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

WORKER = r"""
import json, sys, time
import numpy as np
from lesson_lib import pretrained as pt

def samples(fn, repeat):
    fn()  # warm-up: page cache, allocator, BLAS thread start
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e3)
    return out

def fresh_load():
    pt._VERIFIED.clear()  # forget earlier checks: hash the file again, as the first load() in a process does
    pt.load()

path = pt.model_dir() / "model.safetensors"
model = pt.load()
ids = model.tokenizer.encode(pt.PAPER_SENTENCES["law"])[1]
result = {
    "tokens": int(len(ids)),
    "load_verified": samples(fresh_load, 9),
    "load_unverified": samples(lambda: pt.load(verify=False), 9),
    "sha256": samples(lambda: pt.sha256_of(path), 9),
    "fromfile": samples(lambda: np.fromfile(path, dtype=np.uint8), 9),
    "forward": samples(lambda: model.forward(ids), 40),
    "forward_per_head": samples(lambda: model.forward(ids, per_head=True), 40),
}
json.dump(result, sys.stdout)
"""
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _measure(threads):
    env = dict(os.environ)
    env.update({var: str(threads) for var in THREAD_VARS})
    out = subprocess.run([sys.executable, "-c", WORKER], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _stats(values):
    s = sorted(values)
    median = s[len(s) // 2]
    p90 = s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]
    return median, p90


def run() -> list[str]:
    from lesson_lib import pretrained as pt

    if not pt.available():
        return [f"skipped: weights package missing ({pt.INSTALL_COMMAND})"]
    one, two = _measure(1), _measure(2)
    load, _ = _stats(one["load_verified"])
    load_fast, _ = _stats(one["load_unverified"])
    sha, _ = _stats(one["sha256"])
    fromfile, _ = _stats(one["fromfile"])
    fwd, fwd_p90 = _stats(one["forward"])
    loop, _ = _stats(one["forward_per_head"])
    fwd2, fwd2_p90 = _stats(two["forward"])
    return [
        f"load() with sha256 check: median {load:.1f} ms (goal ≤ 100 ms); of which sha256 {sha:.1f} ms",
        f"load(verify=False): median {load_fast:.1f} ms; np.fromfile of the weights {fromfile:.1f} ms "
        f"→ memmap load is {fromfile / load_fast:.1f}× faster than reading the file",
        f"forward, {one['tokens']} tokens, 1 BLAS thread: median {fwd:.1f} ms, p90 {fwd_p90:.1f} ms (goal ≤ 30 ms)",
        f"  kernel once per head (per_head=True): median {loop:.1f} ms → batched heads {loop / fwd:.2f}× faster",
        f"  2 BLAS threads: median {fwd2:.1f} ms, p90 {fwd2_p90:.1f} ms → 1 thread {fwd2 / fwd:.2f}× faster "
        f"(p90 {fwd2_p90 / fwd_p90:.2f}×)",
        f"  load average now: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
