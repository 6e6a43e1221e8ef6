# ruff: noqa: E501  (a table of learner answers: one answer per line reads best)
"""Free-text reading (Q1 and the §8 interview): a table of real-looking answers, each with what must be read.

Each row: (answer, kind of answer, points that must count, misconceptions that must be named). A free-text
answer is never called 「正确」: it is credited (``correct``, shown as 「要点都说到了」) only when every point
(Q1: two of three) is stated, nothing is negated or contradicted, and it is a sentence, not keywords.
"""

from __future__ import annotations

import pytest

from lesson_lib.selftest import quiz
from lesson_lib.selftest.quiz.freetext import Point, read_points

# Q1 points: 组 = 只有一组权重, 均 = 加权平均, 混 = 不同信息被混在一起
Q1_NAMES = {"组": "只有一组权重", "均": "加权平均", "混": "不同信息被混在一起"}
Q1_TABLE = [
    # right
    ("因为单头只有一组权重，输出是加权平均，不同的信息被混在一起", "right", "组均混", ()),
    ("单头对每个词只有一个 softmax 分布，输出是 Value 的加权求和，指代和语法两条线索会互相冲淡。", "right", "组均混", ()),
    ("单头只能给出一组和为 1 的权重，想看两个词就只能把权重分开，加权平均之后信息糊在一起。", "right", "组均混", ()),
    ("多头可以同时关注多个重点，而单头只有一组权重，只能做加权平均，信息被抹平。", "right", "组均混", ()),
    ("一个头只有一组注意力权重，所有信息被平均成一个向量，没法分开。", "right", "组均", ()),
    ("单头注意力的输出是加权平均，几条线索被混在同一个向量里，互相稀释。", "right", "均混", ()),
    # English and mixed
    ("A single head has one set of weights; the weighted average blurs the roles together.", "english", "组均混", ()),
    ("With one head there is only one attention distribution, so the output is an average that mixes the different "
     "cues.", "english", "组均混", ()),
    ("单头 only has one set of weights，输出是 weighted average，信息被 mix 在一起。", "mixed", "组均混", ()),
    ("One head computes a weighted sum of the values, so the pronoun cue and the syntax cue get blended.", "english",
     "均混", ()),
    # partly right
    ("输出就是把所有词做加权平均。", "partly", "均", ()),
    ("因为只有一组权重。", "partly", "组", ()),
    ("信息会被混在一起，分不清。", "partly", "混", ()),
    ("It averages the values.", "partly", "均", ()),
    # negated
    ("单头不会平均，它能同时关注多个重点", "negated", "", ("单头也能同时关注多个重点",)),
    ("单头并不是加权平均，而且它没有把信息混在一起。", "negated", "", ()),
    ("单头没有只有一组权重的限制，输出也不是平均。", "negated", "", ()),
    ("单头只有一组权重，不是加权平均。", "negated", "组", ()),
    ("single head cannot attend to several things because it does not average.", "negated", "", ()),
    ("A single head does not mix the information, it never averages.", "negated", "", ()),
    # contradicted: a known wrong claim
    ("单头可以同时关注多个重点，只是维度不够。", "contradicted", "", ("单头也能同时关注多个重点", "单头太小、维度不够")),
    ("因为单头太小了", "contradicted", "", ("单头太小、维度不够",)),
    ("单头只有一组权重，做加权平均，但它也能同时关注多个重点。", "contradicted", "均", ("单头也能同时关注多个重点",)),
    # salad
    ("平均", "salad", "", ()),
    ("平均 混 一组", "salad", "", ()),
    ("一组 权重 加权 平均 混", "salad", "", ()),
    ("weighted average mix one set", "salad", "", ()),
    # nothing to credit
    ("不知道", "none", "", ()),
    ("The output consumes the values and gets closer to the answer.", "none", "", ()),  # sum ⊄ consumes, lose ⊄ closer
    ("单头注意力很好，没有任何问题。", "none", "", ()),
]

# interview points ①②③
IV_TABLE = [
    # right
    ("单头只有一组权重，加权平均会抹平不同角色；多头把 512 维投影到 8 个 64 维子空间，总计算量相近；但头太多 d_k 过窄，"
     "表3 里 BLEU 下滑。", "right", "①②③", ()),
    ("单头做加权平均，指代与句法会互相冲淡；多头投影到 h 个子空间，由于 h × d_k = d_model，乘法次数不变；头太多时每个头"
     "太窄，表 3 的 BLEU 掉了。", "right", "①②③", ()),
    ("单头只有一组权重，加权平均会抹平信息；多头拆成子空间，算力守恒；头数要适中，太多时 d_k 过窄。", "right", "①②③", ()),
    ("单头的问题是平均；多头拆开算但成本一样；头不是越多越好。", "right", "①②③", ()),
    ("单头会把信息平均掉，多头切成 h 份各算各的，计算量和单头差不多，不过头数并非越多越好，太多了每个头太窄。", "right",
     "①②③", ()),
    # English and mixed
    ("Averaging in one head blurs roles; split into subspaces at similar cost; too many heads are too narrow.", "english",
     "①②③", ()),
    ("A single head averages everything into one vector so roles get mixed; multi-head projects into h subspaces of "
     "size d_k, and since h·d_k = d_model the compute stays about the same; but too many heads make each head too "
     "narrow and BLEU drops (Table 3).", "english", "①②③", ()),
    ("单头 averaging 会 blur 信息；multi-head split 成 subspace，cost 差不多；too many heads 会 narrow。", "mixed", "①②③", ()),
    ("One head mixes everything. Splitting into subspaces keeps the cost the same.", "partly", "①②", ()),
    # partly right
    ("单头的加权平均会把指代和句法的信息抹平。", "partly", "①", ()),
    ("用投影把 d_model 拆成 h 个 d_k 维子空间，h×d_k=d_model，所以计算量和单头相近。", "partly", "②", ()),
    ("头数不是越多越好，表 3 里 32 个头每个太窄，BLEU 下降。", "partly", "③", ()),
    ("多头注意力让模型在不同的表示子空间里同时关注不同位置的信息；单头会因为平均化而抑制这种能力；头数不是越多越好，"
     "太多时每个头的表达力变弱。", "partly", "①③", ()),  # the 「八股」 answer: no word on compute
    ("多头把 d_model 拆成 8 个子空间。", "partly", "", ()),  # splitting without the cost is not ②
    # negated
    ("单头没有平均的问题，多头也不用拆子空间。", "negated", "", ()),
    ("单头不会平均化，它看得到全部维度。", "negated", "", ()),
    ("Splitting into heads does not keep the cost the same, and one head does not average.", "negated", "", ()),
    ("头数不一定越多越好，但单头并不会把信息混在一起。", "negated", "③", ()),
    # contradicted by a known wrong claim
    ("单头不会平均化，它看得到全部维度。多头的算力不守恒，比单头贵 8 倍。头数越多越好，没有上限。", "contradicted", "",
     ("越多越好", "算力翻倍", "不守恒")),
    ("头越多越好", "contradicted", "", ("越多越好",)),
    ("多头把 d_model 切成 8 个子空间，算力翻了 8 倍，但效果更好；单头会把信息平均掉。头数越多越好。", "contradicted", "①",
     ("越多越好", "算力翻倍")),
    ("单头只有一组权重，加权平均会抹平信息；多头拆成子空间，计算量相近；头数越多越好。", "contradicted", "①②", ("越多越好",)),
    ("单头只有一组权重，加权平均会抹平信息；多头拆成子空间，但计算量比单头大 8 倍；头数太多会变差。", "contradicted", "①③",
     ("算力翻倍",)),
    ("单头只有一组权重会把信息混在一起。多头参数更多，所以更强。", "contradicted", "①", ("参数变多",)),
    ("The more heads the better, and one head is fine.", "contradicted", "", ("越多越好",)),
    ("多头更贵，但是效果好：单头会把信息平均掉，子空间多了表达力强，所以头数越多越好。", "contradicted", "①",
     ("越多越好", "不守恒")),
    # salad
    ("混 维度 512 32", "salad", "", ()),
    ("512 64 8 子空间 平均 bleu", "salad", "", ()),
    ("平均 子空间 相近 太多", "salad", "", ()),
    ("average subspace cost same too many", "salad", "", ()),
    # nothing to credit
    ("头数是不是越多越好？我不知道。", "none", "", ()),  # the question asked back is not a claim
    ("This layer consumes the input and gets closer to the output.", "none", "", ()),
]


def _point_names(letters: str, names: dict[str, str]) -> set[str]:
    return {names[ch] for ch in letters}


@pytest.mark.parametrize(("answer", "kind", "points", "claims"), Q1_TABLE, ids=[f"Q1-{r[1]}-{i}" for i, r in
                                                                                enumerate(Q1_TABLE)])
def test_q1_table(answer, kind, points, claims):
    fb = quiz.check("Q1", answer)
    assert set(fb.covered) == _point_names(points, Q1_NAMES), fb.message
    assert set(fb.misconceptions) == set(claims), fb.message
    assert fb.correct is (kind in ("right", "english", "mixed")), fb.message
    assert fb.message.startswith(quiz.REVIEW) and "正确" not in fb.message and "参考答案" in fb.message
    for claim in claims:
        assert f"可能的误解「{claim}」" in fb.message
    if kind == "salad":
        assert "一串关键词" in fb.message


IV_NAMES = {p.name[0]: p.name for p in quiz.INTERVIEW_POINTS}


@pytest.mark.parametrize(("answer", "kind", "points", "claims"), IV_TABLE, ids=[f"IV-{r[1]}-{i}" for i, r in
                                                                                enumerate(IV_TABLE)])
def test_interview_table(answer, kind, points, claims):
    fb = quiz.interview_check(answer)
    assert set(fb.covered) == _point_names(points, IV_NAMES), fb.message
    assert set(fb.misconceptions) == set(claims), fb.message
    assert fb.correct is (kind in ("right", "english", "mixed")), fb.message
    assert f"覆盖了 {len(points)} / 3" in fb.message and "正确" not in fb.message and "参考答案" in fb.message
    assert fb.show_explanation and fb.explanation.startswith("参考答案")
    for claim in claims:
        assert f"可能的误解「{claim}」" in fb.message


def test_the_table_is_big_and_varied():
    rows = Q1_TABLE + IV_TABLE
    assert len(rows) >= 60
    assert {kind for _, kind, _, _ in rows} >= {"right", "partly", "negated", "contradicted", "salad", "english",
                                                "mixed"}  # fmt: skip


def test_point_three_lists_no_misconception_and_512_alone_is_not_point_two():
    third = quiz.INTERVIEW_POINTS[2]
    synonyms = [s for group in third.groups for s in group]
    assert "越多越好" not in synonyms and "32" not in synonyms
    second = quiz.INTERVIEW_POINTS[1]
    assert all("512" not in s and s not in ("d_model", "维度") for group in second.groups for s in group)
    assert not quiz.interview_check("多头把 512 维拆成 8 个 64 维，用的是 512。").covered


@pytest.mark.parametrize("word", ["consumes", "closer", "mixture-free", "summary", "costume", "splitter"])
def test_english_keywords_match_whole_words_only(word):
    point = Point("x", "", (("sum", "lose", "mix", "cost", "split"),))
    assert read_points(f"The model {word} the values and moves on to the next step.", (point,)).covered == ()
    assert read_points("The model takes the sum of the values and moves on.", (point,)).covered == ("x",)


@pytest.mark.parametrize(
    ("text", "negated"),
    [("单头不会平均", True), ("单头没有平均", True), ("单头并非平均", True), ("单头无法平均", True), ("不是平均", True),
     ("单头会平均", False), ("不同的词被平均", False), ("不仅平均，还会混合", False), ("it does not average", True),
     ("it never averages", True), ("it averages", False)],
)  # fmt: skip
def test_negation_cues(text, negated):
    point = Point("均", "", (("平均", "averag*"),))
    reading = read_points(text + "，所以信息就这样被处理了。", (point,))
    assert (reading.negated == ("均",)) is negated and (reading.covered == ("均",)) is not negated
