"""§7's figures and Table 3: the paper's row (A) beside the toy sweep, and h = 1 vs h = 4 maps.

Every number about the paper comes from ``paper.TABLE3``.
"""

from __future__ import annotations

import numpy as np

from lesson_lib.head_stats import mean_pairwise_js
from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK
from lesson_lib.models.toy.model import attention_maps
from lesson_lib.paper import TABLE3
from lesson_lib.sections.s07_ablation.report import ACCURACY_LEVELS, level, main_roles
from lesson_lib.show.plotting import MIN_FONT_PT, describe, wrap_title
from lesson_lib.show.tables import text_table

SOURCE_NOTE = "数据：Vaswani et al. 2017，表 3（第 9 页），newstest2013 开发集"


def table3_a():
    """Table 3's row (A) with the base model, by h (h varies, d_k = d_v = 512 / h)."""
    return sorted((r for r in TABLE3 if r["row"] in ("base", "A")), key=lambda r: r["h"])


def table3_text() -> str:
    """Table 3 rows base, (A) and (B) as a text table, straight from paper.TABLE3."""
    rows = [[r["row"], r["h"], r["d_k"], r["d_v"], f"{r['bleu']:.1f}", f"{r['ppl']:.2f}"] for r in TABLE3]
    return text_table(["行", "h", "d_k", "d_v", "BLEU", "PPL"], rows)


def single_head_drop() -> float:
    """BLEU of the best (A)/base setting minus BLEU with one head: the lesson's "0.9", computed."""
    row_a = table3_a()
    return round(max(r["bleu"] for r in row_a) - row_a[0]["bleu"], 1)


def plot_toy_vs_paper(results):
    """Paper's BLEU against h (above) beside the toy sweep's accuracy against h (below)."""
    import matplotlib.pyplot as plt

    from lesson_lib.show.plotting import use_chinese_font

    use_chinese_font()
    row_a, heads, d_model, chance = table3_a(), [r["h"] for r in results], DEFAULT_CONFIG.d_model, 1 / DEFAULT_TASK.V
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.0, 7.4), dpi=100, height_ratios=[1, 1.3])
    for ax, ticks, d in ((left, [r["h"] for r in row_a], 512), (right, heads, d_model)):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.margins(x=0.1)  # room for the labels of the end points
        ax.set_xlabel(f"头数 h（d_k = {d} / h）")
        ax.grid(alpha=0.3)
    left.plot([r["h"] for r in row_a], [r["bleu"] for r in row_a], "o-", color="C0")
    left.set(ylabel="BLEU（越高越好）", title="论文：Transformer base，英→德翻译")

    mean = np.array([r["accuracy_mean"] for r in results])
    sd = [r["accuracy_sd"] or 0.0 for r in results]  # None for a single seed
    right.errorbar(heads, mean, yerr=sd, fmt="o-", color="C0", capsize=3, lw=2, label="三个目标的平均")
    for target, label, style in [("prev", "前一个 prev", ":"), ("next", "后一个 next", "--"),
                                 ("match", "配对查找 match", "-.")]:
        right.plot(heads, [r["per_target"][target] for r in results], style, lw=1, alpha=0.8, label=label)
    right.axhline(chance, color="0.5", lw=1, ls="--")
    right.annotate("随机水平", (heads[-1], chance), textcoords="offset points", xytext=(0, 4), ha="right",
                   va="bottom", fontsize=MIN_FONT_PT + 0.5, color="0.3")  # above the dashed line, not on it
    right.set(ylim=(0, 1.05), ylabel="新序列上的准确率", title=f"玩具实验：三查找任务，一层注意力，d_model = {d_model}")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    note = f"{SOURCE_NOTE}；下图：每个头数 {len(results[0]['accuracy_per_seed'])} 次训练（种子）的平均"
    fig.text(0.99, 0.005, wrap_title(note, 5.8, MIN_FONT_PT), ha="right", va="bottom", fontsize=MIN_FONT_PT,
             color="0.3")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    # The toy's accuracies differ in their last digits between machines (the lesson prints them only in an
    # unchecked cell): the alt text and table give each head count's level, as §7's checked table does.
    levels = [level(m, ACCURACY_LEVELS) for m in mean]
    alt = (f"两张折线图。上图：论文的 BLEU 随头数 h 变化，h = 1 时 {row_a[0]['bleu']}，最高 "
           f"{max(r['bleu'] for r in row_a)}。下图：玩具实验在新序列上的平均准确率，"
           + "，".join(f"h = {h}：{lv}" for h, lv in zip(heads, levels)) + f"；随机水平是 {chance:g}。")
    table = (["头数 h", "平均", "前一个 prev", "后一个 next", "配对查找 match"],
             [[r["h"], lv, *(level(r["per_target"][t], ACCURACY_LEVELS) for t in ("prev", "next", "match"))]
              for r, lv in zip(results, levels)])
    return describe(fig, alt, table)


def plot_one_vs_four(result, sequence, batch, on_targets_h4):
    """One ``sequence``'s attention in the trained h = 1 (its one head) and h = 4 (its four, named by their roles);
    the title gives h = 4's mean JS divergence between heads over ``batch``."""
    from lesson_lib.show.plotting import heat_map

    maps = np.concatenate([attention_maps(result.params[h], h, sequence)[0] for h in (1, 4)])  # (1 + 4, T, T)
    js = mean_pairwise_js(attention_maps(result.params[4], 4, batch))
    names = main_roles(on_targets_h4)
    title = ("同一条序列：第一张图的一个头两头兼顾，后四张的四个头各管一件事"
             f"（h = 4 的头两两之间平均 JS 散度 {js:.2f} 比特）\n"
             "每张图：第 i 行是位置 i 发出的注意力（查询），第 j 列是它放在位置 j 上的权重（键）")
    # Trained weights (and the title's JS divergence) differ in their last digits between machines, and the one
    # head splits each row almost evenly between two neighbours: no table, and an alt text without digits; the
    # role names are those §7's checked output prints.
    alt = ("同一条序列的注意力。第一张：h = 1 的唯一一个头，每行的权重分在几个位置上。后四张：h = 4 的四个头，"
           f"分别{'、'.join(names)}。每张图第 i 行是位置 i 发出的注意力，颜色越亮权重越大。")
    return heat_map(maps, tokens=[str(i + 1) for i in range(maps.shape[-1])], cols=2,  # 2 wide: rows ≥ 12 px
                    titles=["h = 1：唯一的头", *(f"h = 4：{n}" for n in names)], suptitle=title, alt=alt, table=False)
