"""The optional labs' own questions (L6… in lab_real_heads, L7… in lab_ablation), as data in the bank's types,
their numbers computed from ``lesson_lib``. A lab's ``ask`` adds them to the bank; the core's counts leave them out."""

from __future__ import annotations

from functools import partial

from lesson_lib.attention import head_width
from lesson_lib.head_stats import crowded_keys
from lesson_lib.practice import questions as bank

_D_K = head_width(64, 64)  # L7a: d_model = h = 64
_SHORT, _LONG = (crowded_keys((64,), s)[64] for s in (4.0, 200.0))  # L7b: the winner's weight at two lengths

# fmt: off
_ROWS = {  # (section, kind, prompt, explanation, answer, praise, *options), as questions._CHOICES
    "L6a": ("选做实验 · 真实模型", "single",
        "L6a　英文模型第 1 层 · 头 3 在两句话上都把约 1.00 的权重给了前一个词元。它靠什么知道谁是「前一个」？",
        "解析：打分只看向量之间的点积，对顺序是「盲」的。这个模型给每个词元加上了它的位置编码，向量里带着"
        "「我在第几个」，头才能学会「看位置比我小 1 的那个」。",
        "A", "顺序来自位置编码，打分本身不管先后。",
        ("A", "每个词元的向量里加了它的位置编码（每个位置学出来的一行向量），头学会了「看位置比我小 1 的那个」", ""),
        ("B", "注意力打分 Q Kᵀ 本身就按词元的先后排序",
         "Q Kᵀ 只是两两点积：把词元打乱，分数跟着打乱，不会按先后排好。"),
        ("C", "因果掩码只让它看前面的词元", "这是编码器，没有因果掩码：第 2 层 · 头 9 就主要看**后**一个词元。"),
        ("D", "句首的 [CLS] 告诉每个词元它在第几个",
         "[CLS] 只是一个特殊词元，很多头把它当作注意力汇，不带别的词元的位置。")),
    "L6b": ("选做实验 · 真实模型", "single",
        "L6b　its → law 得分最高的第 4 层 · 头 2 在「The river flooded the town and its streets were empty.」里"
        "把 its 的注意力主要给了 river，而 its 指的是 town。最有根据的结论是哪一个？",
        "解析：一个头在一句话上「看对了」，只说明它在这句话上有这种行为；换一句话它就看向了句首的主语 river。"
        "论文的原话也很谨慎，用的是 apparently（看起来）。",
        "A", "一句话上的好成绩要在更多句子、最小对比上验证。",
        ("A", "这个头学到的更像「its 去找前面的一个主要名词」，那常常恰好是指代对象", ""),
        ("B", "注意力权重就是模型的最终判断：模型认为 its 指 river",
         "权重只说明这个头从哪里取信息，后面的层还会继续加工。"),
        ("C", "这个头是只看位置的头", "它看的是前面的名词，不是固定的相对位置：its 到 river 的距离在两句里并不相同。"),
        ("D", "模型坏了：4 位量化让它出错", "英文模型的权重没有量化，而且这个现象在第一句上就说得通。")),
    "L7a": ("选做实验 · 表 3 (A)", "single",
        "L7a　把玩具模型改成 d_model = 64、h = 64，其余不变。最可能发生什么？",
        f"解析：d_k = 64 / 64 = {_D_K}。和 d_model = 32、h = 32 一样，每个头只有 1 维，打分对键单调，只能挑"
        "两端；配对查找要从 64 个键符号里挑任意一个，做不到。计算量和参数量都不随 h 变。",
        "A", "",
        ("A", f"每头宽度 d_k = {_D_K}：一个头只能挑键的两端，配对查找做不好；前一个、后一个仍可能学会", ""),
        ("B", f"每头宽度 d_k = {_D_K}：头越多越好，三项都学会", "头多了，每个头却窄到 1 维：配对查找挑不中中间的键。"),
        ("C", "计算量变成原来的 64 倍", "h × d_k 仍是 d_model：矩阵乘法的计算量不变（第 4 节）。"),
        ("D", "参数量变成原来的 64 倍", "W_Q、W_K、W_V、W_O 仍各是 d_model × d_model，参数量不随 h 变。")),
    "L7b": ("选做实验 · 表 3 (A)", "single",
        f"L7b　64 个键排在两维的圆上，查询指向其中一个。查询长度 × 键长度为 4 时，赢家只拿到 {_SHORT:.2f} 的权重。"
        "在两维里，怎样才能让它集中到一半以上？",
        "解析：赢家的权重取决于它比邻居高出的分数（间隔）乘上向量的长度。64 个键挤在一个圆上，间隔很小，只有把长度"
        f"乘积拉到 200 左右，赢家才拿到 {_LONG:.2f}。维度更多时，键可以彼此拉开，不需要这么长的向量。",
        "A", "",
        ("A", "让查询和键的长度变得很大（长度乘积到 200 左右）", ""),
        ("B", "把 softmax 换成更大的温度", "更大的温度让分布更平，赢家拿得更少。"),
        ("C", "什么也不用做：两维里每个键都能当赢家，赢家自然拿到大部分权重",
         f"能赢不等于赢得干脆：长度乘积 4 时赢家只拿到 {_SHORT:.2f}。"),
        ("D", "把键的数目从 64 增加到 128", "键越多挤得越紧，间隔越小，赢家拿得更少。")),
}
# fmt: on


BUILDERS = {qid: partial(bank.choice, qid, *row) for qid, row in _ROWS.items()}


def register() -> None:
    """Add the lab questions to the bank (idempotent), outside ``bank.question_ids()``: the core's counts stay."""
    bank.LAB.update(BUILDERS)


def ask(question_id: str):
    """The quiz widget for a lab question, or for a core question the lab asks again (e.g. "S7c")."""
    from lesson_lib.practice.widgets import ask as ask_widget

    register()
    return ask_widget(question_id)
