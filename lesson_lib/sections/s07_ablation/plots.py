"""§7's figures and Table 3: the paper's row (A) beside the toy sweep, and h = 1 vs h = 4 maps.

Every number about the paper comes from ``paper.TABLE3``.
"""

from __future__ import annotations

import numpy as np

from lesson_lib.paper import TABLE3
from lesson_lib.show.plotting import MIN_FONT_PT, describe, wrap_title

SOURCE_NOTE = "数据：Vaswani et al. 2017，表 3（第 9 页），newstest2013 开发集"


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


def plot_toy_vs_paper(results, d_model: int = 32, chance: float = 0.125):
    """Paper's BLEU against h (left) beside the toy sweep's accuracy against h (right)."""
    plt = _pyplot()
    row_a, _ = table3_series()
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.0, 7.4), dpi=100, height_ratios=[1, 1.3])
    _log2_axis(left, [r["h"] for r in row_a], "头数 h（d_k = 512 / h）")
    left.plot([r["h"] for r in row_a], [r["bleu"] for r in row_a], "o-", color="C0")
    left.set_ylabel("BLEU（越高越好）")
    left.set_title("论文：Transformer base，英→德翻译")
    left.grid(alpha=0.3)

    heads = [r["h"] for r in results]
    _log2_axis(right, heads, f"头数 h（d_k = {d_model} / h）")
    mean = np.array([r["accuracy_mean"] for r in results])
    sds = [r.get("accuracy_sd") for r in results]  # None for a single seed: no error bars
    sd = None if all(v is None for v in sds) else np.array([v or 0.0 for v in sds])
    right.errorbar(heads, mean, yerr=sd, fmt="o-", color="C0", capsize=3, lw=2, label="三个目标的平均")
    for target, label, style in [("prev", "前一个 prev", ":"), ("next", "后一个 next", "--"),
                                 ("match", "配对查找 match", "-.")]:
        right.plot(heads, [r["per_target"][target] for r in results], style, lw=1, alpha=0.8, label=label)
    right.axhline(chance, color="0.5", lw=1, ls="--")
    right.annotate("随机水平", (heads[-1], chance), textcoords="offset points", xytext=(0, 4), ha="right",
                   va="bottom", fontsize=MIN_FONT_PT + 0.5, color="0.3")  # above the dashed line, not on it
    right.set_ylim(0, 1.05)
    right.set_ylabel("新序列上的准确率")
    right.set_title(f"玩具实验：三查找任务，一层注意力，d_model = {d_model}")
    right.grid(alpha=0.3)
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    n_seeds = len(results[0].get("accuracy_per_seed") or [0])
    toy_note = f"；下图：每个头数 {n_seeds} 次训练（种子）的平均" if n_seeds > 1 else "；下图：每个头数训练一次"
    fig.text(0.99, 0.005, wrap_title(SOURCE_NOTE + toy_note, 5.8, MIN_FONT_PT), ha="right",
             va="bottom", fontsize=MIN_FONT_PT, color="0.3")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    # The toy's accuracies differ in their last digits between machines (the lesson prints them only in an
    # unchecked cell): the alt text and table give each head count's level, as §7's checked table does.
    from lesson_lib.sections.s07_ablation.report import ACCURACY_LEVELS, level

    levels = [level(m, ACCURACY_LEVELS) for m in mean]
    alt = (f"两张折线图。上图：论文的 BLEU 随头数 h 变化，h = 1 时 {row_a[0]['bleu']}，最高 "
           f"{max(r['bleu'] for r in row_a)}。下图：玩具实验在新序列上的平均准确率，"
           + "，".join(f"h = {h}：{lv}" for h, lv in zip(heads, levels)) + f"；随机水平是 {chance:g}。")
    table = (["头数 h", "平均", "前一个 prev", "后一个 next", "配对查找 match"],
             [[r["h"], lv, *(level(r["per_target"][t], ACCURACY_LEVELS) for t in ("prev", "next", "match"))]
              for r, lv in zip(results, levels)])
    return describe(fig, alt, table)


def plot_head_maps(map_h1, maps_h4, names, title):
    """One sequence's attention: h = 1's single head (T, T) above h = 4's heads (4, T, T), named by their roles.

    Trained weights (and the title's JS divergence) differ in their last digits between machines: the alt text gives
    the roles §7 prints, not digits."""
    from lesson_lib.show.plotting import plot_heads

    plt = _pyplot()
    tokens = [str(i + 1) for i in range(map_h1.shape[-1])]  # positions counted from 1, as the learner counts
    # The single head above the four: side by side they would be shrunk to half size in a 592 px output.
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.0, 9.6), dpi=100, layout="constrained",
                                      height_ratios=[1, 1.15])
    plot_heads(map_h1, tokens=tokens, titles=["h = 1：唯一的头"], ax=left)
    plot_heads(maps_h4, tokens=tokens, titles=[f"h = 4：{n}" for n in names], ax=right)
    left.set_xlabel("")
    left.set_ylabel("")
    # One note for all five maps (axis labels on the tiled right image land outside the figure).
    note = "每张图：第 i 行是位置 i 发出的注意力（查询），第 j 列是它放在位置 j 上的权重（键）"
    fig.supxlabel(wrap_title(note, 5.8, 9.5), fontsize=9.5)
    fig.suptitle(wrap_title(title, 5.8, 11), fontsize=11)
    return describe(fig, "同一条序列的注意力。上图：h = 1 的唯一一个头，每行的权重分在几个位置上。"
                         f"下图：h = 4 的四个头，分别{'、'.join(names)}。"
                         "每张图第 i 行是位置 i 发出的注意力，颜色越亮权重越大。")


def plot_one_vs_four(result, sequence, batch, on_targets_h4):
    """plot_head_maps of the trained h = 1 and h = 4 on one ``sequence``; the title gives h = 4's mean JS
    divergence between heads over ``batch``."""
    from lesson_lib.head_stats import mean_pairwise_js
    from lesson_lib.models.toy.model import attention_maps
    from lesson_lib.sections.s07_ablation.report import main_roles

    js = mean_pairwise_js(attention_maps(result.params[4], 4, batch))
    title = f"同一条序列：上面一个头两头兼顾，下面四个头各管一件事（h = 4 的头两两之间平均 JS 散度 {js:.2f} 比特）"
    return plot_head_maps(attention_maps(result.params[1], 1, sequence)[0][0],
                          attention_maps(result.params[4], 4, sequence)[0], main_roles(on_targets_h4), title)


def _log2_axis(ax, ticks, label):
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.margins(x=0.1)  # room for the labels of the end points
    ax.set_xlabel(label)


def _pyplot():
    import matplotlib.pyplot as plt

    from lesson_lib.show.plotting import use_chinese_font

    use_chinese_font()
    return plt


def table3_text() -> str:
    """Table 3 rows base, (A) and (B) as a text table, straight from paper.TABLE3."""
    from lesson_lib.show.tables import text_table

    rows = [[r["row"], r["h"], r["d_k"], r["d_v"], f"{r['bleu']:.1f}", f"{r['ppl']:.2f}"] for r in TABLE3]
    return text_table(["行", "h", "d_k", "d_v", "BLEU", "PPL"], rows)
