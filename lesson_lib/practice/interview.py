"""§8's interview: its rubric (①②③ and the usual wrong claims) and the reference answer (the follow-ups are §8's
own prose); every number is computed from lesson_lib. Nothing here grades prose."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from lesson_lib import paper
from lesson_lib.attention import head_width
from lesson_lib.costs import count, parameters
from lesson_lib.practice.checkers import rubric_feedback, self_assess
from lesson_lib.practice.feedback import Feedback, question_version
from lesson_lib.practice.freetext import Rubric, RubricPoint

INTERVIEW_ID = "面试"
MAX_INTERVIEW_CHARS = 2000
N_FLOPS_EXAMPLE = 50  # tokens in the matmul count the answer quotes (the paper-facts example)
INTERVIEW_QUESTION = "面试官问：「Multi-Head Attention 的作用是什么？为什么不直接用单头？头数是不是越多越好？」"


def base_model() -> tuple[int, int, int]:
    """(d_model, h, d_k) of the paper's base model."""
    return paper.BASE_D_MODEL, paper.BASE_HEADS, head_width(paper.BASE_D_MODEL, paper.BASE_HEADS)


def table3() -> dict:
    """The Table 3 rows the answer reads: (A)'s widest h, the (B) row as narrow, one head's drop."""
    table_a = [r for r in paper.TABLE3 if r["row"] in ("base", "A")]
    widest = max(table_a, key=lambda r: r["h"])
    best = max(r["bleu"] for r in table_a)
    single = next(r for r in table_a if r["h"] == 1)
    narrow_b = next(r for r in paper.TABLE3 if r["row"] == "B" and r["d_k"] == widest["d_k"])
    return {"widest": widest, "narrow_b": narrow_b, "drop": round(best - single["bleu"], 1)}


def interview_rubric() -> Rubric:
    d, h, d_k = base_model()
    widest = table3()["widest"]
    return Rubric((
        RubricPoint("① 单头会把不同线索平均成一个向量",
                    "单头对每个查询只有一组权重（它可以分给几个词元），输出是加权平均：指代、句法等线索被混进同一个"
                    "向量，只能按同一组比例、都打了折地取回。"),
        RubricPoint("② 切成 h 个子空间，计算量相近",
                    f"W_i^Q、W_i^K、W_i^V 把 d_model 投影成 h 个 d_k 维子空间，各头一组权重；h × d_k = d_model"
                    f"（{h} × {d_k} = {d}），矩阵乘法总量与单头相同，只有 softmax 工作量 3·h·n² 随 h 增长，"
                    "所以是「相近」。"),
        RubricPoint("③ 头数要适中（表 3）",
                    f"单头比最好的设置低；h = {widest['h']} 时每头只剩 d_k = {widest['d_k']}，BLEU 回落。"
                    "头太多和头太窄在 (A) 行里绑在一起，分不开。"),
    ), (
        ("头越多越好", f"表 3 里 h = {widest['h']}（d_k = {widest['d_k']}）的 BLEU 降到 {widest['bleu']}。"),
        ("多头的计算量是单头的 h 倍", "h × d_k = d_model：矩阵乘法总量与单头相同，并不按头数翻倍。"),
        ("多头的参数更多", f"投影参数总是 4·d_model² = {parameters(d, h):,} 个，与 h 无关。"),
        ("单头只能看一个词", "单头可以分散权重；做不到的是把几条线索分开保存。"),
    ), model_answer())


def model_answer() -> str:
    """The lesson's answer ①②③ with the 严格来说 corrections; numbers from lesson_lib."""
    (d, h, d_k), n, t = base_model(), N_FLOPS_EXAMPLE, table3()
    widest, narrow_b, total = t["widest"], t["narrow_b"], count(n, d, h).matmul_total
    return (
        "参考答案（核心：用几乎不变的计算量换来几组互不干扰的权重）\n"
        "① 单头注意力对每个查询只有一组权重。它可以把权重分给几个词元，但输出是这些值向量的加权平均："
        "指代、主谓、修饰等不同线索被加进同一个向量，只能按同一组比例、都打了折地取回，"
        "还混进了不相干的特征（论文：averaging inhibits this）。\n"
        f"② 多头用 W_i^Q、W_i^K、W_i^V 把 d_model = {d} 投影成 h = {h} 个 d_k = {d_k} 维的子空间，各头独立打分，"
        f"Concat 之后由 W^O 融合。因为 h × d_k = d_model，矩阵乘法总量与单头相同（n = {n} 时都是 {total:,} 次），"
        "投影参数都是 4·d_model²。严格来说 softmax 工作量 3·h·n²（缩放、exp、除法各 h·n²）随 h 增长，"
        "这是论文说「相近」而不是「相同」的一个原因。\n"
        f"③ 头数并非越多越好：表 3 中单头比最好的设置低 {t['drop']} BLEU；"
        f"h = {widest['h']}（d_k = {widest['d_k']}）降到 {widest['bleu']}。(B) 行 h = {narrow_b['h']}、"
        f"d_k = {narrow_b['d_k']} 也只有 {narrow_b['bleu']}，所以掉分可能有一部分要怪每个头太窄"
        "（(B) 行也少了参数，只能说「部分」）。"
    )


@cache  # the question and the points' names never change in a running kernel
def interview_version() -> str:
    return question_version(INTERVIEW_QUESTION, interview_rubric(), "self")


def interview_check(answer) -> Feedback:
    """The rubric and reference answer to compare with; never a verdict."""
    fb = rubric_feedback(INTERVIEW_ID, answer, MAX_INTERVIEW_CHARS)
    return replace(fb, version=interview_version())


def interview_self_assess(ticked) -> Feedback:
    """The learner's tick of ①②③, recorded as a self-assessment."""
    return self_assess(INTERVIEW_ID, interview_rubric(), ticked)
