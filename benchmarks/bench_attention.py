"""Kernel speed at n = 1024, d_model = 512, float32, weights returned, against NumPy's own matmul.

Figures: time, GFLOP/s (2 flops per multiply-add of the layer's matmuls, see lesson_lib.sections.s04_costs),
and that rate as a fraction of a plain float32 matmul's GFLOP/s measured in the same run. If torch
is importable, its CPU MultiheadAttention (per-head weights requested) is timed too.
"""

from __future__ import annotations

import time

import numpy as np
from attention_fast import multi_head_attention_fast
from attention_reference import multi_head_attention_reference

from lesson_lib import costs
from lesson_lib.attention import multi_head_attention

N, D = 1024, 512
HEADS = (1, 8, 64)


def _median_seconds(fn, repeat=7):
    fn()  # warm-up: allocations, BLAS thread start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _matmul_gflops(rng):
    a = rng.standard_normal((N, 4 * D), dtype=np.float32)
    b = rng.standard_normal((4 * D, N), dtype=np.float32)
    seconds = _median_seconds(lambda: a @ b)
    return 2 * N * 4 * D * N / seconds / 1e9


def _torch_seconds(x, weights, h, threads):
    try:
        import torch
    except ImportError:
        return None
    torch.manual_seed(0)
    torch.set_num_threads(threads or torch.get_num_interop_threads() or 2)
    mha = torch.nn.MultiheadAttention(D, h, bias=False, batch_first=True)
    xt = torch.from_numpy(x)[None]
    with torch.no_grad():
        return _median_seconds(lambda: mha(xt, xt, xt, need_weights=True, average_attn_weights=False))


def run() -> list[str]:
    """Figures with one BLAS thread (steady on a shared 2-core machine) and with the default threads."""
    import contextlib

    from lesson_lib.runtime.blas import one_blas_thread

    lines = []
    for threads in (1, None):
        with one_blas_thread() if threads == 1 else contextlib.nullcontext():
            lines.append("-- 1 BLAS thread" if threads == 1 else "-- default BLAS threads")
            lines.extend(_figures(threads))
    return lines


def _figures(threads) -> list[str]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D), dtype=np.float32)
    weights = [(rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32) for _ in range(4)]
    matmul = _matmul_gflops(rng)
    lines = [f"NumPy float32 matmul baseline: {matmul:.1f} GFLOP/s"]
    for h in HEADS:
        work = 2 * costs.count(N, D, h).matmul_total
        row = [f"h={h:>2}"]
        for name, kernel in (("readable", multi_head_attention), ("fast", multi_head_attention_fast),
                             ("per-head loop", multi_head_attention_reference)):
            seconds = _median_seconds(lambda k=kernel, h=h: k(x, *weights, h))
            rate = work / seconds / 1e9
            row.append(f"{name} {seconds * 1e3:6.1f} ms {rate:5.1f} GFLOP/s ({rate / matmul:4.0%} of matmul)")
        torch_s = _torch_seconds(x, weights, h, threads)
        if torch_s is not None:
            row.append(f"torch MHA {torch_s * 1e3:6.1f} ms")
        lines.append(" | ".join(row))
    return lines
