"""§7's figures and Table 3: the paper's row (A) beside the toy sweep, and h = 1 vs h = 4 maps.

Every number about the paper comes from ``paper.TABLE3``.
"""

from __future__ import annotations

import numpy as np

from lesson_lib.paper import TABLE3
from lesson_lib.show.plotting import MIN_FONT_PT, describe, heads_description, sentence, wrap_title

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


def plot_head_maps(maps_h1, maps_h4, tokens=None, head_names=None, suptitle=None):
    """One sequence's attention: the single head of h = 1 first, then the four heads of h = 4, as one tiled map."""
    from lesson_lib.show.plotting import heat_map

    maps_h1, maps_h4 = np.asarray(maps_h1), np.asarray(maps_h4)
    if maps_h1.ndim == 3:
        maps_h1 = maps_h1[0]  # (T, T) the one head
    if maps_h4.ndim != 3:
        raise ValueError(f"右边需要多个头的权重 (h, n, n)，收到的形状是 {maps_h4.shape}。")
    if tokens is None:
        tokens = [str(i + 1) for i in range(maps_h4.shape[-1])]  # positions counted from 1, as the learner counts
    names = head_names or [f"头 {i + 1}" for i in range(len(maps_h4))]
    note = "每张图：第 i 行是位置 i 发出的注意力（查询），第 j 列是它放在位置 j 上的权重（键）"
    alt1, table1 = heads_description(maps_h1, tokens, tokens, ["h = 1"])
    alt4, table4 = heads_description(maps_h4, tokens, tokens, [f"h = 4 · {n}" for n in names])
    heads_col = [["h = 1", *row] for row in table1[1]] + table4[1]
    return heat_map(np.concatenate([maps_h1[None], maps_h4]), tokens=tokens, cols=2,  # 2 wide: rows ≥ 12 px
                    titles=["h = 1：唯一的头", *(f"h = 4：{n}" for n in names)],
                    suptitle=f"{suptitle}\n{note}" if suptitle else note,
                    alt=(sentence(suptitle) if suptitle else "") + alt1 + alt4, table=(table4[0], heads_col))


def plot_one_vs_four(result, sequence, batch, on_targets_h4):
    """plot_head_maps of the trained h = 1 and h = 4 on one ``sequence``; the title gives h = 4's mean JS
    divergence between heads over ``batch``."""
    from lesson_lib.head_stats import mean_pairwise_js
    from lesson_lib.models.toy.model import attention_maps
    from lesson_lib.sections.s07_ablation.report import main_roles

    map_h1 = attention_maps(result.params[1], 1, sequence)[0]  # (1, T, T)
    map_h4 = attention_maps(result.params[4], 4, sequence)[0]  # (4, T, T)
    js = mean_pairwise_js(attention_maps(result.params[4], 4, batch))
    names = main_roles(on_targets_h4)
    fig = plot_head_maps(
        map_h1, map_h4, head_names=names,
        suptitle=(f"同一条序列：第一张图的一个头两头兼顾，后四张的四个头各管一件事"
                  f"（h = 4 的头两两之间平均 JS 散度 {js:.2f} 比特）"),
    )
    # Trained weights (and the title's JS divergence) differ in their last digits between machines, and the one
    # head splits each row almost evenly between two neighbours: the alt text says what the picture shows without
    # digits; the role names are those §7's checked output prints.
    return describe(fig, "同一条序列的注意力。第一张：h = 1 的唯一一个头，每行的权重分在几个位置上。"
                         "后四张：h = 4 的四个头，"
                         f"分别{'、'.join(names)}。每张图第 i 行是位置 i 发出的注意力，颜色越亮权重越大。")


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
