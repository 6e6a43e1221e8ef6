"""Section 5: the head-count lab. Pure functions; ``lesson_lib.sections.widgets`` only wires a slider to them.

One fixed sentence, one fixed set of parameters (X and the four d_model × d_model matrices), and
only the way the columns are cut into heads changes with h. For each h the lab reports d_k, every
head's attention map, the parameter count (constant), the matmul multiplies (constant) and the
softmax work (growing), plus a one-line reading of what changed.

The weights are seeded random, not trained: the lab shows how cutting works and what it costs.
What trained heads learn is sections 6 and 7.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lesson_lib.kernel import flops
from lesson_lib.kernel.attention import head_width, multi_head_attention
from lesson_lib.kernel.attention_stats import mean_pairwise_js, row_entropy
from lesson_lib.kernel.validation import LessonInputTypeError, check_int
from lesson_lib.paper import BASE_D_MODEL, BASE_HEADS

__all__ = ["SENTENCE", "LabState", "head_choices", "lab_parts", "lab_png", "lab_state", "plot_lab", "summary_html"]

SENTENCE = ["小明", "把", "苹果", "递给了", "小红", "，", "因为", "她", "帮过", "他", "。"]
MAX_HEADS = 64
_SCORE_STD = 2.0  # std of q·k/√d_k for every h: maps neither flat nor one-hot


def head_choices(d_model: int = BASE_D_MODEL, max_heads: int = MAX_HEADS) -> list[int]:
    """The head counts the slider offers: divisors of d_model up to ``max_heads`` (others cannot be cut evenly)."""
    d_model, max_heads = check_int(d_model, "d_model", minimum=1), check_int(max_heads, "max_heads", minimum=1)
    return [h for h in range(1, max_heads + 1) if d_model % h == 0]


@lru_cache(maxsize=4)
def _parameters(d_model: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model))  # (n, d_model) fixed word vectors
    sigma = np.sqrt(_SCORE_STD / d_model)  # entries of q, k then have variance _SCORE_STD
    ws = [rng.standard_normal((d_model, d_model)) * sigma for _ in range(4)]  # W^Q, W^K, W^V, W^O
    return x, ws


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
    diversity_bits: float | None  # mean Jensen–Shannon divergence between heads (None for h = 1)
    reading: str  # one line in Chinese: what changed


def lab_state(h: int, seed: int = 0, d_model: int = BASE_D_MODEL, tokens=None) -> LabState:
    """Everything the lab shows for h heads."""
    tokens = _tokens(SENTENCE if tokens is None else tokens)
    d_k = head_width(d_model, h)
    seed = check_int(seed, "seed", minimum=0)
    x, ws = _parameters(d_model, len(tokens), seed)
    _, weights = multi_head_attention(x, *ws, h)  # (h, n, n)
    count = flops.count(len(tokens), d_model, h)
    entropy = float(row_entropy(weights).mean())
    diversity = mean_pairwise_js(weights) if h > 1 else None
    base = flops.count(len(tokens), d_model, BASE_HEADS)
    return LabState(
        h=h,
        d_k=d_k,
        tokens=tokens,
        weights=weights,
        parameters=flops.parameters(d_model, h),
        matmul_multiplies=count.matmul_total,
        softmax_ops=count.softmax_total,
        mean_entropy_bits=entropy,
        diversity_bits=diversity,
        reading=_reading(h, d_k, count.softmax_total / base.softmax_total, diversity),
    )


def _tokens(tokens) -> list[str]:
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise LessonInputTypeError(
            f"tokens 应是一串词（字符串的列表），例如 ['小明', '把', '苹果']，收到的是 {tokens!r}。"
        )
    tokens = list(tokens)
    check_int(len(tokens), "tokens 的词数", minimum=1)
    return tokens


def _reading(h, d_k, softmax_vs_base, diversity):
    if h == 1:
        return (f"只有 1 个头、d_k = {d_k}：每个词元只有一行权重，所有信息只能按这一种比例混合。"
                "参数和矩阵乘法与 8 头完全相同。")
    spread = f"头与头之间的平均差异（JS 散度）{diversity:.2f} 比特"
    if h == BASE_HEADS:
        return (f"{h} 个头、每头宽度 d_k = {d_k}，正是论文基础模型（base）的设置：{h} 张不同的注意力图，{spread}；"
                "参数与矩阵乘法和 1 个头时完全一样。")
    if d_k <= 8:
        return (f"{h} 个头、每头宽度只剩 d_k = {d_k}：{spread}；softmax 的工作量是 8 头的 {softmax_vs_base:g} 倍，"
                "而每个头用来打分的向量已经很短（论文表 3 里 d_k 过小时 BLEU 下降）。")
    return (f"{h} 个头、每头宽度 d_k = {d_k}：{h} 张不同的注意力图，{spread}；"
            f"参数与矩阵乘法不变，softmax 的工作量是 8 头的 {softmax_vs_base:g} 倍。")


def summary_html(state: LabState) -> str:
    """The lab's numbers as a small HTML block (plain HTML: renders in JupyterLab 4 without scripts)."""
    rows = [
        ("头数 h", f"{state.h}"),
        ("每头宽度", f"d_k = {state.d_k}"),
        ("可学习参数（W^Q, W^K, W^V, W^O）", f"{state.parameters:,}（与 h 无关）"),
        ("矩阵乘法的乘法次数", f"{state.matmul_multiplies:,}（与 h 无关）"),
        (f"{flops.SOFTMAX_WORK}（缩放、exp、除法）",
         f"{state.softmax_ops:,}（= {flops.SOFTMAX_WORK_FORMULA}，随 h 增长）"),
        ("平均每行注意力的熵", f"{state.mean_entropy_bits:.2f} 比特（0 = 只看一个词元）"),
    ]
    from lesson_lib.display.theme import box

    body = "".join(f"<tr><td style='padding:2px 12px 2px 0'>{k}</td><td><b>{v}</b></td></tr>" for k, v in rows)
    return box(f"<table style='color:inherit'>{body}</table><p style='margin:6px 0'>{state.reading}</p>")


def _title(state: LabState) -> str:
    return f"h = {state.h} 个头，每头 d_k = {state.d_k}（随机初始化，未训练）"


def lab_png(state: LabState, zoom: int = 1) -> bytes:
    """PNG bytes for the lab's Image: head ``zoom`` (1-based) large with token labels, every head small."""
    from lesson_lib.display.plotting import render_lab_png

    return render_lab_png(state.weights, state.tokens, zoom=zoom, suptitle=_title(state))


def lab_parts(state: LabState, zoom: int = 1) -> tuple[bytes, bytes]:
    """``lab_png``'s picture as (zoomed head, overview), for a layout that stacks them on narrow screens."""
    from lesson_lib.display.plotting import render_lab_parts

    return render_lab_parts(state.weights, state.tokens, zoom=zoom, suptitle=_title(state))


def plot_lab(state: LabState):
    """The same picture as a matplotlib figure (the reference drawing, for static cells)."""
    from lesson_lib.display.plotting import plot_heads

    return plot_heads(state.weights, state.tokens, suptitle=_title(state))


def comparison_table(heads=(1, 2, 8, 32, 64), seed: int = 0) -> str:
    """The lab's numbers for a few head counts side by side (the same lab_state the slider uses)."""
    from lesson_lib.display.tables import text_table

    rows = []
    for h in heads:
        s = lab_state(h, seed=seed)
        rows.append([h, s.d_k, s.parameters, s.matmul_multiplies, s.softmax_ops, round(s.mean_entropy_bits, 2)])
    return text_table(["h", "d_k", "参数", "矩阵乘法", flops.SOFTMAX_WORK, "平均熵（比特）"], rows)
