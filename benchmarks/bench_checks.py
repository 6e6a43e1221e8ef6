"""What the argument checks cost: the kernel and the §5 redraw against the bare formula, and how many checks run.

Three figures, each measured in the same run as its baseline:
- ``multi_head_attention`` at the §5 lab's size (n = 11, d_model = 512, h = 8), float64, against the
  same formula written with bare NumPy (no checks, no error translation);
- the §5 redraw's compute (``head_lab.lab_state(h)``, what the slider's callback computes before it
  draws) against that bare formula, for h = 8;
- how many times each check in ``lesson_lib.validation`` runs during one ``lab_state(8)`` call
  (counted with cProfile, so nothing in the library is patched).
"""

from __future__ import annotations

import cProfile
import math
import pstats
import time

import numpy as np

from lesson_lib import head_lab, validation
from lesson_lib.attention import multi_head_attention

N, D, H = 11, 512, 8
REPEAT = 2000


def _bare(x, w_q, w_k, w_v, w_o, h):
    """The paper's formula with nothing else: the baseline every ratio is taken against."""
    n, d = x.shape
    d_k = d // h

    def split(a):
        return a.reshape(n, h, d_k).swapaxes(0, 1)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(d_k)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return (weights @ v).swapaxes(0, 1).reshape(n, d) @ w_o, weights


def _median_us(fn, repeat=REPEAT):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e6


def check_calls(fn) -> dict[str, int]:
    """Calls of every function defined in validation.py while ``fn()`` runs."""
    profile = cProfile.Profile()
    profile.runcall(fn)
    stats = pstats.Stats(profile).stats
    where = validation.__file__
    return {name: calls for (path, _, name), (_, calls, *_rest) in stats.items() if path == where}


def run() -> list[str]:
    from lesson_lib.blas import one_blas_thread

    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D))
    ws = [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]
    lines = []
    with one_blas_thread():
        head_lab.lab_state(H)  # warm the lab's parameter cache
        timings = {"bare": [], "mha": [], "lab": []}
        for _ in range(5):  # interleaved rounds, so a burst of load hits every path alike
            timings["bare"].append(_median_us(lambda: _bare(x, *ws, H), REPEAT // 5))
            timings["mha"].append(_median_us(lambda: multi_head_attention(x, *ws, H), REPEAT // 5))
            timings["lab"].append(_median_us(lambda: head_lab.lab_state(H), REPEAT // 20))
        bare, mha, lab = (float(np.median(timings[k])) for k in ("bare", "mha", "lab"))
    lines.append(f"bare formula (n={N}, d_model={D}, h={H}, float64): {bare:7.1f} µs")
    lines.append(f"multi_head_attention:                          {mha:7.1f} µs = {mha / bare:4.2f}× bare")
    lines.append(f"§5 redraw compute lab_state({H}):                {lab:7.1f} µs = {lab / bare:4.2f}× bare")
    calls = check_calls(lambda: head_lab.lab_state(H))
    checks = {k: v for k, v in sorted(calls.items()) if k.startswith("check_")}
    lines.append(f"checks per redraw (lab_state({H})): {sum(checks.values())} in all; "
                 + ", ".join(f"{k} {v}" for k, v in checks.items()))
    lines.append(f"every validation.py function called per redraw: {sum(calls.values())} calls")
    return lines
