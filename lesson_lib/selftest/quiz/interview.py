"""The §8 interview self-check: the learner's own answer read for the lesson's three points ①②③.

Read like any free text (``freetext``): a point counts only when stated, never when negated; the
usual wrong claims (「越多越好」, 「算力翻 8 倍」, 「不守恒」, 「参数变多」) are named back with the
lesson's correction. The reference answer (``model_answer``) is shown after every attempt.
"""

from __future__ import annotations

from .bank import N_FLOPS_EXAMPLE, facts
from .checkers import TextKey, text_feedback
from .feedback import Feedback, blank, too_long
from .freetext import Misconception, Point
from .parse import as_text, clean

__all__ = ["INTERVIEW_QUESTION", "INTERVIEW_POINTS", "MAX_INTERVIEW_CHARS", "interview_points",
           "interview_misconceptions", "model_answer", "interview_check"]  # fmt: skip

INTERVIEW_ID = "面试"
MAX_INTERVIEW_CHARS = 2000
INTERVIEW_QUESTION = "面试官问：「Multi-Head Attention 的作用是什么？为什么不直接用单头？头数是不是越多越好？」"

INTERVIEW_POINTS = (
    Point("① 单头的加权平均会把不同角色抹平",
          "说明单头只有一组权重，加权平均会把指代、句法等不同角色的信息混在一起。", (
              ("平均", "averag*", "抹平", "混", "冲淡", "模糊", "糊", "抑制", "inhibit*", "blur*", "mix*", "一组权重",
               "weighted sum", "加权求和"),
          )),
    Point("② 拆成 h 个 d_k 维子空间，h × d_k = d_model，算力相近",
          "说明投影把 d_model 拆成 h 个 d_k 维子空间，因为 h × d_k = d_model，总计算量与单头相近。", (
              ("子空间", "subspace*", "拆", "切", "分成", "split*", "投影", "project*", "每个头", "d_k"),
              ("算力", "计算量", "计算成本", "成本", "开销", "flop*", "cost*", "compute", "computation", "乘法",
               "守恒"),
              ("相近", "相当", "不变", "守恒", "一样", "相同", "差不多", "持平", "没有增加", "不增加", "similar",
               "same", "equal", "unchanged", "comparable", "constant"),
          )),
    Point("③ 头数并非越多越好：d_k 过窄会掉分（表 3）",
          "说明头数不是越多越好：头太多时每个头的 d_k 太窄，论文表 3 的消融实验里 BLEU 反而下降。", (
              ("re:(不是|并非|并不是|不一定|未必|不见得)[^，。,.]{0,6}越多越好", "太多", "过多", "too many", "过窄",
               "太窄", "变窄", "narrow*", "表3", "table 3", "消融", "ablation", "适中", "折中", "trade-off", "tradeoff",
               "re:bleu.{0,6}(下降|降|掉|回落|drop|lower)"),
          )),
)  # fmt: skip


def interview_points() -> tuple[Point, ...]:
    return INTERVIEW_POINTS


def interview_misconceptions() -> tuple[Misconception, ...]:
    f = facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    widest = max(f["table_a"], key=lambda r: r["h"])
    return (
        Misconception("越多越好", ("越多越好", "越多就越好", "re:the more (heads )?the better",
                                  "more heads are always better"),
                      f"表 3 里 h = {widest['h']} 时每个头只剩 d_k = {widest['d_k']} 维，BLEU 降到 {widest['bleu']}："
                      "头数要适中。", contradicts=INTERVIEW_POINTS[2].name),
        Misconception("算力翻倍", ("re:(翻|贵|多|大|高|增加|变成|是)(了)?\\s*(单头的)?\\s*\\d{1,6}\\s*倍",
                                  "re:(?<!\\d)\\d{1,6}\\s*倍的?(算力|计算|成本|开销)",
                                  "times more compute", "times the cost"),
                      f"{h} 个头各 {d_k} 维，h × d_k = d_model = {d}：矩阵乘法总量与单头相同，并没有按头数翻倍。",
                      contradicts=INTERVIEW_POINTS[1].name, unless=("softmax", "exp")),
        Misconception("不守恒", ("不守恒", "不再守恒", "并不守恒", "更贵", "更费算力", "more expensive", "costs more"),
                      "因为 h × d_k = d_model，矩阵乘法总量与单头相同；严格来说只有 softmax 的 h·n² 随 h 增长，"
                      "所以论文说总成本「相近」。", contradicts=INTERVIEW_POINTS[1].name, unless=("softmax", "exp")),
        Misconception("参数变多", ("re:参数(量)?(变多|更多|翻倍|增加|多了)", "more parameters"),
                      f"投影参数总是 4·d_model² = {4 * d * d:,} 个，与 h 无关。"),
        Misconception("单头也能同时关注多个重点", ("re:单头(也)?(能|可以|能够)(同时)?(关注|看|照顾)",),
                      "单头只有一组和为 1 的权重，多个重点只能被平均在一起。", contradicts=INTERVIEW_POINTS[0].name),
    )  # fmt: skip


def model_answer() -> str:
    """The lesson's answer ①②③ in our own words, with the 严格来说 corrections; numbers from lesson_lib."""
    f = facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    n = N_FLOPS_EXAMPLE
    rows = f["table_a"]
    best = max(r["bleu"] for r in rows)
    single = next(r for r in rows if r["h"] == 1)
    widest = max(rows, key=lambda r: r["h"])
    narrow_b = next(r for r in f["table3"] if r["row"] == "B" and r["d_k"] == widest["d_k"])
    total = f["count"](n, d, h).matmul_total
    return (
        "参考答案（核心：用几乎不变的算力换来子空间的多样性）\n"
        "① 单头注意力对每个查询只有一组权重，输出是全序列 Value 的加权平均；指代、主谓修饰等不同的语义角色被"
        "挤进同一个平均里，信息被抹平（论文：averaging inhibits this）。\n"
        f"② 多头用 W_i^Q、W_i^K、W_i^V 把 d_model = {d} 投影成 h = {h} 个 d_k = {d_k} 维的子空间，各头独立打分、"
        f"各司其职，Concat 之后由 W^O 融合。因为 h × d_k = d_model，矩阵乘法总量与单头相同（n = {n} 时都是 "
        f"{total:,} 次），投影参数都是 4·d_model²。严格来说 softmax 的 exp 与除法是 h·n²，随 h 增长，"
        "所以论文说的是总成本「相近」。\n"
        f"③ 头数并非越多越好：表 3 中单头比最好的设置低 {round(best - single['bleu'], 1)} BLEU；"
        f"h = {widest['h']}（d_k = {widest['d_k']}）降到 {widest['bleu']}。而 (B) 行 h = {narrow_b['h']}、"
        f"d_k = {narrow_b['d_k']} 也只有 {narrow_b['bleu']}，所以掉分里可能有相当一部分要怪每个头太窄——"
        "(A) 行里头数和 d_k 是一起变的，分不开。"
    )


def interview_check(answer) -> Feedback:
    """Which of ①②③ the learner's answer states, which it negates, which wrong claims it makes; never 「正确」."""
    explanation = model_answer()
    raw = as_text(answer).strip()
    if (long := too_long(raw, INTERVIEW_ID, explanation, MAX_INTERVIEW_CHARS, judged=False)) is not None:
        return Feedback(False, long.message, explanation, INTERVIEW_ID, show_explanation=True,
                        missing=tuple(p.name for p in INTERVIEW_POINTS), judged=False)  # fmt: skip
    text = clean(raw).strip()
    if not text:
        return blank(INTERVIEW_ID, explanation, "用自己的话写下你会怎么回答面试官")
    key = TextKey(INTERVIEW_POINTS, len(INTERVIEW_POINTS), interview_misconceptions())
    fb = text_feedback(INTERVIEW_ID, explanation, text, key)
    count = f"覆盖了 {len(fb.covered)} / {len(INTERVIEW_POINTS)} 个要点。"
    head, rest = fb.message.split("：", 1)
    return Feedback(fb.correct, f"{head}：{count}{rest}", explanation, INTERVIEW_ID, False, True, fb.covered,
                    fb.missing, fb.misconceptions, judged=False)  # fmt: skip
