"""Section 6's speed goals: load all-MiniLM-L6-v2 ≤ 100 ms, forward of the 27-token "Law" sentence ≤ 30 ms.

Each set of figures is measured in a fresh subprocess (``python bench_pretrained.py --worker``),
because without threadpoolctl the number of BLAS threads can only be set through
OPENBLAS_NUM_THREADS before NumPy is imported. Baselines from the same run:
  load    vs reading the whole 91 MB file into memory with np.fromfile (what a non-memmap reader pays);
          shown with the sha256 check (what the first ``load()`` in a process does) and without;
  forward vs the same encoder calling the kernel once per head (``per_head=True``, the paper's loop);
          and one BLAS thread vs two (the machine has 2 cores; other processes share them).
Timings are interleaved round by round, so a burst of load from another process hits every variant.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _interleaved(fns, repeat):
    """{name: [ms, ...]}: every fn timed once per round, after one warm-up call each."""
    for fn in fns.values():
        fn()  # warm-up: page cache, allocator, BLAS thread start
    out = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            out[name].append((time.perf_counter() - start) * 1e3)
    return out


def _worker():
    import numpy as np

    from lesson_lib import pretrained as pt

    def fresh_load():
        pt._VERIFIED.clear()  # forget earlier checks: hash the file again, as the first load() in a process does
        pt.load()

    path = pt.model_dir() / "model.safetensors"
    model = pt.load()
    ids = model.tokenizer.encode(pt.PAPER_SENTENCES["law"])[1]
    result = {"tokens": len(ids)}
    loads = {
        "load_verified": fresh_load,
        "load_unverified": lambda: pt.load(verify=False),
        "sha256": lambda: pt.sha256_of(path),
        "fromfile": lambda: np.fromfile(path, dtype=np.uint8),
    }
    result.update(_interleaved(loads, 11))
    forwards = {"forward": lambda: model.forward(ids), "forward_per_head": lambda: model.forward(ids, per_head=True)}
    result.update(_interleaved(forwards, 40))
    json.dump(result, sys.stdout)


def _measure(threads):
    env = dict(os.environ)
    env.update({var: str(threads) for var in THREAD_VARS})
    out = subprocess.run([sys.executable, __file__, "--worker"], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _stats(values):
    s = sorted(values)
    return s[len(s) // 2], s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]  # median, p90


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
        f"  2 BLAS threads: median {fwd2:.1f} ms, p90 {fwd2_p90:.1f} ms, worst {max(two['forward']):.1f} ms "
        f"(1 thread: worst {max(one['forward']):.1f} ms) → time ratio 2 threads / 1 thread: "
        f"median {fwd2 / fwd:.2f}, p90 {fwd2_p90 / fwd_p90:.2f} (> 1: one thread is faster)",
        f"  load average now: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores",
    ]


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker()
    else:
        print("\n".join(run()))
