"""Checks once, at the door (issue 39): what the kernel's checks cost where the lesson computes, in one run.

Every figure is a ratio to a baseline measured in the same run, in interleaved pairs (the order alternates each
round; the median of the per-pair ratios is printed), on one BLAS thread, in CPU time (``time.process_time``:
on a shared machine the wall clock also counts the time other processes held the CPU). Goals:
- ``multi_head_attention`` with its per-head weights, n = 1024, d_model = 512, h = 8, float32: ≤ 1.05× the same
  formulas written plainly, and faster than a picoGPT-style NumPy version (three projections, ``np.split`` into
  heads, a Python loop of softmax(q kᵀ / √d_k) v per head, ``np.hstack``, the output projection);
- each §6 encoder's forward pass ≤ 2× its bare matrix products (the same products, shapes and weights, nothing
  else: no LayerNorm, GELU, softmax or bias);
- the §5 slider's callback (the real widget, no front end) ≤ 50 ms on the Python side;
- §7's 6 × 3 toy sweep ≤ 20 CPU-seconds (a fresh process: its CPU time around the sweep alone).
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time

import numpy as np

from lesson_lib.attention import multi_head_attention
from lesson_lib.runtime.blas import one_blas_thread

PAIRS = 41
N, D_MODEL, H = 1024, 512, 8


def plain(x, w_q, w_k, w_v, w_o, h):
    """The kernel's formulas, line for line, in one function with nothing else: no check, no translation."""
    n, d = x.shape
    d_k = d // h
    q, k, v = (np.swapaxes((x @ w).reshape(n, h, d_k), -2, -3) for w in (w_q, w_k, w_v))  # (h, n, d_k)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (h, n, n)
    shifted = scores - scores.max(axis=-1, keepdims=True)  # (h, n, n)
    e = np.exp(shifted)  # (h, n, n)
    weights = e / e.sum(axis=-1, keepdims=True)  # (h, n, n)
    heads = weights @ v  # (h, n, d_k)
    return np.swapaxes(heads, -2, -3).reshape(n, d) @ w_o, weights  # (n, d_model), (h, n, n)


def _pico_softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def pico(x, w_q, w_k, w_v, w_o, h):
    """picoGPT's mha without its causal mask: split into heads, one head at a time, hstack."""
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # [n, d_model] each
    heads = zip(*(np.split(a, h, axis=-1) for a in (q, k, v)))  # h × ([n, d_k] ×3)
    out = [_pico_softmax(q_i @ k_i.T / np.sqrt(q_i.shape[-1])) @ v_i for q_i, k_i, v_i in heads]
    return np.hstack(out) @ w_o  # [n, d_model]


def pairs(ours, base, rounds=PAIRS):
    """(median of ours/base over interleaved pairs, median ours CPU-s, median base CPU-s); one warm-up each."""
    ours(), base()
    ratios, a, b = [], [], []
    for i in range(rounds):
        for fn, times in ((ours, a), (base, b))[:: 1 if i % 2 else -1]:
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        ratios.append(a[-1] / b[-1])
    return statistics.median(ratios), statistics.median(a), statistics.median(b)


def _line(name, goal, ratio, ours, base, base_name):
    return (f"{name}: {ratio:.3f}× {base_name} (median CPU {ours * 1e3:.1f} ms vs {base * 1e3:.1f} ms; "
            f"goal {goal}: {'met' if eval(f'{ratio} {goal}') else 'MISSED'})")


def attention_lines():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D_MODEL)).astype(np.float32)
    ws = [(rng.standard_normal((D_MODEL, D_MODEL)) / math.sqrt(D_MODEL)).astype(np.float32) for _ in range(4)]
    out, weights = multi_head_attention(x, *ws, H)
    assert all(np.array_equal(a, b) for a, b in zip((out, weights), plain(x, *ws, H)))  # the same numbers
    np.testing.assert_allclose(out, pico(x, *ws, H), rtol=1e-3, atol=1e-4)
    ours = lambda: multi_head_attention(x, *ws, H)  # noqa: E731
    size = f"n = {N}, d_model = {D_MODEL}, h = {H}, float32"
    return [f"multi_head_attention with per-head weights, {size}, {PAIRS} interleaved pairs:",
            "  " + _line("vs plain formulas", "<= 1.05", *pairs(ours, lambda: plain(x, *ws, H)), "plain"),
            "  " + _line("vs picoGPT-style", "< 1", *pairs(ours, lambda: pico(x, *ws, H)), "picoGPT")]


def bare_products(encoder, ids):
    """The encoder's matrix products alone, with its own weights and shapes (T tokens); every layer starts from
    the word rows (no LayerNorm here to keep the numbers in range, so no layer feeds the next)."""
    w, n_heads = encoder.w, encoder.n_heads
    x = encoder.word_rows(ids)  # (T, d)
    T, d = x.shape
    for layer in range(encoder.n_layers):
        p = f"l{layer}."
        q, k, v = (x @ w[p + name + ".w"].T for name in ("q", "k", "v"))  # (T, d)
        q, k, v = (a.reshape(T, n_heads, d // n_heads).swapaxes(0, 1) for a in (q, k, v))  # (H, T, d_k)
        heads = (q @ k.swapaxes(-1, -2)) @ v  # (H, T, d_k)
        out = heads.swapaxes(0, 1).reshape(T, d) @ w[p + "ao.w"].T  # (T, d)
        out = (out @ w[p + "fi.w"].T) @ w[p + "fo.w"].T  # (T, F) -> (T, d)
    return out


def encoder_lines():
    from lesson_lib.models.pretrained import e5, minilm
    from lesson_lib.sections.s06_real_heads import pronoun

    lines = []
    for name, module, text in (("MiniLM", minilm, minilm.PAPER_SENTENCES["law"]),
                               ("e5", e5, pronoun.LESSON_SENTENCE)):
        model = module.load()
        ids = model.tokenizer.encode(text)[1]
        forward = lambda m=model, ids=ids: m.forward(ids)  # noqa: E731
        bare = lambda m=model, ids=ids: bare_products(m, ids)  # noqa: E731
        ratio, ours, base = pairs(forward, bare, rounds=41)
        lines.append(_line(f"{name} forward ({len(ids)} tokens)", "<= 2", ratio, ours, base, "bare products"))
    return lines


def callback_lines():
    from lesson_lib.sections import s05_head_lab

    box = s05_head_lab.lab_widget()
    slider = box.controls["slider"]
    lines = []
    for h in (s05_head_lab.BASE_HEADS, s05_head_lab.HEAD_CHOICES[-1]):
        wall, cpu = [], []
        for _ in range(PAIRS):
            slider.value = 1 if h != 1 else 2  # not timed: the slider must move to h to fire
            start, start_cpu = time.perf_counter(), time.process_time()
            slider.value = h
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        ms, cpu_ms = statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3
        lines.append(f"§5 slider move to h = {h}: median {ms:.1f} ms wall, {cpu_ms:.1f} ms CPU over {PAIRS} moves "
                     f"(goal <= 50 ms: {'met' if cpu_ms <= 50 else 'MISSED'})")
    return lines


_SWEEP = """
import json, time
from lesson_lib.models.toy.sweeping import sweep
start = time.process_time()
sweep((1, 2, 4, 8, 16, 32), 3)
print(json.dumps(time.process_time() - start))
"""


def sweep_lines():
    done = subprocess.run([sys.executable, "-c", _SWEEP], capture_output=True, text=True, check=True)
    cpu = float(done.stdout.split()[-1])
    verdict = "met" if cpu <= 20 else "MISSED"
    return [f"§7's 6 × 3 toy sweep: {cpu:.1f} CPU-s in a fresh process (goal <= 20: {verdict})"]


def run() -> list[str]:
    with one_blas_thread():
        lines = attention_lines() + encoder_lines() + callback_lines()
    return lines + sweep_lines()


if __name__ == "__main__":
    print("\n".join(run()))
