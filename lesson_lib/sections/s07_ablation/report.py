"""What §7 and its lab print and draw about Table 3 and the trained toy models: levels (学会 / 大部
分对 …) whose thresholds tests hold far from every value, as training amplifies round-off (accuracy
±0.01 between machines)."""

import json
from pathlib import Path

import numpy as np

from lesson_lib.attention import softmax
from lesson_lib.head_stats import circle_keys, crowded_keys, mean_pairwise_js, row_entropy
from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK, TARGETS
from lesson_lib.models.toy.model import attention_maps
from lesson_lib.models.toy.task import Batch
from lesson_lib.paper import BASE_D_MODEL, TABLE3
from lesson_lib.show.plotting import MIN_FONT_PT, describe, heat_map, use_chinese_font, wrap_title
from lesson_lib.show.tables import text_table

# (lower bound, label), highest first. Chance is 1/V = 0.125.
ACCURACY_LEVELS = ((0.95, "学会"), (0.6, "大部分对"), (0.2, "小部分对"), (0.0, "接近随机水平"))
# bits; uniform over 12 keys is 3.58
ENTROPY_LEVELS = ((2.5, "接近平均分配"), (0.8, "较散"), (0.0, "尖"))
JS_LEVELS = ((0.4, "各看各的"), (0.0, "彼此很像"))  # bits; 1 = disjoint keys
ROLE_NAMES = ("前一个", "后一个", "配对查找")  # TARGETS as a learner reads them
LEAN_GAP = 0.005  # prev vs next: a head "leans" to one side only with this much more weight there
# compare_to_stored's verdict, the last words of each line
AGREE = "一致"
DIFFER = "不一致"
DRAWN_DECIMALS = 1  # the attention maps the lab draws
AGREE_TOLERANCE = 0.03  # mean accuracy; runs on different CPUs differ by ≤ 0.002 (measured)
SAME_RUN = 0.005  # closer than this at every h: the stored run is drawn (the CPUs' spread, 2.5×)
MAIN_ROLE_WEIGHT = 0.6  # a head "mainly serves" a target only with this much of its weight there
# the query length × key length of §7.4's table (4: the earlier example)
CROWDED_SHARPNESS = (4.0, 16.0, 200.0)
# the lab's run, drawn by §7 without training
STORED_SWEEP = Path(__file__).with_name("toy_sweep.json")
STORED_SEEDS = 3
SOURCE_NOTE = "数据：Vaswani 等，2017，表 3（第 9 页），newstest2013 开发集"


def level(value: float, levels) -> str:
    return next(label for bound, label in levels if value >= bound)


def _bounds_text(levels) -> str:
    bounds = [b for b, _ in levels]
    middle = [f"{label} {low}–{high}" for (low, label), high in zip(levels[1:-1], bounds)]
    return "，".join([f"{levels[0][1]} ≥ {bounds[0]}", *middle, f"{levels[-1][1]} < {bounds[-2]}"])


def format_table(results) -> str:
    """Sweep rows as levels per target (the same on every machine), with the thresholds."""
    rows = [[r["h"], r["d_k"], *(level(r["per_target"][t], ACCURACY_LEVELS) for t in TARGETS)]
            for r in results]
    table = text_table(["h", "每头宽度 d_k", *ROLE_NAMES], rows)
    return table.around(after=f"（新序列上的准确率：{_bounds_text(ACCURACY_LEVELS)}；随机水平是 "
                              "1/8 = 0.125）")


def weight_on_targets(maps, batch: Batch) -> np.ndarray:
    """(h, 3): mean attention each head puts on prev, next and match, from ``maps`` (B, h, T, T) on
    ``batch``; positions without a target (prev at 0, next at T−1) are left out."""
    maps = np.asarray(maps, dtype=float)  # (B, h, T, T)
    i = np.arange(maps.shape[-1])
    targets = np.broadcast_arrays((i - 1) % len(i), (i + 1) % len(i), batch.pointers[0])
    keys = np.stack(targets, axis=-1)  # (B, T, 3)
    picked = np.take_along_axis(maps, keys[:, None], axis=-1)  # (B, h, T, 3) query i's weights
    exists = batch.mask[0]  # (B, T, 3)
    return (picked * exists[:, None]).sum(axis=(0, 2)) / exists.sum(axis=(0, 1))


def heads_on_targets(result, batch: Batch, heads=(1, 4)) -> dict:
    """{h: (h, 3) weight_on_targets} of the sweep's first model for each h in ``heads``."""
    return {h: weight_on_targets(attention_maps(result.params[h], h, batch), batch) for h in heads}


def specialisation_text(on_targets: dict) -> str:
    """Per head: mean weight on the three targets (one decimal: the same on every machine) and its
    role; one without says which neighbour gets more (gaps ≈ 0.025–0.03, tests: above LEAN_GAP)."""
    lines = []
    for h, rows in on_targets.items():
        lines.append(f"h = {h}：每个头放在 {' / '.join(ROLE_NAMES)} 位置上的平均权重")
        lines += [f"  头 {i + 1}：{row[0]:.1f} / {row[1]:.1f} / {row[2]:.1f}  → {_role_text(row)}"
                  for i, row in enumerate(rows)]
    return "\n".join(lines)


def _role_text(row) -> str:
    if row.max() >= MAIN_ROLE_WEIGHT:
        return f"主要看「{ROLE_NAMES[int(row.argmax())]}」"
    shared = "".join(f"「{ROLE_NAMES[t]}」" for t in range(3) if row[t] >= 0.25)
    if not shared:
        return "没有主要目标：权重散在别处"
    lean = ""
    if row[0] >= 0.25 and row[1] >= 0.25 and abs(row[0] - row[1]) >= LEAN_GAP:
        lean = f"，「{ROLE_NAMES[0 if row[0] > row[1] else 1]}」略多"
    return f"没有主要目标：{shared}各占一部分{lean}"


def main_roles(on_targets_h) -> list[str]:
    return [ROLE_NAMES[int(row.argmax())] if row.max() >= MAIN_ROLE_WEIGHT else "分散"
            for row in on_targets_h]


def diversity(result, batch: Batch) -> dict:
    """{h: (mean row entropy, mean pairwise JS or None for h = 1)} in bits, every trained h."""
    out = {}
    for h in sorted(result.params):
        maps = attention_maps(result.params[h], h, batch)  # (B, h, T, T)
        out[h] = (float(row_entropy(maps).mean()), mean_pairwise_js(maps) if h > 1 else None)
    return out


def diversity_text(div: dict) -> str:
    """Each h's entropy and JS as levels (the same on every machine), with the thresholds."""
    lines = []
    for name, i, levels in (("行熵", 0, ENTROPY_LEVELS), ("头间 JS", 1, JS_LEVELS)):
        groups = {}  # level -> the h's at it, the level of the smallest h first
        for h, values in sorted(div.items()):
            if values[i] is not None:  # no JS for h = 1
                groups.setdefault(level(values[i], levels), []).append(str(h))
        lines += [f"{name}：" + "；".join(f"h = {'、'.join(hs)} {label}"
                                        for label, hs in groups.items()),
                  f"  （{_bounds_text(levels)} 比特）"]
    return "\n".join(lines)


def monotone_score_text(points: int = 9, sharpness: float = 4.0) -> str:
    """Why a 1-dimensional head can only pick an end: q·k is monotone in k (keys on a line), unlike
    in 2-D (keys on a circle). Which key (from 1) wins the kernel's softmax for each query."""
    keys_1d = np.linspace(-1.0, 1.0, points)  # smallest first; in 1-D the score is just q × k
    lines = [f"一维：查询 q = {q:+.0f} 时，权重最大的是第 {int(softmax(q * keys_1d).argmax()) + 1} "
             "个键" for q in (-sharpness, -1.0, 1.0, sharpness)]
    keys_2d = circle_keys(points)  # (points, 2)
    winners = [int(softmax(sharpness * keys_2d @ keys_2d[j]).argmax()) + 1 for j in range(points)]
    lines.append(f"二维：让查询依次指向第 1…{points} 个键，得分最高的键依次是 {winners}")
    return "\n".join(lines)


def crowded_keys_text(counts=(9, 64), sharpness=CROWDED_SHARPNESS) -> str:
    """``crowded_keys`` per length in ``sharpness`` as a table (2 decimals, far from rounding)."""
    won = {s: crowded_keys(counts, s) for s in sharpness}
    rows = [[f"{s:g}", *(f"{won[s][n]:.2f}" for n in counts)] for s in sharpness]
    table = text_table(["查询长度 × 键长度", *(f"{n} 个键时赢家的权重" for n in counts)], rows)
    return table.around(before="二维的键排在一个圆上，查询指向第 1 个键（它总是赢家）：")


def stored_sweep() -> dict:
    """The stored run (scripts/store_toy_sweep.py): {"results", "seeds", "task", "train"}."""
    return json.loads(STORED_SWEEP.read_text(encoding="utf-8"))


def compare_to_stored(results, stored=None) -> str:
    """Per head count: this run's mean accuracy beside the stored run's, and if they agree."""
    kept = {r["h"]: r["accuracy_mean"] for r in (stored or stored_sweep())["results"]}
    lines = []
    for r in results:
        new = r["accuracy_mean"]
        old = kept[r["h"]]
        verdict = AGREE if abs(new - old) <= AGREE_TOLERANCE else DIFFER
        lines.append(f"h = {r['h']}：三项平均{level(new, ACCURACY_LEVELS)}，"
                     f"与存下的结果（{level(old, ACCURACY_LEVELS)}）{verdict}")
    return "\n".join(lines)


def results_to_draw(results, stored=None) -> list:
    """The rows the lab's figure draws, and a line saying which: the stored run's when this run has
    its head counts and seed count and is within SAME_RUN of it at every h, else this run's (and
    why). Trained accuracies differ in their 3rd–4th decimal between CPUs (BLAS kernels); the stored
    rows are drawn the same on every one."""
    stored = stored or stored_sweep()
    kept = {r["h"]: r for r in stored["results"]}
    if [r["h"] for r in results] != list(kept) or any(
            len(r["accuracy_per_seed"]) != len(kept[r["h"]]["accuracy_per_seed"]) for r in results):
        print("下图画的是你这次的结果：你训练的头数或种子数和存下的不同。")
        return results
    worst = max(abs(r["accuracy_mean"] - kept[r["h"]]["accuracy_mean"]) for r in results)
    if worst > SAME_RUN:
        print(f"下图画的是你这次的结果：有的头数的平均准确率和存下的相差 {worst:.3f}，"
              f"超过 {SAME_RUN}（上面的「{AGREE}」只要相差不超过 {AGREE_TOLERANCE}）。")
        return results
    print(f"下图画的是存下的结果：你这次每个头数的平均准确率和它相差都不超过 {SAME_RUN}。")
    return stored["results"]


def table3_a():
    """Table 3's row (A) with the base model, by h (h varies, d_k = d_v = d_model / h)."""
    return sorted((r for r in TABLE3 if r["row"] in ("base", "A")), key=lambda r: r["h"])


def table3_text() -> str:
    rows = [[r["row"], r["h"], r["d_k"], r["d_v"], f"{r['bleu']:.1f}", f"{r['ppl']:.2f}"]
            for r in TABLE3]
    return text_table(["行", "h", "d_k", "d_v", "BLEU", "PPL"], rows)


def single_head_drop() -> float:
    """BLEU of the best (A)/base setting minus BLEU with one head: the lesson's "0.9", computed."""
    row_a = table3_a()
    return round(max(r["bleu"] for r in row_a) - row_a[0]["bleu"], 1)


def plot_toy_vs_paper(results):
    """Paper's BLEU against h (above), the toy sweep's accuracy against h (below)."""
    import matplotlib.pyplot as plt

    use_chinese_font()
    row_a = table3_a()
    heads = [r["h"] for r in results]
    d_model = DEFAULT_CONFIG.d_model
    chance = 1 / DEFAULT_TASK.V
    fig, (left, right) = plt.subplots(2, 1, figsize=(6.0, 7.4), dpi=100, height_ratios=[1, 1.3])
    for ax, ticks, d in ((left, [r["h"] for r in row_a], BASE_D_MODEL), (right, heads, d_model)):
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
    right.errorbar(heads, mean, yerr=sd, fmt="o-", color="C0", capsize=3, lw=2,
                   label="三个目标的平均")
    for target, name, style in zip(TARGETS, ROLE_NAMES, (":", "--", "-.")):
        right.plot(heads, [r["per_target"][target] for r in results], style, lw=1, alpha=0.8,
                   label=name)
    right.axhline(chance, color="0.5", lw=1, ls="--")
    # above the dashed line, not on it
    right.annotate("随机水平", (heads[-1], chance), textcoords="offset points", xytext=(0, 4),
                   ha="right", va="bottom", fontsize=MIN_FONT_PT + 0.5, color="0.3")
    right.set(ylim=(0, 1.05), ylabel="新序列上的准确率",
              title=f"玩具实验：三项查找，一层注意力，d_model = {d_model}")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    seeds = len(results[0]["accuracy_per_seed"])
    note = f"{SOURCE_NOTE}；下图：每个头数 {seeds} 次训练的平均"
    fig.text(0.99, 0.005, wrap_title(note, 5.8, MIN_FONT_PT), ha="right", va="bottom",
             fontsize=MIN_FONT_PT, color="0.3")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    # accuracies differ in their last digits between machines: alt text and table give levels
    levels = [level(m, ACCURACY_LEVELS) for m in mean]
    toy = "，".join(f"h = {h}：{lv}" for h, lv in zip(heads, levels))
    alt = (f"两张折线图。上图：论文的 BLEU 随头数 h 变化，h = 1 时 {row_a[0]['bleu']}，最高 "
           f"{max(r['bleu'] for r in row_a)}。下图：玩具实验在新序列上的平均准确率，{toy}；"
           f"随机水平是 {chance:g}。")
    table = (["头数 h", "平均", *ROLE_NAMES],
             [[r["h"], lv, *(level(r["per_target"][t], ACCURACY_LEVELS) for t in TARGETS)]
              for r, lv in zip(results, levels)])
    return describe(fig, alt, table)


def plot_one_vs_four(result, sequence, batch, on_targets_h4):
    """One ``sequence`` in the trained h = 1 and h = 4 (heads named by role, JS over ``batch``):
    the rows of the queries that have all three targets, weights to one decimal."""
    maps = np.concatenate([attention_maps(result.params[h], h, sequence)[0] for h in (1, 4)])
    # Trained weights differ in their last digits between CPUs: drawn to one decimal (tests hold
    # them far from 0.x5). Position 1 has no 前一个 and the last no 后一个: training leaves their
    # rows free, and they differ from CPU to CPU (a head picks another key): not drawn.
    drawn = np.round(maps[:, 1:-1], DRAWN_DECIMALS)
    rows = range(2, maps.shape[-1])
    js = mean_pairwise_js(attention_maps(result.params[4], 4, batch))
    names = main_roles(on_targets_h4)
    title = ("同一条序列：第一张图的一个头两头兼顾，后四张的四个头各管一件事"
             f"（h = 4 的头两两之间平均 JS 散度约 {js:.1f} 比特）\n"
             f"每张图：每行左边标着发出注意力的位置（查询，只画前后都有邻居的位置 {rows[0]}–"
             f"{rows[-1]}），每列标着它放权重的位置（键），颜色表示权重（四舍五入到一位小数）")
    # the one head splits each row almost evenly between two neighbours (a table's digits would
    # follow the CPU): no table, and an alt text without digits; role names as §7 prints them.
    alt = ("同一条序列的注意力。第一张：h = 1 的唯一一个头，每行的权重分在几个位置上。"
           f"后四张：h = 4 的四个头，分别{'、'.join(names)}。"
           "每张图的每一行是一个位置发出的注意力（首尾两个位置发出的那两行没有画），颜色越亮权重越大。")
    # 2 wide: rows ≥ 12 px
    return heat_map(drawn, tokens=[str(i) for i in rows],
                    col_tokens=[str(i + 1) for i in range(maps.shape[-1])], cols=2,
                    titles=["h = 1：唯一的头", *(f"h = 4：{n}" for n in names)], suptitle=title,
                    alt=alt, table=False)


def progress_bar(description: str = "训练中"):
    """A progress bar and the ``progress(done, total)`` callback the sweep moves it by."""
    import ipywidgets as w

    bar = w.IntProgress(value=0, min=0, max=1, description=description, bar_style="info")

    def update(done, total):
        bar.max = max(1, total)
        bar.value = done
        finished = total > 0 and done == total  # 0 of 0 is "nothing yet", not 完成
        bar.description = "完成" if finished else description
        bar.bar_style = "success" if finished else "info"

    bar.update = update
    return bar
