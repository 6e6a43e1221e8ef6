"""§4's code exercise: counting the multiplies of one self-attention layer. A spec, a reference
solution, and a verdict whose message names the usual slip; the engine (``practice.exercises``)
runs it in the worker."""

import math

import numpy as np

from lesson_lib import paper
from lesson_lib.costs import count
from lesson_lib.practice.checkers import fmt_number
from lesson_lib.practice.exercises import Exercise, Stop

# (n, d_model, h) of each check's cases; the first two are the base model's, h and 2h
COUNT_CASES = (
    (50, paper.BASE_D_MODEL, paper.BASE_HEADS),
    (50, paper.BASE_D_MODEL, 2 * paper.BASE_HEADS),
    (10, 64, 1),
    (7, 12, 3),
    (1, 8, 8),
)


def count_multiplies_solution(n, d_model, h):
    """一层自注意力里矩阵乘法的乘法次数（softmax 不算）。(a × b) 乘 (b × c) 要 a·b·c 次。"""
    d_k = d_model // h
    projections = 3 * n * d_model * d_model  # X W^Q、X W^K、X W^V：三次 (n, d) @ (d, d)
    scores = h * (n * n * d_k)  # 每个头 Q_i K_iᵀ：(n, d_k) @ (d_k, n)
    weighted = h * (n * n * d_k)  # 每个头 weights_i V_i：(n, n) @ (n, d_k)
    output = n * d_model * d_model  # 输出投影 Concat(head_i) W^O：(n, d) @ (d, d)
    return projections + scores + weighted + output  # 与 h 无关：h 个窄头合起来和一个宽头一样多


def _slips(c) -> dict:
    """What the usual slips give: {value: (mistake id, hint)}."""
    one_head = c.matmul_total - c.scores - c.weights_v + (c.scores + c.weights_v) // c.h
    return {
        c.scores + c.weights_v: ("no_projections",
                                 "只算了 QKᵀ 与 weights × V，漏了 W^Q、W^K、W^V、W^O 四个投影。"),
        c.qkv_projections + c.output_projection: (
            "no_scores", "只算了四个投影，漏了每个头的 QKᵀ 与 weights × V。"),
        c.matmul_total - c.output_projection: ("no_w_o", "漏了输出投影：Concat(head_i) 乘 W^O。"),
        c.matmul_total - c.qkv_projections: ("no_qkv", "漏了 X 乘 W^Q、W^K、W^V 三个投影。"),
        c.matmul_total - c.weights_v: ("no_weights_v", "漏了每个头的 weights × V。"),
        c.matmul_total - c.scores: ("no_qk", "漏了每个头的打分 QKᵀ。"),
        c.scores: ("scores_only", "只算了打分 QKᵀ 这一步。"),
        c.matmul_total + c.softmax_total: (
            "softmax_counted", "多算了 softmax 的 exp、除法和缩放：本题只数矩阵乘法。"),
        c.matmul_total * c.h: (
            "times_h", "多乘了一个 h：每个头只有 d_k = d_model / h 宽，h 个头合起来和单头一样。"),
        one_head: ("one_head", "QKᵀ 与 weights × V 只算了一个头：要乘以 h。"),
    }


def _shown(value) -> str:
    if isinstance(value, int) and value.bit_length() >= 64:  # str() of a huge int is refused
        return f"一个约 {int(value.bit_length() * 0.30103) + 1} 位的整数"
    return fmt_number(repr(value))  # every digit: 54,988,800.5, never 5.49888e+07


def _count_verdict(case, value, n, d, h) -> None:
    # an integer, or a float that is one (50.0); True, NaN and inf count nothing
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = int(value)
    elif isinstance(value, (float, np.floating)) and math.isfinite(value):
        value = int(value) if value == int(value) else float(value)
    else:
        short = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
        raise Stop("wrong", f"{case}：应当返回一个整数，你返回的是 {short}。")
    c = count(n, d, h)
    if value == c.matmul_total:
        return
    other = ("提示：为每次矩阵乘法写出两个矩阵的形状（X 是 n × d_model，Q_i 是 n × d_k），"
             "(a × b) 乘 (b × c) 是 a·b·c 次，再全部相加。")
    mistake, hint = _slips(c).get(value, ("other", other))
    if isinstance(value, float):  # a whole number's float was made an int above
        hint = "它不是整数，而乘法次数一定是整数：看看是不是除以了除不尽的数（比如 √d_k）。" + hint
    raise Stop("wrong", f"{case}：应为 {c.matmul_total:,}，你的是 {_shown(value)}。{hint}",
               (mistake,))


MISTAKES = {
    "no_projections": "漏了四个投影",
    "no_scores": "漏了 QKᵀ 与 weights × V",
    "no_qkv": "漏了 Q、K、V 三个投影",
    "no_weights_v": "漏了 weights × V",
    "no_qk": "漏了打分 QKᵀ",
    "scores_only": "只算了打分 QKᵀ",
    "softmax_counted": "把 softmax 也算进了乘法",
    "times_h": "多乘了一个 h",
    "other": "数错了",
    "no_w_o": "漏了输出投影 W^O",
    "one_head": "只算了一个头",
}


def _count_passed() -> str:
    """The praise, with the base model's numbers: h and 2h give the same total."""
    (n, d_model, h) = COUNT_CASES[0]
    h2 = COUNT_CASES[1][2]
    total = count(n, d_model, h).matmul_total
    return (f"全部通过！例如 n={n}, d_model={d_model} 时，h = {h} 和 h = {h2} 都是 {total:,} 次："
            "矩阵乘法的总量与头数无关（4·n·d² + 2·n²·d）。")


COUNT_MULTIPLIES = Exercise(
    name="count_multiplies",
    spec="实现 my_count_multiplies(n, d_model, h)："
         "返回一层自注意力里所有矩阵乘法的乘法次数（整数）："
         "Q、K、V 三个投影，每个头的 Q_i K_iᵀ 与 weights_i V_i，以及输出投影 W^O。softmax 不算。"
         "(a × b) 矩阵乘 (b × c) 矩阵需要 a·b·c 次乘法。",
    solution=count_multiplies_solution,
    cases=COUNT_CASES,
    inputs=lambda rng, n, d, h: (n, d, h),  # the sizes themselves
    verdict=_count_verdict,
    hint="提示：把四个矩阵乘法各自的乘法次数加起来。",
    passed=_count_passed(),
    huge="把乘法写成了幂，n ** d_model ** h 的位数多到永远算不完",
)

EXERCISES = {COUNT_MULTIPLIES.name: COUNT_MULTIPLIES}
