"""§3's code exercises: split_heads and the per-head loop. Per exercise a spec, a reference
solution, and a verdict whose message names the mistake; the engine (``practice.exercises``) runs
them in the worker."""

import math

import numpy as np

from lesson_lib import paper
from lesson_lib.attention import merge_heads, multi_head_attention, softmax, split_heads
from lesson_lib.practice.checkers import split_heads_shape_mistake
from lesson_lib.practice.exercises import Exercise, Stop, as_array, values

# (n, d_model, h) of each check's cases; the first split is the base model's
SPLIT_CASES = ((12, paper.BASE_D_MODEL, paper.BASE_HEADS), (5, 6, 3), (4, 8, 1), (3, 6, 6),
               (7, 12, 4))
MHA_CASES = ((5, 8, 2), (4, 12, 3), (6, 8, 1), (3, 16, 8), (12, 64, 8))

# --- solutions (shown by reflection)
def split_heads_solution(x, h):
    """(n, d_model) → (h, n, d_k)：特征的第 i 块连续的列，就是第 i 个头。"""
    n, d_model = x.shape
    d_k = d_model // h
    x = x.reshape(n, h, d_k)  # (n, h, d_k)  第 [i·d_k, (i+1)·d_k) 列 → 头 i
    return x.transpose(1, 0, 2)  # (h, n, d_k)  头的轴换到最前：每个头是一个 (n, d_k) 矩阵


def multi_head_attention_loop_solution(x, w_q, w_k, w_v, w_o, h):
    """论文的定义，一个头一个头地算：head_i = Attention(X W_i^Q, X W_i^K, X W_i^V)，拼接后乘 W^O。
    """
    d_model = x.shape[1]
    d_k = d_model // h
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)  # 头 i 只用每个投影矩阵的第 i 块列
        q = x @ w_q[:, cols]  # (n, d_k)  头 i 的查询
        k = x @ w_k[:, cols]  # (n, d_k)  头 i 的键
        v = x @ w_v[:, cols]  # (n, d_k)  头 i 的值
        scores = q @ k.T / np.sqrt(d_k)  # (n, n)  除以 √d_k：打分的方差不随 d_k 变大
        weights = softmax(scores, axis=-1)  # (n, n)  沿最后一轴：每一行（一个查询）和为 1
        heads.append(weights @ v)  # (n, d_k)  头 i 的输出：值的加权平均
    concat = np.concatenate(heads, axis=-1)  # (n, h·d_k) = (n, d_model)  按头的顺序拼接
    return concat @ w_o  # (n, d_model)  W^O 把各个头的结果混在一起


# --- the verdicts: return if right, else Stop
def _split_heads_verdict(case, value, x, h) -> None:
    got = as_array(case, value)
    (n, d) = x.shape
    want = split_heads(x, h)
    d_k = d // h
    if got.shape != want.shape:
        raise Stop("wrong", f"{case}：形状应为 {want.shape}，你的是 {got.shape}："
                   + split_heads_shape_mistake(got.shape, n, h, d_k),
                   ("transpose" if got.shape == (n, h, d_k) else "shape",))
    values(case, got, want, "，而输入都是有限的数。", (
        ("reshape_without_transpose", x.reshape(h, n, d_k),
         f"形状对了，但内容不对：直接 reshape 成 ({h}, {n}, {d_k}) "
         "会把好几个词元的特征塞进同一个头。"
         f"先 reshape 成 (n, h, d_k) = ({n}, {h}, {d_k})，再交换前两个轴（transpose）。"),
        ("strided", x.reshape(n, d_k, h).transpose(2, 0, 1),
         f"第 i 个头应当拿连续的一块列 [i·d_k, (i+1)·d_k)，而不是每隔 {h} 列取一列：reshape "
         "的顺序是 (n, h, d_k)。"),
    ), "head i 应是 x[:, i·d_k:(i+1)·d_k]。")


def _mha_mistakes(x, w_q, w_k, w_v, w_o, h):
    """(mistake id, the output it gives, computed with the kernel, and the advice)."""
    d = x.shape[1]
    d_k = d // h
    sqrt = math.sqrt(d_k)
    q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
    scores = q @ np.swapaxes(k, -1, -2) / sqrt
    perm = np.concatenate([np.arange(i, d, h) for i in range(h)])
    yield ("no_scale", multi_head_attention(x, w_q * sqrt, w_k, w_v, w_o, h)[0],
           "忘了除以 √d_k：打分应为 Q_i K_iᵀ / √d_k。")
    if h > 1:
        yield ("scale_d_model",
               multi_head_attention(x, w_q * sqrt / math.sqrt(d), w_k, w_v, w_o, h)[0],
               f"缩放用的是 √d_model = √{d}；每个头应当除以自己的 √d_k = √{d_k}。")
        yield ("one_head", multi_head_attention(x, w_q, w_k, w_v, w_o, 1)[0],
               f"结果和单头（h = 1）一样：每个头只应使用 W^Q、W^K、W^V 的第 i 块 {d_k} 列，"
               "分别做注意力。")
        yield ("strided",
               multi_head_attention(x, w_q[:, perm], w_k[:, perm], w_v[:, perm], w_o, h)[0],
               f"第 i 个头应当取连续的列块 [i·d_k, (i+1)·d_k)，而不是每隔 {h} 列取一列。")
    yield ("no_w_o", multi_head_attention(x, w_q, w_k, w_v, np.eye(d), h)[0],
           "忘了最后乘 W^O：Concat 之后还要乘输出投影矩阵。")
    yield ("softmax_axis", merge_heads(softmax(scores, axis=-2) @ v) @ w_o,
           "softmax 的方向不对：应当沿最后一个轴（对每个查询的所有键）归一化，"
           "softmax(scores, axis=-1)。")
    yield ("no_softmax", merge_heads(scores @ v) @ w_o,
           "忘了 softmax：分数要先变成每行和为 1 的权重，再乘 V。")


def _mha_verdict(case, value, *args) -> None:  # args: x, w_q, w_k, w_v, w_o, h
    if type(value) is tuple and len(value) == 2:
        value = value[0]  # (output, weights), the kernel's convention
    got = as_array(case, value)
    (n, d) = args[0].shape
    h = args[-1]
    want = multi_head_attention(*args)[0]
    if got.shape != want.shape:
        mistake, why = {
            (h, n, d // h): ("no_concat", f"这是 {h} 个头各自的输出：还要沿特征维度拼接（Concat）"
                                          f"成 ({n}, {d})，再乘 W^O。"),
            (n, d // h): ("one_head_only",
                          f"只返回了一个头的结果：要把 {h} 个头都算出来再拼接。"),
        }.get(got.shape, ("shape", "输出应当和输入 x 一样是 (n, d_model)。"))
        raise Stop("wrong", f"{case}：形状应为 {want.shape}，你的是 {got.shape}。{why}", (mistake,))
    advice = "逐项检查：列块切分、除以 √d_k、softmax 沿最后一轴、按头的顺序拼接、最后乘 W^O。"
    nonfinite = "：检查 softmax 是否先减去了每行的最大值。"
    values(case, got, want, nonfinite, _mha_mistakes(*args), advice)


# The named mistakes these verdicts give, in Chinese: the class report lists them by name.
MISTAKES = {
    "transpose": "忘了 transpose（停在 (n, h, d_k)）",
    "reshape_without_transpose": "直接 reshape 成 (h, n, d_k)，没有转置",
    "strided": "每隔 h 列取一列，而不是连续的 d_k 列",
    "no_scale": "忘了除以 √d_k",
    "scale_d_model": "除以 √d_model，而不是 √d_k",
    "one_head": "只算了一个头",
    "one_head_only": "只返回了一个头的结果",
    "no_concat": "没有把各头拼接起来",
    "no_w_o": "漏了输出投影 W^O",
    "softmax_axis": "softmax 沿错了轴",
    "no_softmax": "忘了 softmax",
}


def _mha_inputs(rng, n, d, h):
    x = rng.standard_normal((n, d))
    weights = [rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(4)]
    return (x, *weights, h)


SPLIT_HEADS = Exercise(
    name="split_heads",
    spec="实现 my_split_heads(x, h)：x 是投影后的 Q = X W^Q，形状 (n, d_model)，h 整除 d_model。"
         "返回形状 (h, n, d_k) 的数组，d_k = d_model / h；"
         "第 i 个头是 x 的第 i 块连续的列 x[:, i·d_k:(i+1)·d_k]。"
         "只用 numpy 的 reshape 和 transpose。",
    solution=split_heads_solution,
    cases=SPLIT_CASES,
    inputs=lambda rng, n, d, h: (rng.standard_normal((n, d)), h),
    verdict=_split_heads_verdict,
    hint="提示：先 x.reshape(n, h, d_k)，再交换前两个轴。",
    passed=f"全部通过！{len(SPLIT_CASES)} 个例子都和 lesson_lib 的 split_heads 一致"
           f"（包括基础模型：(12, {paper.BASE_D_MODEL}) → ({paper.BASE_HEADS}, 12, "
           f"{paper.BASE_D_MODEL // paper.BASE_HEADS})）。",
)

MULTI_HEAD_ATTENTION_LOOP = Exercise(
    name="multi_head_attention_loop",
    spec="实现 my_multi_head_attention_loop(x, w_q, w_k, w_v, w_o, h)："
         "x 是 (n, d_model)，四个权重都是 (d_model, d_model)。"
         "用 for 循环逐个头计算：head_i = softmax(Q_i K_iᵀ / √d_k) V_i，"
         "其中 Q_i = x W^Q 的第 i 块 d_k 列（K_i、V_i 同理）；"
         "把 h 个头沿特征维度拼接成 (n, d_model)，再乘 w_o，返回 (n, d_model) 的输出。"
         "可以使用 softmax(scores, axis=-1)。",
    solution=multi_head_attention_loop_solution,
    cases=MHA_CASES,
    inputs=_mha_inputs,
    verdict=_mha_verdict,
    hint="提示：head_i 用 W^Q[:, i·d_k:(i+1)·d_k] 等列块；可以调用 softmax(scores, axis=-1)。",
    passed=f"全部通过！{len(MHA_CASES)} 个例子都和 lesson_lib 的 multi_head_attention 一致："
           "逐头循环和一次性的批量计算，算的是同一个公式。",
)

EXERCISES = {e.name: e for e in (SPLIT_HEADS, MULTI_HEAD_ATTENTION_LOOP)}
