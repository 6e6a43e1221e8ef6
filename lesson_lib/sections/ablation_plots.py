"""Figures for §7: the paper's Table 3 rows (A)/(B), the toy sweep beside them, and h = 1 vs h = 4 maps.

Every number about the paper comes from ``paper.TABLE3``; every label is Chinese. matplotlib is
imported inside the functions, so importing this module costs only numpy.
"""

from __future__ import annotations

import numpy as np

from lesson_lib.paper import TABLE3

__all__ = [
    "plot_head_maps",
    "plot_one_vs_four",
    "plot_table3",
    "plot_toy_vs_paper",
    "single_head_drop",
    "table3_series",
    "table3_text",
]

SOURCE_NOTE = "数据：Vaswani et al. 2017，表 3（第 9 页），newstest2013 开发集，单次运行"


def table3_series():
    """Rows of Table 3 as plot series: (A) with base (h varies, d_k = 512/h) and (B) with base (h = 8)."""
    base = [r for r in TABLE3 if r["row"] == "base"]
    row_a = sorted(base + [r for r in TABLE3 if r["row"] == "A"], key=lambda r: r["h"])
    row_b = sorted(base + [r for r in TABLE3 if r["row"] == "B"], key=lambda r: r["d_k"])
    return row_a, row_b


def single_head_drop() -> float:
    """BLEU of the best (A)/base setting minus BLEU with one head: the lesson's "0.9", computed."""
    row_a, _ = table3_series()
    single = next(r for r in row_a if r["h"] == 1)
    return round(max(r["bleu"] for r in row_a) - single["bleu"], 1)


def plot_table3():
    """2 × 2 panels: BLEU (top) and perplexity (bottom) against h (left) and against d_k (right)."""
    plt = _pyplot()
    row_a, row_b = table3_series()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.6), dpi=100)
    for row, (key, label) in enumerate([("bleu", "BLEU（越高越好）"), ("ppl", "困惑度 PPL（越低越好）")]):
        left, right = axes[row]
        _log2_axis(left, [r["h"] for r in row_a], "头数 h（d_model = 512 固定，d_k = 512 / h）")
        left.plot([r["h"] for r in row_a], [r[key] for r in row_a], "o-", color="C0", label="(A) 行 + base")
        for r in row_a:
            left.annotate(f"d_k={r['d_k']}", (r["h"], r[key]), textcoords="offset points", xytext=(0, 7),
                          ha="center", fontsize=8)
        _log2_axis(right, sorted({r["d_k"] for r in row_a + row_b}), "每个头的维度 d_k")
        right.plot([r["d_k"] for r in row_a], [r[key] for r in row_a], "o-", color="C0", label="(A)：h = 512 / d_k")
        right.plot([r["d_k"] for r in row_b], [r[key] for r in row_b], "s--", color="C3", label="(B)：h = 8 不变")
        for ax in (left, right):
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        pad = 0.25 if key == "bleu" else 0.06
        values = [r[key] for r in row_a + row_b]
        for ax in (left, right):
            ax.set_ylim(min(values) - pad, max(values) + pad)
        right.legend(fontsize=8, loc="upper right" if key == "bleu" else "lower right")
    h32 = next(r for r in row_a if r["h"] == 32)
    b16 = next(r for r in row_b if r["d_k"] == 16)
    axes[0, 1].annotate(
        f"d_k = 16：h = 32 得 {h32['bleu']}，h = 8 得 {b16['bleu']}",
        (16, b16["bleu"]), textcoords="offset points", xytext=(18, -4), fontsize=8, color="C3",
    )
    fig.suptitle("论文表 3：(A) 改变头数、总算力不变；(B) 只把 d_k 变窄", fontsize=12)
    fig.text(0.99, 0.005, SOURCE_NOTE, ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    return fig


def plot_toy_vs_paper(results, d_model: int = 32, chance: float = 0.125):
    """Paper's BLEU against h (left) beside the toy sweep's accuracy against h (right)."""
    plt = _pyplot()
    row_a, _ = table3_series()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 4.4), dpi=100)
    _log2_axis(left, [r["h"] for r in row_a], "头数 h（d_k = 512 / h）")
    left.plot([r["h"] for r in row_a], [r["bleu"] for r in row_a], "o-", color="C0")
    left.set_ylabel("BLEU（越高越好）")
    left.set_title("论文：Transformer base，英→德翻译", fontsize=10)
    left.grid(alpha=0.3)

    heads = [r["h"] for r in results]
    _log2_axis(right, heads, f"头数 h（d_k = {d_model} / h）")
    mean = np.array([r["accuracy_mean"] for r in results])
    sds = [r.get("accuracy_sd") for r in results]  # None for a single seed: no error bars
    sd = None if all(v is None for v in sds) else np.array([v or 0.0 for v in sds])
    right.errorbar(heads, mean, yerr=sd, fmt="o-", color="C0", capsize=3, lw=2, label="三个目标的平均")
    for target, label, style in [("prev", "前一个 prev", ":"), ("next", "后一个 next", "--"),
                                 ("match", "按键查找 match", "-.")]:
        right.plot(heads, [r["per_target"][target] for r in results], style, lw=1, alpha=0.8, label=label)
    right.axhline(chance, color="0.5", lw=1, ls="--")
    right.text(heads[0], chance + 0.02, "随机猜测", fontsize=8, color="0.4")
    right.set_ylim(0, 1.05)
    right.set_ylabel("测试准确率")
    right.set_title(f"玩具实验：3-lookup 任务，一层注意力，d_model = {d_model}", fontsize=10)
    right.grid(alpha=0.3)
    right.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4, frameon=False)
    fig.text(0.99, 0.005, SOURCE_NOTE + "；右图为本课的种子化训练", ha="right", va="bottom", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def plot_head_maps(maps_h1, maps_h4, tokens=None, head_names=None, suptitle=None):
    """One sequence's attention: the single head of h = 1 (left) beside the four heads of h = 4 (right)."""
    from lesson_lib.display.plotting import plot_heads

    plt = _pyplot()
    maps_h1, maps_h4 = np.asarray(maps_h1), np.asarray(maps_h4)
    if maps_h1.ndim == 3:
        maps_h1 = maps_h1[0]  # (T, T) the one head
    if maps_h4.ndim != 3:
        raise ValueError(f"右边需要多个头的权重 (h, n, n)，收到的形状是 {maps_h4.shape}。")
    if tokens is None:
        tokens = [str(i + 1) for i in range(maps_h4.shape[-1])]  # positions counted from 1, as the learner counts
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.2), dpi=100, layout="constrained",
                                      gridspec_kw={"width_ratios": [1, 1.25]})
    plot_heads(maps_h1, tokens=tokens, titles=["h = 1：唯一的头"], ax=left)
    names = head_names or [f"头 {i + 1}" for i in range(len(maps_h4))]
    plot_heads(maps_h4, tokens=tokens, titles=[f"h = 4：{n}" for n in names], ax=right)
    left.set_xlabel("")
    left.set_ylabel("")
    # One note for all five maps (axis labels on the tiled right image land outside the figure).
    fig.supxlabel("每张图：第 i 行是位置 i 发出的注意力（查询），第 j 列是它放在位置 j 上的权重（键）", fontsize=9)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    return fig


def plot_one_vs_four(result, sequence, batch, on_targets_h4):
    """plot_head_maps for trained models: h = 1 and h = 4 on one ``sequence``, heads named by their role,
    the title giving h = 4's mean JS divergence between heads over ``batch``."""
    from lesson_lib.ablation.model import attention_maps
    from lesson_lib.ablation.report import main_roles
    from lesson_lib.kernel.attention_stats import mean_pairwise_js

    map_h1 = attention_maps(result.params[1], 1, sequence)[0]  # (1, T, T)
    map_h4 = attention_maps(result.params[4], 4, sequence)[0]  # (4, T, T)
    js = mean_pairwise_js(attention_maps(result.params[4], 4, batch))
    return plot_head_maps(
        map_h1, map_h4, head_names=main_roles(on_targets_h4),
        suptitle=(f"同一条序列：左边一个头两头兼顾，右边四个头各管一件事"
                  f"（h = 4 的头两两之间平均 JS 散度 {js:.2f} 比特）"),
    )


def _log2_axis(ax, ticks, label):
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.margins(x=0.1)  # room for the labels of the end points
    ax.set_xlabel(label)


def _pyplot():
    import matplotlib.pyplot as plt

    from lesson_lib.display.plotting import use_chinese_font

    use_chinese_font()
    return plt


def table3_text() -> str:
    """Table 3 rows base, (A) and (B) as a text table, straight from paper.TABLE3."""
    from lesson_lib.display.tables import text_table

    rows = [[r["row"], r["h"], r["d_k"], r["d_v"], f"{r['bleu']:.1f}", f"{r['ppl']:.2f}"] for r in TABLE3]
    return text_table(["行", "h", "d_k", "d_v", "BLEU", "PPL"], rows)
