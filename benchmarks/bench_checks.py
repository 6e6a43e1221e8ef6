"""What the argument checks cost: the kernel and the §5 redraw against the bare formula, and how many checks run.

Three figures, each measured in the same run as its baseline:
- ``multi_head_attention`` at the §5 lab's size (n = 11, d_model = 512, h = 8), float64, against the
  same formula written with bare NumPy (no checks, no error translation);
- the §5 redraw's compute (``head_lab.lab_state(h)``, what the slider's callback computes before it
  draws) against that bare formula, for h = 8;
- how many times each check in ``lesson_lib.checks`` runs during one ``lab_state(8)`` call
  (counted with a profile hook, so nothing in the library is patched; a check that returns at once
  because a lesson function called it from inside another is counted apart, as "skipped").
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from lesson_lib import checks as validation
from lesson_lib.attention import multi_head_attention
from lesson_lib.sections import s05_head_lab as head_lab

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


def check_calls(fn) -> tuple[dict[str, int], int]:
    """({check name: times it ran}, times a check was called and returned at once) while ``fn()`` runs."""
    where = validation.__file__
    ran, skipped = {}, 0

    def hook(frame, event, _arg):
        nonlocal skipped
        code = frame.f_code
        if event != "call" or code.co_filename != where or not code.co_name.startswith("check_"):
            return
        if getattr(validation, "_nested", lambda: False)():
            skipped += 1
        else:
            ran[code.co_name] = ran.get(code.co_name, 0) + 1

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return dict(sorted(ran.items())), skipped


def run() -> list[str]:
    from lesson_lib.runtime.blas import one_blas_thread

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
    ran, skipped = check_calls(lambda: head_lab.lab_state(H))
    lines.append(f"checks run per redraw (lab_state({H})): {sum(ran.values())} in all; "
                 + ", ".join(f"{k} {v}" for k, v in ran.items()) + f"; {skipped} called and returned at once")
    ran, skipped = check_calls(lambda: multi_head_attention(x, *ws, H))
    lines.append(f"checks run per multi_head_attention call: {sum(ran.values())}; "
                 + ", ".join(f"{k} {v}" for k, v in ran.items()) + f"; {skipped} returned at once")
    return lines
