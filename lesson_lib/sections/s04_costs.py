"""§4 · 计算量守恒: the per-stage counts (``lesson_lib.costs``) timed on the kernel, drawn and tabulated.

The closed-form counts themselves are pure functions in ``lesson_lib.costs``; this module measures the
readable kernel's time for several head counts and shows the counts as the section prints them.
"""

from __future__ import annotations

import numpy as np

from lesson_lib.attention import head_width
from lesson_lib.checks import check_int
from lesson_lib.costs import SOFTMAX_WORK, SOFTMAX_WORK_FORMULA, count, count_rows
from lesson_lib.paper import BASE_HEADS


def _positive(value, name):
    return check_int(value, name, minimum=1)


# ---------------------------------------------------------------------------------------------
# Measured time and the section-4 figure
# ---------------------------------------------------------------------------------------------


def time_kernel(n: int, d_model: int, heads, repeat: int = 5, seed: int = 0) -> dict[int, float]:
    """Median seconds of the lesson's readable kernel for each h, with one BLAS thread.

    One thread keeps the figures steady on a shared laptop or CI machine; the comparison between
    head counts is what matters, not the absolute time. The thread limit is part of what this
    measures (§4 states it), so it is set here rather than left to every caller.
    """
    import time

    from lesson_lib.attention import multi_head_attention
    from lesson_lib.runtime.blas import one_blas_thread

    n, d_model = _positive(n, "n"), _positive(d_model, "d_model")
    repeat, seed = check_int(repeat, "repeat", minimum=1), check_int(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model), dtype=np.float32)  # (n, d_model)
    ws = [(rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(np.float32) for _ in range(4)]
    result = {}
    with one_blas_thread():
        for i, h in enumerate(heads):
            if i == 0:
                multi_head_attention(x, *ws, h)  # one warm-up; the median of the repeats drops a slow first run
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                multi_head_attention(x, *ws, h)
                times.append(time.perf_counter() - start)
            result[h] = float(np.median(times))
    return result


def plot_counts(n: int, d_model: int, heads):
    """Stacked multiplies per stage against h (constant), and softmax work against h (growing)."""
    import matplotlib.pyplot as plt

    from lesson_lib.show.plotting import use_chinese_font

    use_chinese_font()
    rows = [count(n, d_model, h) for h in heads]
    x = np.arange(len(rows))
    from lesson_lib.show.plotting import FIGURE_MAX_INCHES, describe

    # One panel above the other: side by side they would be shrunk to half size in a 592 px output.
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(FIGURE_MAX_INCHES, 7.6), height_ratios=[1.25, 1])
    stages = [("qkv_projections", "Q/K/V 投影 $3nd^2$", "#4C72B0"), ("scores", "打分 $QK^T$：$n^2d$", "#DD8452"),
              ("weights_v", "权重 × V：$n^2d$", "#55A868"), ("output_projection", "输出投影 $W^O$：$nd^2$", "#8172B2")]
    bottom = np.zeros(len(rows))
    for attr, label, color in stages:
        vals = np.array([getattr(r, attr) for r in rows]) / 1e6
        ax1.bar(x, vals, bottom=bottom, label=label, color=color)
        bottom += vals
    ax1.set_xticks(x, [str(h) for h in heads])
    ax1.set_xlabel("头数 h")
    ax1.set_ylabel("矩阵乘法的乘法次数（百万）")
    ax1.set_title(f"矩阵乘法：每种头数都一样（n = {n}, d_model = {d_model}）")
    # Under the axes, not over the bars (every bar reaches the same height: no free corner inside).
    ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    soft = np.array([r.softmax_total for r in rows]) / 1e3
    ax2.bar(x, soft, color="#C44E52")
    ax2.set_xticks(x, [str(h) for h in heads])
    ax2.set_xlabel("头数 h")
    ax2.set_ylabel("softmax 工作量（千次）")
    ax2.set_title("缩放 + exp + 除法 = $3hn^2$：随 h 线性增长")
    fig.tight_layout()
    matmul = [r.matmul_total for r in rows]
    constant = len(set(matmul)) == 1
    first = rows[0]
    alt = (f"两张柱状图（n = {n}，d_model = {d_model}，h = {'、'.join(map(str, heads))}）。上图：矩阵乘法的乘法次数"
           + (f"每种头数都是 {matmul[0]:,} 次" if constant else f"从 {matmul[0]:,} 次变到 {matmul[-1]:,} 次")
           + f"，其中 Q/K/V 投影 {first.qkv_projections:,}、打分 {first.scores:,}、权重 × V {first.weights_v:,}、"
           f"输出投影 {first.output_projection:,}。下图：softmax 工作量 3·h·n² 随 h 线性增长，"
           f"从 h = {heads[0]} 的 {rows[0].softmax_total:,} 次到 h = {heads[-1]} 的 {rows[-1].softmax_total:,} 次。")
    table = (["头数 h", "矩阵乘法（次）", "softmax 工作量（次）"],
             [[h, f"{r.matmul_total:,}", f"{r.softmax_total:,}"] for h, r in zip(heads, rows)])
    return describe(fig, alt, table)


def format_table(n: int, d_model: int, heads) -> str:
    """The per-stage counts as a text table, one row per h."""
    from lesson_lib.show.tables import text_table

    headers = ["h", "d_k", "Q/K/V 投影", "打分 QKᵀ", "权重×V", "W^O 投影", "矩阵乘法合计",
               f"{SOFTMAX_WORK} {SOFTMAX_WORK_FORMULA}"]
    fields = ["h", "d_k", "qkv_projections", "scores", "weights_v", "output_projection", "matmul_total",
              "softmax_total"]
    return text_table(headers, [[r[f] for f in fields] for r in count_rows(n, d_model, heads)])


def scores_text(d_model: int, heads) -> str:
    """The lesson's algebra for QKᵀ as the coefficient of n²: per head d_k·n², all heads d_model·n²."""
    lines = []
    for h in heads:
        per_head = count(1, head_width(d_model, h), 1).scores  # one head's QKᵀ with n = 1
        lines.append(f"h = {h}: 每个头打分 {per_head}n²，{h} 个头共 {count(1, d_model, h).scores}n²")
    return "\n".join(lines)


SIMILAR_TIME = 1.25  # "about as fast": within 25 %, well outside the run-to-run noise of a median of a few runs


def timing_reading_text(times: dict[int, float], n: int) -> str:
    """What the measured times at one n say about "no extra cost": each h against the first, in words."""
    first, *others = times
    if not others:
        return ""
    ratios = "，".join(f"h = {h} 是 {times[h] / times[first]:.1f} 倍" for h in others)
    line = f"n = {n} 时，以 h = {first} 为 1：{ratios}。"
    base = BASE_HEADS if BASE_HEADS in others else others[0]
    if times[base] / times[first] <= SIMILAR_TIME:
        return line + f"在这台电脑上，h = {base} 和 h = {first} 差不多快：用时也基本守恒。"
    return line + f"在这台电脑上，h = {base} 明显比 h = {first} 慢：守恒的是乘法次数，不是用时。"


def timing_text(ns, d_model: int, heads, repeat: int = 3) -> str:
    """Measured kernel time for each n and h, one line per n, then the reading of the largest n."""
    lines, times = [], {}
    for n in ns:
        times = time_kernel(n=n, d_model=d_model, heads=heads, repeat=repeat)
        lines.append(f"n = {n:>3}: " + "，".join(f"h = {h}: {t * 1e3:.1f} ms" for h, t in times.items()))
    if ns and (reading := timing_reading_text(times, ns[-1])):
        lines.append(reading)
    return "\n".join(lines)
