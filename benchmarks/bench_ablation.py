"""§7 sweep speed: the full 6 × 3 sweep, and the same training done the naive way, in the same run.

- sweep: ``lesson_lib.ablation.sweep`` as the CLI runs it: the 3 seeds of a head count in one batch
  of arrays, head counts in 2 worker processes.
- batched seeds, 1 process: the same without workers.
- naive: one (h, seed) model after another, one thread: the prototype's loop.
The three are compared at STEPS_COMPARED steps (so the naive loop stays short; training cost is
linear in steps), each timed REPEATS times in turn and the fastest kept, because other work on a
shared machine only ever adds time. The full 700-step sweep is timed on its own line. Also
reported: the share of single-thread training time spent inside the kernel's
``scaled_dot_product_attention``.
"""

from __future__ import annotations

import time
from dataclasses import replace

from lesson_lib import ablation
from lesson_lib.ablation import TrainConfig, sweep

HEADS = (1, 2, 4, 8, 16, 32)
SEEDS = 3
STEPS_COMPARED = 100
REPEATS = 3


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _kernel_share(cfg):
    """Fraction of a one-thread sweep's time spent in scaled_dot_product_attention."""
    kernel, spent = ablation.scaled_dot_product_attention, [0.0]

    def timed_kernel(*args, **kwargs):
        start = time.perf_counter()
        try:
            return kernel(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    ablation.scaled_dot_product_attention = timed_kernel
    try:
        _, wall, _ = _timed(lambda: sweep(HEADS, SEEDS, cfg=cfg, workers=1))
    finally:
        ablation.scaled_dot_product_attention = kernel
    return spent[0] / wall


def run() -> list[str]:
    lines = []
    full, wall, _ = _timed(lambda: sweep(HEADS, SEEDS))
    lines.append(f"full sweep, {len(HEADS)} head counts × {SEEDS} seeds × {TrainConfig.steps} steps, "
                 f"2 worker processes: {wall:.1f} s wall (goal ≤ 10 s wall)")
    lines.append("  mean accuracy by h: " + ", ".join(f"{r['h']}: {r['accuracy_mean']:.3f}" for r in full.results))

    cfg = replace(TrainConfig(), steps=STEPS_COMPARED)
    variants = {
        "naive": lambda: [sweep(HEADS, [seed], cfg=cfg, workers=1) for seed in range(SEEDS)],
        "batched": lambda: sweep(HEADS, SEEDS, cfg=cfg, workers=1),
        "parallel": lambda: sweep(HEADS, SEEDS, cfg=cfg, workers=2),
    }
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(REPEATS):
        for name, fn in variants.items():  # interleaved, so a burst of load hits all three alike
            best[name] = min(best[name], _timed(fn)[1])
    naive, batched, parallel = best["naive"], best["batched"], best["parallel"]
    lines.append(f"at {STEPS_COMPARED} steps, fastest of {REPEATS}: naive one model at a time {naive:.2f} s (baseline)")
    lines.append(f"  seeds batched, 1 process {batched:.2f} s = {naive / batched:.2f}× faster")
    lines.append(f"  seeds batched, 2 processes {parallel:.2f} s = {naive / parallel:.2f}× faster")
    lines.append(f"share of 1-thread training time inside the kernel's scaled_dot_product_attention: "
                 f"{_kernel_share(cfg):.0%}")
    return lines
