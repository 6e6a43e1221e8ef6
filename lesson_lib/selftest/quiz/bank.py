"""The question bank of sections 8 and 10: every question declared once, as data.

Each question is one function decorated with ``@declare`` that returns a ``Question``: its id, the
section that teaches it, its kind, the prompt, the 解析, and the kind's answer key (``NumberKey``,
``ExpressionKey``, ``ChoiceKey``, ``ShapeKey``, ``TextKey`` from ``checkers``). Nothing is built
until a question is asked (``question(id)`` builds and caches that one), so the first check is fast.

Every number in a question or an answer key comes from ``lesson_lib``: the base model's sizes and
Table 3 from ``paper``, d_k from ``attention.head_width``, multiply counts from ``flops``.

Adding a question (e.g. one about a real Chinese pronoun head in §6)::

    @declare("S6")
    def _s6() -> Question:
        options = (("A", "…", "why A is right or wrong"), ("B", "…", "…"))
        return Question("S6", "第 6 节", "single", "S6　…？", "解析：…",
                        key=ChoiceKey(options, frozenset("A"), "one line of praise"))

then add ``ask("S6")`` to the notebook source (``notebooks/src/10_self_test.md``) and right and wrong
answers for it to ``CASES`` in ``tests/test_quiz.py`` (a test checks every question has both). The
decorator's order is the notebook's order. Prompts, choices and 解析 must not contain 「正确」 or 「还不对」.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache

from ..shape_mistakes import split_heads_shape_mistake
from .checkers import ChoiceKey, ExpressionKey, NumberKey, ShapeKey, TextKey
from .feedback import Question
from .freetext import Misconception, Point
from .parse import Poly

__all__ = ["declare", "question", "questions", "question_ids", "facts",
           "N_SHAPE_EXAMPLE", "N_FLOPS_EXAMPLE", "H_FLOPS_EXAMPLE"]  # fmt: skip

_DECLARED: dict[str, Callable[[], Question]] = {}


def declare(question_id: str):
    """Register a question's builder under its id (the notebook asks them in this order)."""

    def register(build: Callable[[], Question]):
        _DECLARED[question_id] = build
        return build

    return register


@cache
def question(question_id: str) -> Question:
    """The question with this id, built on first use."""
    if question_id not in _DECLARED:
        raise KeyError(f"没有编号为 {question_id!r} 的题目；可用的编号是 {', '.join(_DECLARED)}。")
    q = _DECLARED[question_id]()
    assert q.id == question_id, (q.id, question_id)
    return q


def question_ids() -> tuple[str, ...]:
    return tuple(_DECLARED)


def questions() -> dict[str, Question]:
    """All questions by id, in the order the notebook asks them (builds every one)."""
    return {qid: question(qid) for qid in _DECLARED}


def clear_cache() -> None:
    """Forget built questions and facts (tests change the paper's numbers)."""
    question.cache_clear()
    facts.cache_clear()


N_SHAPE_EXAMPLE = 12  # tokens in the §3 shape question (any n works; 12 keeps the numbers apart)
N_FLOPS_EXAMPLE = 50  # tokens in the §4 counting questions (the paper-facts example)
H_FLOPS_EXAMPLE = 16  # head count in the §4 counting questions (a Table 3 (A) row)


@cache
def facts() -> dict:
    from lesson_lib import paper
    from lesson_lib.kernel.attention import head_width, split_heads
    from lesson_lib.kernel.flops import count, parameters

    d, h = paper.BASE_D_MODEL, paper.BASE_HEADS
    d_k = head_width(d, h)
    one = count(1, d, h)  # at n = 1 every stage's count is its coefficient (each stage is one monomial)
    shape = split_heads(_zeros((N_SHAPE_EXAMPLE, d)), h).shape
    table_a = [r for r in paper.TABLE3 if r["row"] in ("base", "A")]
    lab_heads = [c for c in range(1, d + 1) if d % c == 0 and c <= 64]
    return {
        "d": d,
        "h": h,
        "d_k": d_k,
        "pages": dict(paper.FIGURE_PAGES),
        "table3": list(paper.TABLE3),
        "table_a": table_a,
        "scores_coef": one.scores,  # n²·d_model
        "weights_v_coef": one.weights_v,  # n²·d_model
        "proj_coef": one.qkv_projections + one.output_projection,  # n·4·d_model²
        "count": count,
        "parameters": parameters,
        "head_width": head_width,
        "split_shape": tuple(int(s) for s in shape),
        "lab_heads": (lab_heads[0], lab_heads[-1]),
    }


def _zeros(shape):
    import numpy as np

    return np.zeros(shape)


def _n2(coef) -> Poly:
    return Poly.make({2: Fraction(coef)})


@declare("Q1")
def _q1() -> Question:
    f = facts()
    explanation = (
        "解析：单头注意力对每个查询位置只算出一组权重（一行 softmax，总和为 1），输出是所有 Value 向量按这组权重的"
        "加权平均。想同时照顾「指代」和「语法角色」两条线索，就只能把权重分给几个词，各条线索的信息被混进同一个"
        "向量里，互相冲淡，谁也不够清晰——论文的说法是 averaging inhibits this（平均化抑制了这种能力）。"
        "多头的办法是给每条线索一套自己的权重。\n"
        "严格来说：第 2 节「小红 40%、小明 30%、苹果 30%」是简化的类比；真实的单头是在高维向量上做加权平均，"
        f"d_model = {f['d']} 的每一维都按同一组权重混合，但「多条信息被平均抹平」这个方向是一致的。"
    )
    points = (
        Point("只有一组权重", "单头对每个查询只有一组（一行）注意力权重，总和为 1。", (
            ("一组", "一套", "一份", "一行", "单一", "唯一", "一个权重", "一个分布", "一种分布", "同一组", "只有一个",
             "one set", "single set", "one row", "re:\\b(one|a single|only one) (attention |softmax )?(distribution|set"
             " of weights|row of weights)"),
        )),
        Point("加权平均", "输出是各个 Value 按这组权重的加权平均（加权求和）。", (
            ("平均", "加权", "求和", "凸组合", "averag*", "weighted", "sum", "convex combination"),
        )),
        Point("不同信息被混在一起", "几条线索的信息被挤进同一个向量，互相冲淡、无法分开。", (
            ("混", "抹平", "糊", "模糊", "压缩", "丢失", "损失", "冲淡", "稀释", "搅", "分不开", "无法区分", "抑制",
             "顾此失彼", "平庸", "mix*", "blur*", "blend*", "inhibit*", "dilut*", "lose", "loses", "lost", "collaps*",
             "wash* out"),
        )),
    )  # fmt: skip
    misconceptions = (
        Misconception("单头也能同时关注多个重点", (
            "re:(能|可以|能够|会)(同时|一起)?(关注|看|照顾|注意)(到)?(多个|好几个|多处|几个|不同)",
            "can attend to several", "can focus on multiple"),
            "单头对每个查询只有一组和为 1 的权重：分给一个词的越多，别的词就越少，平均之后各条线索混在一起。",
            contradicts="只有一组权重", unless=("多头", "多个头", "每个头", "multi", "heads")),
        Misconception("单头太小、维度不够", (
            "re:(维度|d_model|宽度|参数)(太小|不够|太少)", "re:(太小|不够大|不够宽)", "too small",
            "not enough dimensions"),
            f"加大 d_model（{f['d']}）只会让每个 Value 向量更长，权重仍然只有一组，问题不在大小。"),
    )  # fmt: skip
    return Question(
        "Q1",
        "第 2 节",
        "text",
        "Q1　单头注意力为什么无法同时关注多个不同的重点？（用一两句话回答）",
        explanation,
        placeholder="用自己的话写：单头的权重是怎样的？输出是怎么算出来的？",
        key=TextKey(points, 2, misconceptions),
    )


@declare("Q2")
def _q2() -> Question:
    f = facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    params = f["parameters"](d, h)
    explanation = (
        f"解析：每个头的 d_k = d_v = d_model / h = {d} / {h} = {d_k}。\n"
        f"对应的投影矩阵：每个头的 W_i^Q、W_i^K、W_i^V 都是 {d} × {d_k}；{h} 个头的 W_i^Q 并排放在一起就是一个 "
        f"{d} × {d} 的矩阵，W^O 也是 {d} × {d}。所以一层的投影参数共 4 · d_model² = {params:,} 个，"
        "无论 h 取多少都一样——这也是论文表 3 (A) 行改变头数时参数量不变的原因。"
    )
    hints = [
        (d, f"{d} 是 d_model，整个模型的宽度；它要平均分给 {h} 个头，每个头只拿到其中一份。"),
        (h, f"{h} 是头数 h；问的是每个头有多少维。"),
        (d * h, f"{d} × {h} 把乘除弄反了：维度是被切分给各个头的，应当用除法。"),
    ]
    for row in f["table3"]:
        if row["d_k"] != d_k and all(v != row["d_k"] for v, _ in hints):
            hints.append((row["d_k"], f"这是论文表 3 里 h = {row['h']} 时的 d_k；本题是 base 模型，h = {h}。"))
    return Question(
        "Q2",
        "第 3 节",
        "number",
        f"Q2　在 Base 模型中，d_model = {d}，h = {h}，每个头的 d_k 和 d_v 是多少？",
        explanation,
        placeholder="例如：d_k = …",
        key=NumberKey(
            d_k,
            symbols={"d_model": d, "h": h},
            labels=("d_k", "d_v"),
            givens=(d, h),
            hints=tuple(hints),
            generic_hint=f"提示：{d} 维要平均分给 {h} 个头，d_k = d_v = d_model / h。",
            praise=f"d_k = d_v = {d} / {h} = {d_k}：{d} 维平均切给 {h} 个头，每个头 {d_k} 维。",
        ),
    )


@declare("Q3")
def _q3() -> Question:
    f = facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    count = f["count"]
    n = N_FLOPS_EXAMPLE
    exps = {hh: count(n, d, hh).softmax_exp for hh in (1, h)}
    explanation = (
        f"解析：打分 QKᵀ 时，单头是 (n × {d}) 乘 (n × {d})ᵀ，得到 n × n 个分数，每个分数要 {d} 次乘法，"
        f"共 n · {d} · n = {d}n² 次。{h} 个头时，每个头是 (n × {d_k}) 乘 (n × {d_k})ᵀ，{d_k}n² 次，"
        f"{h} 个头合计 {h} · {d_k}n² = {d}n²。关键在 h × d_k = d_model：头变多，每个头就同比例变窄。\n"
        f"严格来说：{h} · {d_k}n² = {d}n² 只是 QKᵀ 这一步。weights × V 同样是 n²·d_model，也守恒；"
        "Q/K/V 投影与 W^O 共 4·n·d_model² 次，与 h 无关；但 softmax 对每个头的 n × n 分数各做一次 exp 和一次除法，"
        f"共 h·n² 次，会随 h 增长（n = {n} 时，h = 1 要 {exps[1]:,} 次 exp，h = {h} 要 {exps[h]:,} 次）。"
        "它比矩阵乘法小得多，所以论文说总成本「相近」（similar），而不是完全相同。"
    )
    symbols = {"n": Poly.n(), "d_model": Poly.const(d), "d": Poly.const(d), "h": Poly.const(h),
               "d_k": Poly.const(d_k), "d_v": Poly.const(d_k)}  # fmt: skip
    scores = _n2(f["scores_coef"])
    both = scores + _n2(f["weights_v_coef"])
    total = both + Poly.make({1: Fraction(f["proj_coef"])})
    targets = {
        "scores": (scores, f"{h} · (n · {d_k} · n) = {h} · {d_k}n² = {d}n²，和单头的 n · {d} · n 相同："
                           f"h × d_k = d_model，头变多、每头变窄，乘法总量不变。"),
        "scores+v": (both, f"你把打分 QKᵀ 和 weights × V 两步都算进去了：各 {d}n²，合计 {both}，同样与 h 无关。"),
        "matmul": (total, f"连投影一起算，全部矩阵乘法 {total} 次，与 h 无关。"),
    }  # fmt: skip

    def diagnose(value: Poly) -> str:
        if value == _n2(d_k):
            return f"这是一个头的乘法量；{h} 个头要再乘以 {h}。"
        if value == _n2(d * h):
            return f"看起来你让每个头都用了 {d} 维：多头时每个头只有 d_k = {d_k} 维。"
        if value == _n2(d * d):
            return (f"(n × {d}) 和 ({d} × n) 是两个矩阵的形状，不是乘法次数：结果有 n × n 个元素，"
                    f"每个元素做 {d} 次乘法，共 n · {d} · n。")  # fmt: skip
        if value.degree == 1:
            return "式子里 n 只有一次方：分数矩阵是 n × n，有 n² 个元素，每个都要算一次点积。"
        if value.degree > 2:
            return "n 的次数太高了：分数矩阵是 n × n，乘法次数是 n² 乘以每个点积的长度。"
        return f"单头打分的乘法次数是 n · {d} · n；请写出它和 {h} 个头的乘法次数之间的关系。"

    def no_n_hint(values) -> str:
        if Fraction(d) in values:
            return (f"{h} × {d_k} = {d} 说的是维度守恒，方向对了。再把它写成乘法次数：每个头打分要 n · {d_k} · n 次，"
                    "请写出含 n 的式子。")  # fmt: skip
        return "请用 n（词数）写出乘法次数，例如 n · 某个数 · n 这样的式子。"

    return Question(
        "Q3",
        "第 4 节",
        "expression",
        f"Q3　为什么 {h} 个 {d_k} 维的头与 1 个 {d} 维的头算力一样？请写出代数关系（用 n 表示词数）。",
        explanation,
        placeholder="用 n 写出乘法次数的等式，例如 … = …n²",
        key=ExpressionKey(
            targets, symbols, diagnose, no_n_hint,
            sides={"multi": ((str(h), "h"), (str(d_k), "d_k", "d_v")), "single": ((str(d), "d_model", "d"),)},
            one_side={
                "single": f"但这只写了单头的一边（n · {d} · n）：题目要的是两边的关系。请把 {h} 个头、每头 {d_k} 维的"
                          f"乘法次数也写出来，用等号连起来，例如 {h} · … = {d}n²。",
                "multi": f"这是 {h} 个头的一边。再写出单头（{d} 维）的乘法次数，用等号把两边连起来。",
                "": f"请一边写 {h} 个头（每头 {d_k} 维）的乘法次数，另一边写单头 {d} 维的，用等号连起来。",
            },
        ),
    )


@declare("Q4")
def _q4() -> Question:
    f = facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    explanation = (
        f"解析：先把 {h} 个头各自输出的 n × {d_k} 矩阵沿特征维度并排拼接（Concat），得到 n × {d} 的矩阵，"
        f"再乘以输出投影矩阵 W^O（{d} × {d}，可学习的参数）做线性融合，得到最终的 n × {d} 输出。\n"
        f"严格来说：Concat(head_1, …, head_{h}) W^O 等于 Σ_i head_i W^O_i（W^O_i 是 W^O 中对应第 i 个头的 {d_k} 行）。"
        "所以在同一层里，各个头在打分和加权时互不通信，直到 W^O 这一步才把它们的结果混合起来；"
        "不过下一层的每个头读到的输入，已经是上一层混合后的结果。"
    )
    options = (
        ("A", f"把 {h} 个头的输出逐元素取平均，得到 n × {d_k}",
         "取平均又回到了「加权平均抹平信息」的老问题，而且输出只剩 d_k 维，拼不回 d_model。"),
        ("B", f"沿特征维度拼接成 n × {d}，再乘以输出矩阵 W^O（{d} × {d}）",
         "拼接保留了每个头的结果，W^O 再把它们线性融合。"),
        ("C", "只保留注意力分数最高的那个头，其余丢掉",
         "多头没有「选一个头」的步骤：每个头的输出都会进入 Concat，由 W^O 学习怎样组合。"),
        ("D", f"沿词的方向（行）把它们首尾相接，得到 {h}n × {d_k}",
         f"那样每个词会变成 {h} 行，词和词对不上了；拼接应当沿特征维度（列），每个词仍是一行。"),
    )  # fmt: skip
    return Question(
        "Q4",
        "第 3 节",
        "single",
        f"Q4　{h} 个头的输出是如何汇聚成最终结果的？",
        explanation,
        key=ChoiceKey(
            options, frozenset("B"), f"Concat 得到 n × {d}，再乘 W^O 融合。W^O 是各头第一次「交换信息」的地方。",
        ),
    )  # fmt: skip


@declare("Q5")
def _q5() -> Question:
    f = facts()
    p = f["pages"]
    explanation = (
        "解析：论文附录展示的是编码器第 5 层的自注意力，三类分工：\n"
        f"① 长距离依赖（图 3，第 {p[3]} 页）：许多头把 \"making\" 连到远处的 \"more difficult\"，"
        "补全「making … more difficult」；\n"
        f"② 指代消解（图 4，第 {p[4]} 页）：头 5 和头 6 从代词 \"its\" 出发，注意力非常集中地落在先行词 \"Law\" 上；\n"
        f"③ 句法结构（图 5，第 {p[5]} 页）：两个头的模式与句子结构有关。\n"
        "这些分工不是人为指定的，而是训练中自发出现的。\n"
        f"严格来说：三张图分别在第 {p[3]}、{p[4]}、{p[5]} 页；只有图 4 给头标了号；先行词是 \"Law\" 这个词"
        "（课文写作 \"The Law\"）；图 4 里一个头几乎全部看 \"Law\"，另一个头分给 \"Law\" 和 \"application\"。"
    )
    options = (
        ("A", "长距离依赖：把 \"making\" 和远处的 \"more difficult\" 连起来（图 3）", "图 3 正是这种长距离依赖。"),
        ("B", "指代消解：代词 \"its\" 的注意力集中到先行词 \"Law\" 上（图 4）", "图 4 的头 5、头 6 正是这样。"),
        ("C", "句法结构：头的模式与句子结构相关（图 5）", "图 5 展示的正是与句子结构相关的头。"),
        ("D", "把英文单词对齐到德语译文中对应的词",
         "这些图是编码器的自注意力：同一个英文句子里的词互相看，图里没有德语。"),
        ("E", "每个头事先被人为指定了一种语言学角色",
         "没有人给头分配角色：分工是训练中自发出现的，论文只是事后把它们画出来。"),
    )  # fmt: skip
    return Question(
        "Q5",
        "第 6 节",
        "multi",
        "Q5　论文附录的可视化（图 3、图 4、图 5）说明各个头学会了哪些分工？（多选）",
        explanation,
        key=ChoiceKey(options, frozenset({"A", "B", "C"}), "长距离依赖、指代消解、句法结构，都是训练中自发出现的分工。"
        ),
    )


@declare("S2")
def _s2() -> Question:
    explanation = (
        "解析：单头注意力对每个查询只有一组权重（softmax 的一行，总和为 1），输出是各 Value 的加权平均。"
        "把更多权重给「小红」，就必须从别的词那里拿走；平均之后，也无法从输出里把各个词的贡献无损地分回来——"
        "不同的权重组合可能得到同一个输出。加大 d_model 只会让每个 Value 更长，权重仍然只有一组。"
        "两个头则各有一组权重，可以一个尖锐地看「小红」（指代），一个看语法角色，拼接后两份信息都还在。\n"
        "严格来说：第 2 节里的百分比是简化的类比，真实的注意力在高维向量上做加权平均。"
    )
    options = (
        ("A", "对每个查询位置，单头只有一组注意力权重，它们加起来等于 1", "这正是单头的限制所在。"),
        ("B", "只要把 d_model 加大，单头就能同时把注意力集中在两个不同的词上",
         "加大 d_model 只让每个 Value 向量更长；权重仍是一组、总和仍是 1，集中给一个词就没法再集中给另一个。"),
        ("C", "两个头可以各自给出一个尖锐的分布（一个看「小红」，一个看语法角色），拼接后两份信息都保留",
         "这正是多头的做法。"),
        ("D", "做完加权平均后，总能从输出里把每个词各自的贡献无损地分离出来",
         "平均是多对一的：不同的权重组合可以得到同一个输出，信息一旦混合就分不回来。"),
    )  # fmt: skip
    return Question(
        "S2",
        "第 2 节",
        "multi",
        "S2　关于「小明把苹果递给了小红，因为她帮过他」这个例子，下面哪些说法对？（多选）",
        explanation,
        key=ChoiceKey(options, frozenset({"A", "C"}), "单头只有一组权重；多头让每条线索各有一组。"),
    )


@declare("S3")
def _s3() -> Question:
    f = facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    n = N_SHAPE_EXAMPLE
    expected = f["split_shape"]
    explanation = (
        f"解析：X 是 (n, d_model) = ({n}, {d})。先 reshape 成 (n, h, d_k) = ({n}, {h}, {d_k})，第 i 块连续的 {d_k} 列"
        f"就是第 i 个头；再交换前两个轴（transpose）得到 (h, n, d_k) = {expected}，每个头成为一个独立的 "
        f"({n}, {d_k}) 矩阵，才能对每个头做 Q Kᵀ。\n"
        f"常见错误：忘了 transpose，得到 ({n}, {h}, {d_k})；或者直接 reshape 成 ({h}, {n}, {d_k})——形状对了，"
        "内容却错了：不同词的特征被塞进了同一个头。"
    )
    names = {"h": h, "n": n, "d_k": d_k, "d_v": d_k, "d_model": d}

    def diagnose(dims) -> str:
        return split_heads_shape_mistake(dims, n, h, d_k)

    return Question(
        "S3",
        "第 3 节",
        "shape",
        f"S3　X 的形状是 (n, d_model) = ({n}, {d})，拆成 h = {h} 个头（split_heads）之后，形状是什么？",
        explanation,
        placeholder="例如：(a, b, c)",
        key=ShapeKey(expected, names, diagnose, f"形状是 {expected}：头放在最前面，每个头是一个 (n, d_k) 矩阵。"),
    )


@declare("S3b")
def _s3b() -> Question:
    f = facts()
    h, d_k = f["h"], f["d_k"]
    explanation = (
        "解析：在同一层里，每个头用自己的 W_i^Q、W_i^K、W_i^V 独立打分、独立做 softmax、独立加权求和，"
        f"彼此看不到对方的分数。直到 Concat 之后乘 W^O，各头的结果才被混合：Concat(head_1, …, head_{h}) W^O "
        f"= Σ_i head_i W^O_i，其中 W^O_i 是 W^O 中属于第 i 个头的 {d_k} 行。\n"
        "严格来说：这说的是一层之内；跨层时，下一层的每个头读到的输入已经混合了上一层所有头的信息。"
    )
    options = (
        ("A", "打分时：每个头会参考其他头的分数", "每个头只用自己的 Q_i、K_i 打分，看不到别的头。"),
        ("B", "softmax 时：所有头的分数放在一起归一化", "softmax 是每个头、每一行各自做的，各头的权重各自和为 1。"),
        ("C", "直到 Concat 之后乘 W^O，才把各头的结果混合起来", "W^O 是它们第一次混合的地方。"),
        ("D", "从来不交换：各头的结果直接拼接就是最终输出", "拼接之后还要乘 W^O，它正是把各头结果线性混合的一步。"),
    )  # fmt: skip
    return Question(
        "S3b",
        "第 3 节",
        "single",
        "S3b　在一层多头注意力里，各个头在哪一步才第一次「交换信息」？",
        explanation,
        key=ChoiceKey(options, frozenset("C"), "Concat(head_i) W^O = Σ_i head_i W^O_i。"),
    )


@declare("S4")
def _s4() -> Question:
    f = facts()
    d, h0 = f["d"], f["h"]
    n, h = N_FLOPS_EXAMPLE, H_FLOPS_EXAMPLE
    c = f["count"](n, d, h)
    base = f["count"](n, d, h0)
    d_k = f["head_width"](d, h)
    share = round(100 * c.projections_share)
    explanation = (
        f"解析：一层自注意力的矩阵乘法：Q/K/V 投影 3·n·d² = {c.qkv_projections:,}；打分 QKᵀ n²·d = {c.scores:,}；"
        f"weights × V n²·d = {c.weights_v:,}；输出投影 W^O n·d² = {c.output_projection:,}。"
        f"合计 4·n·d² + 2·n²·d = {c.matmul_total:,}，式子里没有 h，所以 h = {h} 与 h = {h0} 完全一样"
        f"（h = {h0} 时也是 {base.matmul_total:,}）。n = {n} 这么短时，四个投影占了约 {share}%。\n"
        f"严格来说：softmax 的 exp 与除法各 h·n² 次，会随 h 增长（见下一题），但它们不是矩阵乘法。"
    )
    hints = (
        (c.scores, "这只是打分 QKᵀ 这一步；还有 weights × V 与四个投影。"),
        (c.scores + c.weights_v, "打分和 weights × V 算对了，还漏了 Q/K/V 投影与 W^O（4·n·d²）。"),
        (c.qkv_projections + c.output_projection, "四个投影算对了，还漏了打分与 weights × V（2·n²·d）。"),
        (c.matmul_total - c.output_projection, "漏了输出投影 W^O（n·d²）。"),
        (c.matmul_total * h // h0, f"头数从 {h0} 变成 {h} 并不会让矩阵乘法按比例增加：每个头同时变窄了。"),
        (c.matmul_total + c.softmax_total, "你把 softmax 的 exp、除法和缩放也算进去了；本题只问矩阵乘法。"),
    )
    return Question(
        "S4",
        "第 4 节",
        "number",
        f"S4　n = {n}，d_model = {d}，h = {h}（每个头 d_k = {d_k}）：一层自注意力的矩阵乘法一共要做多少次乘法？"
        "（Q/K/V 投影、QKᵀ、weights × V、W^O 四部分都算）",
        explanation,
        placeholder="一个数，或能算出它的式子",
        key=NumberKey(
            c.matmul_total,
            rel_tol=0.005,
            symbols={"n": n, "d_model": d, "d": d, "h": h, "d_k": d_k, "d_v": d_k},
            givens=(n, d, h, d_k),
            hints=hints,
            generic_hint="提示：四部分分别是 3·n·d²、n²·d、n²·d、n·d²。",
            praise=f"{c.matmul_total:,} 次，和 h = {h0} 时一模一样：矩阵乘法的总量与头数无关。",
        ),
    )


@declare("S4b")
def _s4b() -> Question:
    f = facts()
    d, h0 = f["d"], f["h"]
    n, h = N_FLOPS_EXAMPLE, H_FLOPS_EXAMPLE
    c = f["count"](n, d, h)
    c0 = f["count"](n, d, h0)
    c1 = f["count"](n, d, 1)
    explanation = (
        f"解析：每个头都有自己的 n × n 分数矩阵，softmax 对每个分数做一次 exp，所以 exp 的次数是 h·n² = "
        f"{h} × {n}² = {c.softmax_exp:,}。h = 1 时是 {c1.softmax_exp:,}，h = {h0} 时是 {c0.softmax_exp:,}："
        "随 h 成正比增长。"
        f"同样随 h 增长的还有除法和缩放（各 h·n²）。和矩阵乘法的 {c.matmul_total:,} 次相比它们很小，"
        "所以论文说多头的总成本与单头「相近」，而不是「相同」；头很多、序列很长时，这部分以及大量小矩阵的开销就会显现。"
    )
    hints = (
        (c0.softmax_exp, f"这是 h = {h0} 时的次数；exp 的次数是 h·n²，h = {h} 时要重新算。"),
        (c1.softmax_exp, "这是单头（h = 1）的次数：每个头都有自己的 n × n 分数，都要做 exp。"),
        (c.scores, "n²·d 是打分的乘法次数，不是 exp 的次数：每个分数只做一次 exp。"),
        (c.softmax_total, "这是 exp、除法和缩放三者的总和；本题只问 exp。"),
    )
    return Question(
        "S4b",
        "第 4 节",
        "number",
        f"S4b　同样 n = {n}，d_model = {d}，h = {h}：softmax 一共要算多少次 exp？它会随 h 变化吗？（写出次数）",
        explanation,
        placeholder="一个数，或能算出它的式子",
        key=NumberKey(
            c.softmax_exp,
            rel_tol=0.005,
            symbols={"n": n, "d_model": d, "d": d, "h": h},
            givens=(n, d, h),
            hints=hints,
            generic_hint="提示：每个头都有一个 n × n 的分数矩阵，每个分数做一次 exp。",
            praise=f"h·n² = {c.softmax_exp:,}：这部分随 h 增长，所以说「相近」而不是「相同」。",
            misconceptions=(Misconception("不会随 h 变化", (
                "re:(不会|不|没有|并不|无需)\\s*(随|跟|因)\\s*(着)?\\s*h", "re:(与|和|跟)\\s*h\\s*无关", "不随", "不变",
                "没有变化", "不受影响",
                "re:does ?n[o']t (change|grow|depend)", "constant", "independent of h"),
                f"exp 的次数是 h·n²：h = 1 时 {c1.softmax_exp:,}，h = {h0} 时 {c0.softmax_exp:,}，h = {h} 时 "
                f"{c.softmax_exp:,}，随 h 成正比增长。",
                unless=("乘法", "matmul", "参数", "矩阵")),),
        ),
    )


@declare("S5")
def _s5() -> Question:
    f = facts()
    d = f["d"]
    lo, hi = f["lab_heads"]
    count, parameters, head_width = f["count"], f["parameters"], f["head_width"]
    n = N_FLOPS_EXAMPLE
    measures = (
        ("A", "参数量（W^Q、W^K、W^V、W^O）", lambda h: parameters(d, h)),
        ("B", f"矩阵乘法的总次数（n = {n}）", lambda h: count(n, d, h).matmul_total),
        ("C", f"softmax 的 exp 次数（n = {n}）", lambda h: count(n, d, h).softmax_exp),
        ("D", "每个头的宽度 d_k", lambda h: head_width(d, h)),
        ("E", "注意力图的张数", lambda h: h),
    )
    options, answer = [], set()
    for key, label, fn in measures:
        a, b = fn(lo), fn(hi)
        verdict = "不变" if a == b else ("变大" if b > a else "变小")
        options.append((key, label, f"h = {lo} 时是 {a:,}，h = {hi} 时是 {b:,}：{verdict}。"))
        if a == b:
            answer.add(key)
    explanation = (
        f"解析：d_model = {d} 时，h 从 {lo} 拖到 {hi}：\n"
        + "\n".join(f"· {label}：{why}" for _, label, why in options)
        + "\n参数量与矩阵乘法守恒，因为 h × d_k = d_model；随 h 增长的是 softmax 的工作量和注意力图的数量，"
        "变小的是每个头的宽度。"
    )
    return Question(
        "S5",
        "第 5 节",
        "multi",
        f"S5　在第 5 节的实验台上，把头数 h 从 {lo} 拖到 {hi}（d_model = {d}），下面哪些量保持不变？（多选）",
        explanation,
        key=ChoiceKey(tuple(options), frozenset(answer), "参数量和矩阵乘法守恒；softmax 的工作量与头数成正比。"
        ),
    )


@declare("S6")
def _s6() -> Question:
    """§6's Chinese pronoun-head question, declared as data beside the experiment it asks about."""
    from ..pronoun_heads_question import QUESTION as q

    return Question(
        q["id"], q["section"], q["kind"], f"{q['id']}　{q['prompt']}", q["explanation"],
        key=ChoiceKey(tuple(q["options"]), frozenset(q["answer"]), q["right_line"]),
    )  # fmt: skip


def _table_a_label(row) -> str:
    return f"h = {row['h']}，d_k = {row['d_k']}"


@declare("S7")
def _s7() -> Question:
    f = facts()
    rows = f["table_a"]
    best_bleu = max(r["bleu"] for r in rows)
    best = [r for r in rows if r["bleu"] == best_bleu]
    single = next(r for r in rows if r["h"] == 1)
    drop = round(best_bleu - single["bleu"], 1)
    keys = "ABCDEFG"
    options, answer = [], set()
    for key, row in zip(keys, sorted(rows, key=lambda r: r["h"])):
        why = f"BLEU {row['bleu']}，比最高的 {best_bleu} 低 {round(best_bleu - row['bleu'], 1)}。"
        if row["bleu"] == best_bleu:
            answer.add(key)
            why = f"BLEU {row['bleu']}，并列最高。"
        options.append((key, _table_a_label(row), why))
    ppl_best = min(best, key=lambda r: r["ppl"])
    by_h = sorted(rows, key=lambda r: r["h"])
    explanation = (
        f"解析：表 3 的 base 行与 (A) 行（d_model = {f['d']}，h × d_k 固定，计算量不变）：\n"
        + "\n".join(f"· {_table_a_label(r)}：BLEU {r['bleu']}，PPL {r['ppl']}" for r in by_h)
        + f"\nBLEU 最高的是 {'、'.join(_table_a_label(r) for r in best)}（并列 {best_bleu}），"
        f"困惑度 PPL 以 {_table_a_label(ppl_best)} 的 {ppl_best['ppl']} 略低。单头比最好的设置低 {drop} BLEU；"
        "头太多时又会下滑。\n严格来说：这些是开发集上的单次运行，论文没有报告方差，0.1 的差别说明不了谁更好；"
        "结论是「适中的头数最好，太少和太多都差」，而不是「某一个 h 一定最好」。"
    )
    return Question(
        "S7",
        "第 7 节",
        "multi",
        "S7　对照第 7 节的论文表 3（base 行和 (A) 行），按 BLEU，哪些设置最好？（多选：有并列）",
        explanation,
        key=ChoiceKey(
            tuple(options), frozenset(answer),
            f"{'、'.join(_table_a_label(r) for r in best)} 并列 BLEU {best_bleu}；单头低 {drop}。",
        ),
    )  # fmt: skip


@declare("S7b")
def _s7b() -> Question:
    f = facts()
    d = f["d"]
    rows = f["table3"]
    h32 = max((r for r in rows if r["row"] == "A"), key=lambda r: r["h"])
    narrow_b = next(r for r in rows if r["row"] == "B" and r["d_k"] == h32["d_k"])
    base = next(r for r in rows if r["row"] == "base")
    params_same = f["parameters"](d, h32["h"]) == f["parameters"](d, base["h"])
    n = N_FLOPS_EXAMPLE
    matmul_same = f["count"](n, d, h32["h"]).matmul_total == f["count"](n, d, base["h"]).matmul_total
    explanation = (
        f"解析：h = {h32['h']} 时每个头只有 d_k = {h32['d_k']} 维，BLEU {h32['bleu']}。"
        f"表 3 的 (B) 行在 h = {narrow_b['h']} "
        f"不变的情况下只把 d_k 缩到 {narrow_b['d_k']}，BLEU 也只有 {narrow_b['bleu']}：d_k 过窄，"
        "每个头的点积打分区分能力就不足。所以「头太多变差」很大程度上是「每个头太窄」造成的，"
        "两者在 (A) 行里是绑在一起的。"
        f"\n参数量：(A) 行所有 h 的投影参数都是 4·d_model²（{'相同' if params_same else '不同'}）；"
        f"矩阵乘法总量也{'相同' if matmul_same else '不同'}。"
    )
    options = (
        ("A", "参数量变多了，模型过拟合",
         "(A) 行的参数量与 base 相同：投影参数总是 4·d_model²，与 h 无关。"),
        ("B", "计算量变成了原来的 4 倍，训练不充分",
         "矩阵乘法总量与 h 无关（h × d_k = d_model）；只有 softmax 这类小开销随 h 增长。"),
        ("C", f"每个头只剩 d_k = {h32['d_k']} 维，太窄了；(B) 行 h = {narrow_b['h']}、d_k = {narrow_b['d_k']} 也只有 "
              f"BLEU {narrow_b['bleu']}",
         "窄 d_k 本身就会伤害效果。"),
        ("D", f"{h32['h']} 个头全都学成了一模一样的注意力模式",
         "论文没有给出这样的证据；表 3 能支持的解释是每个头太窄。"),
    )  # fmt: skip
    return Question(
        "S7b",
        "第 7 节",
        "single",
        f"S7b　表 3 里 h = {h32['h']}（d_k = {h32['d_k']}）的 BLEU 降到 {h32['bleu']}。最有根据的解释是哪一个？",
        explanation,
        key=ChoiceKey(
            options, frozenset("C"),
            f"d_k = {h32['d_k']} 太窄；(B) 行说明窄 d_k 本身就会掉分，头数多和头太窄在 (A) 行里是绑在一起的。",
        ),
    )  # fmt: skip


