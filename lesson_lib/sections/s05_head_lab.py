"""§5, the head-count lab: one sentence, one seeded set of parameters; only how the columns are cut
changes with h. The weights are random, not trained: the lab shows how cutting works and what it
costs (trained heads: §6, §7)."""

from dataclasses import dataclass
from functools import cache

import numpy as np

from lesson_lib import costs
from lesson_lib.attention import multi_head_attention
from lesson_lib.checks import check_int
from lesson_lib.head_stats import mean_pairwise_js, row_entropy
from lesson_lib.paper import BASE_D_MODEL, BASE_HEADS
from lesson_lib.runtime.blas import one_blas_thread
from lesson_lib.show.controls import linked, screen_reader_only, slider
from lesson_lib.show.plotting import folded_table, heat_map
from lesson_lib.show.tables import text_table
from lesson_lib.show.theme import box

SENTENCE = ["小明", "把", "苹果", "递给了", "小红", "，", "因为", "她", "帮过", "他", "。"]
# the slider: h ≤ 64 that cut d_model evenly
HEAD_CHOICES = [h for h in range(1, 65) if BASE_D_MODEL % h == 0]
_SCORE_STD = 2.0  # std of q·k/√d_k for every h: maps neither flat nor one-hot
# The lab's two pictures side by side fit a 592 px output (1024 × 768, file browser open) and keep
# one size for every h and zoomed head: the page does not jump while the slider moves.
ZOOM_CELL_PX = 18  # the zoomed head's cells: one 14 px token label per row
# px of both pictures, every h (the zoomed head, its one-line title and stacked column labels)
LAB_HEIGHT = 296
OVERVIEW_WIDTH = 252  # px: the zoomed head is 320 px wide; 320 + 8 + 252 = 580 ≤ 592


@cache
def _parameters():
    """The lab's one seeded X and W^Q, W^K, W^V, W^O, whatever h cuts them into."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((len(SENTENCE), BASE_D_MODEL))  # (n, d_model) fixed word vectors
    sigma = np.sqrt(_SCORE_STD / BASE_D_MODEL)  # entries of q, k then have variance _SCORE_STD
    return x, [rng.standard_normal((BASE_D_MODEL, BASE_D_MODEL)) * sigma for _ in range(4)]


@dataclass(frozen=True)
class LabState:
    h: int
    d_k: int
    tokens: list[str]
    weights: np.ndarray  # (h, n, n)
    parameters: int  # 4·d_model², every h
    matmul_multiplies: int  # 4·n·d² + 2·n²·d, every h
    softmax_ops: int  # 3·h·n²: scaling, exps, divisions
    mean_entropy_bits: float  # how spread out an average attention row is
    reading: str  # one line in Chinese: what changed (h > 1: with the heads' mean JS divergence)


def lab_state(h: int) -> LabState:
    """Everything the lab shows for h heads (multi_head_attention checks h: once, at its door)."""
    x, ws = _parameters()
    _, weights = multi_head_attention(x, *ws, h)  # (h, n, n)
    h = len(weights)  # h as the int the kernel checked
    count = costs.count(len(SENTENCE), BASE_D_MODEL, h)
    base = costs.count(len(SENTENCE), BASE_D_MODEL, BASE_HEADS)
    diversity = mean_pairwise_js(weights) if h > 1 else None
    reading = _reading(h, count.d_k, count.softmax_total / base.softmax_total, diversity)
    parameters = costs.parameters(BASE_D_MODEL, h)
    entropy = float(row_entropy(weights).mean())
    return LabState(h, count.d_k, SENTENCE, weights, parameters, count.matmul_total,
                    count.softmax_total, entropy, reading)


def _reading(h, d_k, softmax_vs_base, diversity):
    if h == 1:
        return (f"只有 1 个头、d_k = {d_k}：每个词元只有一行权重，所有信息只能按这一种比例混合。"
                "参数和矩阵乘法与 8 头完全相同。")
    spread = f"头与头之间的平均差异（JS 散度）{diversity:.2f} 比特"
    if h == BASE_HEADS:
        return (f"{h} 个头、每头宽度 d_k = {d_k}，正是论文基础模型（base）的设置："
                f"{h} 张不同的注意力图，{spread}；参数与矩阵乘法和 1 个头时完全一样。")
    if d_k <= 8:
        return (f"{h} 个头、每头宽度只剩 d_k = {d_k}：{spread}；"
                f"softmax 工作量是 8 头的 {softmax_vs_base:g} 倍，"
                "而每个头用来打分的向量已经很短（见第 7 节的表 3）。")
    return (f"{h} 个头、每头宽度 d_k = {d_k}：{h} 张不同的注意力图，{spread}；"
            f"参数与矩阵乘法不变，softmax 工作量是 8 头的 {softmax_vs_base:g} 倍。")


def summary_html(state: LabState) -> str:
    rows = [("头数 h", f"{state.h}"), ("每头宽度", f"d_k = {state.d_k}"),
            ("可学习参数（W^Q, W^K, W^V, W^O）", f"{state.parameters:,}（与 h 无关）"),
            ("矩阵乘法的乘法次数", f"{state.matmul_multiplies:,}（与 h 无关）"),
            (f"{costs.SOFTMAX_WORK}（缩放、exp、除法）",
             f"{state.softmax_ops:,}（= {costs.SOFTMAX_WORK_FORMULA}，随 h 增长）"),
            ("平均每行注意力的熵", f"{state.mean_entropy_bits:.2f} 比特（0 = 只看一个词元）")]
    body = "".join(f"<tr><td style='padding:2px 12px 2px 0'>{k}</td><td><b>{v}</b></td></tr>"
                   for k, v in rows)
    return box(f"<table style='color:inherit'>{body}</table>"
               f"<p style='margin:6px 0'>{state.reading}</p>")


def overview_alt(state: LabState, zoom: int) -> str:
    """What the overview of all heads shows: how many, which is framed, how concentrated."""
    if state.h == 1:
        return (f"h = 1：只有一个头（d_k = {state.d_k}），就是左边放大的那张图；"
                "每个词元只有这一行权重。")
    c = state.weights.max(axis=-1).mean(axis=-1)  # (h,) mean largest row weight
    most = int(np.argmax(c))
    least = int(np.argmin(c))
    return (f"全部 {state.h} 个头的小图（每头 d_k = {state.d_k}），红框是放大的头 {zoom}。"
            f"每个头各行最大权重的平均：最集中的是头 {most + 1}（{c[most]:.2f}），"
            f"最分散的是头 {least + 1}（{c[least]:.2f}），{state.h} 个头平均 {c.mean():.2f}"
            f"（1 = 只看一个词元，{1 / len(state.tokens):.2f} = 平均分给每个词元）。")


def lab_pictures(state: LabState, zoom: int = 1) -> tuple[str, str, str]:
    """The lab's HTML: head ``zoom`` (1-based) large with its token labels, every head small with
    the zoomed one framed, alt text from the numbers, the zoomed head's weights folded under."""
    zoom = check_int(zoom, f"zoom（放大第几个头；h = {state.h} 时只有 {state.h} 个）", minimum=1,
                     maximum=state.h)
    w = state.weights[zoom - 1]  # (n, n)
    tokens = state.tokens
    tops = "；".join(f"「{tokens[i]}」最看重「{tokens[k]}」（{w[i, k]:.2f}）"
                    for i, k in enumerate(w.argmax(1)))
    alt = (f"实验台放大的头 {zoom}（共 {state.h} 个头，每头 d_k = {state.d_k}，随机初始化、未训练）"
           f"的注意力热图，行 = 发出关注的词元，列 = 被关注的词元，颜色越亮权重越大。"
           f"每行最大的权重：{tops}。")
    zoomed = heat_map(w, tokens, cell_px=ZOOM_CELL_PX,
                      suptitle=f"头 {zoom}（放大）：每行是一个词元分出的权重",
                      alt=alt, table=False, height=LAB_HEIGHT)
    title = f"全部 {state.h} 个头" + (f"（红框 = 头 {zoom}）" if state.h > 1 else "")
    note = ("h = 1：只有左边这一个头，每个词元只有这一行权重。把滑块拖到 2 或更多，"
            "这里会排出每个头的小图。")
    overview = heat_map(state.weights, box=(OVERVIEW_WIDTH, LAB_HEIGHT), highlight_head=zoom,
                        alt=overview_alt(state, zoom), suptitle=title, note=note)
    table = (["行（发出关注的词元）", *tokens],
             [[t, *(f"{v:.2f}" for v in row)] for t, row in zip(tokens, w)])
    numbers = folded_table(table, f"图中的数字（表格）：放大的头 {zoom} 的全部权重")
    return zoomed, overview, numbers


def comparison_table(heads=(1, 2, 8, 32, 64)) -> str:
    states = [lab_state(h) for h in heads]
    rows = [[s.h, s.d_k, s.parameters, s.matmul_multiplies, s.softmax_ops,
             round(s.mean_entropy_bits, 2)] for s in states]
    return text_table(["h", "d_k", "参数", "矩阵乘法", costs.SOFTMAX_WORK, "平均熵（比特）"], rows)


def lab_widget():
    """A slider over the divisors of d_model and a head to enlarge."""
    import ipywidgets as w

    heads = slider("头数 h", BASE_HEADS, options=[(str(h), h) for h in HEAD_CHOICES])
    zoom = slider("放大第几个头", 1, min=1, max=BASE_HEADS)

    def show(summary, pictures):
        zoom.max = heads.value  # fewer heads: the enlarged head moves down to the last one
        zoom.disabled = heads.value == 1
        with one_blas_thread():
            state = lab_state(heads.value)
        # One live summary: h, d_k and what the pictures show (their alt text, for a screen reader)
        alt = screen_reader_only(overview_alt(state, zoom.value))
        summary.value = summary_html(state) + alt
        for picture, html in zip((*pictures, numbers), lab_pictures(state, zoom=zoom.value)):
            # an unchanged picture is not sent again (traitlets: no change, no message)
            picture.value = html

    # the numbers folded under both pictures; the summary keeps its longest reading's height
    numbers = w.HTML(layout=w.Layout(margin="0"))
    box = linked({"slider": heads, "zoom": zoom}, show, pictures=2)
    # the longest reading (h = 64) in a 592 px output
    box.controls["summary"].layout.min_height = "250px"
    box.children = (*box.children, numbers)
    box.controls["numbers"] = numbers
    return box
