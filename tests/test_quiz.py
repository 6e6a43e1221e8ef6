"""The self-test's answer checking: many learner inputs per question, odd strings, and no execution of learner text."""

from __future__ import annotations

import builtins
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import CJK
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lesson_lib import paper
from lesson_lib.kernel.attention import head_width
from lesson_lib.kernel.flops import count
from lesson_lib.selftest import quiz

ROOT = Path(__file__).resolve().parents[1]
D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
D_K = head_width(D, H)


@pytest.fixture(autouse=True)
def strict_checking(monkeypatch):
    """Without the safety net a bug in a checker raises here instead of hiding behind a generic message."""
    monkeypatch.setattr(quiz, "_SAFETY_NET", False)


# (question, answer, expected correct?, a fragment the message must contain)
CASES = [
    # Q1 free text: key concepts with Chinese and English synonyms
    ("Q1", "因为单头只有一组权重，输出是加权平均，不同的信息被混在一起", True, "只有一组权重"),
    ("Q1", "一个 softmax 分布做加权求和，几条线索互相冲淡", True, "加权平均"),
    ("Q1", "A single head has one set of weights; the weighted average blurs the roles together.", True, "加权平均"),
    ("Q1", "平均", False, "一串关键词"),
    ("Q1", "因为单头太小了", False, "单头太小"),
    ("Q1", "单头不会平均，它能同时关注多个重点", False, "单头也能同时关注多个重点"),
    # Q2: 64 in every spelling the issue lists
    ("Q2", "64", True, "64"),
    ("Q2", "６４", True, "64"),
    ("Q2", "64维", True, ""),
    ("Q2", "d_k = 64", True, ""),
    ("Q2", "d_k=d_v=64", True, ""),
    ("Q2", "dk = dv = 64", True, ""),
    ("Q2", "d_{k} = d_{v} = 64", True, ""),
    ("Q2", "ｄ＿ｋ＝６４", True, ""),
    ("Q2", "512/8", True, ""),
    ("Q2", "512 ÷ 8 = 64", True, ""),
    ("Q2", "d_model / h", True, ""),
    ("Q2", "64。", True, ""),
    ("Q2", "64!", True, ""),
    ("Q2", "64.0", True, ""),
    ("Q2", "  64  \n", True, ""),
    ("Q2", "d_k = 64, d_v = 64", True, ""),
    ("Q2", "都是 64 维。", True, ""),
    ("Q2", "8 个头，每个头 64 维", True, ""),
    ("Q2", "六十四", True, ""),
    ("Q2", "d_model = 512, h = 8, d_k = 512/8 = 64", True, ""),
    ("Q2", "32", False, "h = 16"),
    ("Q2", "128", False, "h = 4"),
    ("Q2", "512", False, "题目给出的条件"),
    ("Q2", "d_k = 512", False, "d_model"),
    ("Q2", "8", False, "题目给出的条件"),
    ("Q2", "4096", False, "除法"),
    ("Q2", "512*8", False, "除法"),
    ("Q2", "d_k = 64, d_v = 512", False, "d_model"),
    ("Q2", "512/8 = 60", False, "两边并不相等"),
    ("Q2", "65", False, "d_model / h"),
    ("Q2", "不知道", False, "没有找到数字"),
    # the adversarial pass: right answers once misread, wrong answers once accepted
    ("Q2", "d_k=64 d_v=64", True, ""),
    ("Q2", "٦٤", True, ""),  # Arabic-Indic digits
    ("Q2", "६४", True, ""),  # Devanagari digits
    ("Q2", "d_k 不是 512，而是 64", True, ""),
    ("Q2", "不是 64", False, "恰好就是答案"),
    ("Q2", "d_k 并非 64", False, "恰好就是答案"),
    ("Q2", "不是 512", False, "不是什么"),
    # Q3: the algebraic relation in the usual notations
    ("Q3", "512n^2", False, "单头的一边"),
    ("Q3", "512n²", False, "两边的关系"),
    ("Q3", "512 n ^ 2", False, "单头的一边"),
    ("Q3", "512 n 的平方", False, "单头的一边"),
    ("Q3", "512n² = 512n²", False, "单头的一边"),
    ("Q3", "8 · 64 n 的平方 = 512 n 的平方", True, "h × d_k = d_model"),
    ("Q3", "8·64·n² = 512n²", True, ""),
    ("Q3", "8 × (n·64·n)", False, "再写出单头"),
    ("Q3", "8 × (n·64·n) = n·512·n", True, ""),
    ("Q3", "8*(n*64*n) = n*512*n", True, ""),
    ("Q3", "8 x 64 x n^2 = 512 x n^2", True, ""),
    ("Q3", "8*64*n**2", False, "再写出单头"),
    ("Q3", "8*64*n**2 = 512*n**2", True, ""),
    ("Q3", "８・６４ｎ２", False, "8"),  # full-width "２" after n is not an exponent: n·2 is not n²
    ("Q3", "h·d_k·n² = d_model·n²", True, ""),
    ("Q3", "单头：n·512·n = 512n²；8 头：8·(n·64·n) = 512n²", True, ""),
    ("Q3", "因为 8 个头 × 64 维 × n² = 512n²，所以一样", True, ""),
    ("Q3", "2·512n² = 1024n²", False, "单头的一边"),
    ("Q3", "2 · 8 · 64n² = 2 · 512n²", True, "weights × V"),
    ("Q3", "64n²", False, "一个头"),
    ("Q3", "4096n^2", False, "d_k = 64"),
    ("Q3", "(n×512)×(512×n)", False, "矩阵的形状"),
    ("Q3", "512n", False, "n 只有一次方"),
    ("Q3", "512n^3", False, "次数太高"),
    ("Q3", "8·64n² = 4096n²", False, "等式两边不相等"),
    ("Q3", "8 × 64 = 512", False, "维度守恒"),
    ("Q3", "一样多", False, "用 n"),
    ("Q3", "n^99", False, "指数 99 太大"),
    ("Q3", "9^9^9", False, "太大"),
    ("Q3", "n/n", False, "除以一个常数"),
    ("Q3", "512n²/0", False, "除以 0"),
    ("Q3", "(" * 30 + "n" + ")" * 30, False, "套得太深"),
    ("Q3", "(512n²", False, "括号没有配对"),
    ("Q3", "512n² +", False, "少写了一个数"),
    # Q4 single choice
    ("Q4", "B", True, "W^O"),
    ("Q4", "b", True, ""),
    ("Q4", "选 B。", True, ""),
    ("Q4", "Ｂ", True, ""),
    ("Q4", "A", False, "加权平均"),
    ("Q4", "D", False, "特征维度"),
    ("Q4", "BC", False, "只有一个"),
    ("Q4", "Z", False, "A、B、C、D"),
    # Q5 multiple choice
    ("Q5", {"A", "B", "C"}, True, "自发"),
    ("Q5", "ABC", True, ""),
    ("Q5", "a, b, c", True, ""),
    ("Q5", ["C", "B", "A"], True, ""),
    ("Q5", "AB", False, "没有选"),
    ("Q5", "ABCD", False, "没有德语"),
    ("Q5", "ABCE", False, "自发"),
    ("Q5", "我选 A 和 C，B 不对", False, "A、C 选得对"),
    ("Q5", "A、B、C，不选 D 和 E", True, ""),
    ("Q5", "I choose A, B and C", True, ""),
    ("Q5", "A" * 300, False, "太长"),
    # S2
    ("S2", {"A", "C"}, True, ""),
    ("S2", "ABC", False, "d_model"),
    ("S2", "ACD", False, "分不回来"),
    # S3 shape
    ("S3", "(8, 12, 64)", True, ""),
    ("S3", "8×12×64", True, ""),
    ("S3", "[8 12 64]", True, ""),
    ("S3", "(h, n, d_k)", True, ""),
    ("S3", "(h, n, d_k) = (8, 12, 64)", True, ""),
    ("S3", "(h, n, d_k) = (12, 8, 64)", False, "不是同一个形状"),
    ("S3", "(12, 8, 64)", False, "是不是忘了 transpose"),
    ("S3", "(8, 64, 12)", False, "Kᵀ"),
    ("S3", "(12, 512)", False, "拆分之前"),
    ("S3", "(8, 12, 512)", False, "d_k"),
    ("S3", "形状", False, "没有找到"),
    # S3b
    ("S3b", "C", True, "W^O"),
    ("S3b", "B", False, "各自"),
    # S4 number with tolerance: the matmul total at h = 16
    ("S4", "54988800", True, "h = 8"),
    ("S4", "54,988,800", True, ""),
    ("S4", "5.5e7", True, ""),
    ("S4", "5.5×10^7", True, ""),
    ("S4", "约 5500 万次", True, ""),
    ("S4", "5498万8800", True, ""),
    ("S4", "5498 万 8800 次", True, ""),
    ("S4", "54 988 800", True, ""),
    ("S4", "54\u2009988\u2009800", True, ""),  # thin spaces
    ("S4", "五千四百九十八万八千八百", True, ""),
    ("S4", "0.55亿", True, ""),
    ("S4", "4nd² + 2n²d", True, ""),
    ("S4", "4*50*512^2 + 2*50^2*512", True, ""),
    ("S4", "1280000", False, "只是打分"),
    ("S4", "2560000", False, "Q/K/V 投影与 W^O"),
    ("S4", "52428800", False, "漏了打分与 weights × V"),
    ("S4", "109977600", False, "按比例"),
    ("S4", "5e7", False, "很接近"),
    # S4b softmax exps grow with h
    ("S4b", "40000", True, "相近"),
    ("S4b", "4万", True, ""),
    ("S4b", "四万", True, ""),
    ("S4b", "40 000", True, ""),
    ("S4b", "40000 (h=16)", True, ""),
    ("S4b", "40000，会随 h 增长", True, ""),
    ("S4b", "40000，不会随 h 变化", False, "随 h 成正比增长"),
    ("S4b", "40000，和 h 无关", False, "随 h 成正比增长"),
    ("S4b", "h·n²", True, ""),
    ("S4b", "16 × 50²", True, ""),
    ("S4b", "20000", False, "h = 8"),
    ("S4b", "2500", False, "h = 1"),
    # S5
    ("S5", "AB", True, ""),
    ("S5", "ABC", False, "变大"),
    ("S5", "ABD", False, "变小"),
    # S6: §6's Chinese pronoun head (declared in pronoun_heads_question)
    ("S6", "B", True, "最小对比"),
    ("S6", "A", False, "诱饵头"),
    ("S6", "D", False, "softmax"),
    # S7 / S7b: Table 3
    ("S7", "CD", True, "25.8"),
    ("S7", "C", False, "没有选"),
    ("S7", "CDE", False, "25.4"),
    ("S7b", "C", True, "d_k"),
    ("S7b", "A", False, "4·d_model²"),
    ("S7b", "B", False, "与 h 无关"),
]


@pytest.mark.parametrize(("qid", "answer", "expected", "fragment"), CASES)
def test_learner_inputs(qid, answer, expected, fragment):
    fb = quiz.check(qid, answer)
    assert fb.correct is expected, fb.message
    assert fragment in fb.message
    if quiz.question(qid).kind == "text":  # free text is read, never judged 正确
        assert fb.message.startswith(quiz.REVIEW) and not fb.judged
    else:
        assert fb.message.startswith(quiz.RIGHT if expected else quiz.WRONG)
    assert fb.question_id == qid and fb.explanation.startswith("解析")


def test_every_question_is_covered_by_the_table_right_and_wrong():
    kinds = {q.kind for q in quiz.questions().values()}
    assert kinds >= {"single", "multi", "number", "expression", "text"}
    for qid in quiz.question_ids():
        results = {expected for q, _, expected, _ in CASES if q == qid}
        assert results == {True, False}, f"{qid} needs right and wrong cases"
    # the lesson's five questions plus at least one for each of sections 2, 3, 4, 5 and 7
    assert {"Q1", "Q2", "Q3", "Q4", "Q5"} <= set(quiz.question_ids())
    sections = {q.section for q in quiz.questions().values() if q.id.startswith("S")}
    assert sections >= {f"第 {k} 节" for k in (2, 3, 4, 5, 7)}


def test_right_and_wrong_words_never_mix():
    """The browser test looks for 正确 and 还不对: neither may appear in prompts, choices or 解析."""
    for q in quiz.questions().values():
        texts = [q.prompt, q.explanation, q.placeholder, *(label for _, label in q.choices)]
        assert not any("正确" in t or "还不对" in t for t in texts), q.id
    for qid, answer, expected, _ in CASES:
        message = quiz.check(qid, answer).message
        if quiz.question(qid).kind == "text":
            assert "还不对" not in message and "正确" not in message, message
        else:
            assert ("还不对" in message) is not expected and message.count("正确") == int(expected)


@pytest.mark.parametrize("qid", ["Q1", "Q2", "Q3", "Q4", "Q5", "S3", "S4"])
@pytest.mark.parametrize("answer", ["", "   ", "\n\t", None, set(), []])
def test_blank_answers_are_not_attempts(qid, answer):
    fb = quiz.check(qid, answer)
    assert fb.blank and not fb.correct and "还没有作答" in fb.message


ODD = [
    "a" * 10_000,
    "６４" * 5_000,
    "ﷺ" * 1_999,  # one character NFKC-expands to 18
    "\x00\x01\x1b[31m64\x7f",
    "\ud800\udfff",
    "64\u202e\u200b\u0301",
    "🙂" * 50,
    "9" * 5_000,
    "1e999",
    "(" * 500,
    ")" * 500,
    "=" * 100,
    "n^-1",
    "0^-1",
    "0^0",
    "-" * 200 + "1",
    "2^2^2^2^2",
    "NaN",
    "inf",
    "d_k=",
    "<script>alert(1)</script>",
    "'; DROP TABLE students; --",
    "1" + "0" * 40 + "*" + "1" + "0" * 40,
    ",".join(["64"] * 500),
    "64" + "+0" * 200,
]


@pytest.mark.parametrize("answer", ODD, ids=range(len(ODD)))
def test_odd_strings_give_feedback(answer):
    for qid in quiz.question_ids():
        fb = quiz.check(qid, answer)
        assert isinstance(fb, quiz.Feedback) and isinstance(fb.correct, bool) and fb.message
    fb = quiz.interview_check(answer)
    assert isinstance(fb, quiz.Feedback) and fb.message


@pytest.mark.parametrize("qid", ["Q1", "Q2", "Q3", "Q4", "Q5", "S3"])
def test_every_kind_caps_the_length(qid):
    fb = quiz.check(qid, "A" * 1_000_000)
    assert not fb.correct and "太长" in fb.message and "1,000,000" in fb.message


def test_long_answers_are_refused_kindly():
    fb = quiz.check("Q2", "6" * 10_000)
    assert not fb.correct and "太长" in fb.message and "10,000" in fb.message


def test_non_string_answers():
    assert quiz.check("Q2", 64).correct
    assert quiz.check("Q2", 64.0).correct
    assert not quiz.check("Q4", 3).correct
    assert not quiz.check("Q5", {"A", "Q"}).correct

    class Broken:
        def __str__(self):
            raise RuntimeError("boom")

    assert quiz.check("Q2", Broken()).blank


MATHY = st.text(alphabet="0123456789nhdk_model+-*/^()×·÷²³=., 万千六十四 \t", max_size=80)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qid=st.sampled_from(sorted({c[0] for c in CASES})), answer=st.one_of(st.text(max_size=300), MATHY))
def test_any_string_yields_feedback(qid, answer):
    fb = quiz.check(qid, answer)
    assert isinstance(fb, quiz.Feedback)
    assert isinstance(fb.correct, bool) and isinstance(fb.message, str) and fb.message
    assert fb.message.startswith((quiz.RIGHT, quiz.WRONG, quiz.REVIEW))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=400))
def test_interview_check_any_string(answer):
    fb = quiz.interview_check(answer)
    assert isinstance(fb, quiz.Feedback) and fb.message
    assert set(fb.covered) | set(fb.missing) == {p.name for p in quiz.INTERVIEW_POINTS} or fb.blank
    assert "正确" not in fb.message


@settings(max_examples=150, deadline=None)
@given(a=st.integers(-50, 50), b=st.integers(-50, 50), c=st.integers(1, 9), k=st.integers(0, 4))
def test_parser_agrees_with_polynomial_arithmetic(a, b, c, k):
    """(a·n + b)^k / c parsed equals the same polynomial built by hand; the value at n = 3 matches integers."""
    poly = quiz.parse_expression(f"({a}n + {b})^{k} / {c}")
    assert poly.value_at(3) == Fraction((3 * a + b) ** k, c)
    assert poly == (quiz.Poly.make({1: Fraction(a), 0: Fraction(b)}).power(quiz.Poly.const(k))).divide(
        quiz.Poly.const(c)
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512n²", {2: 512}),
        ("n·512·n", {2: 512}),
        ("8(n·64·n)", {2: 512}),
        ("−n² + 2n − 1", {2: -1, 1: 2, 0: -1}),
        ("-(n-1)^2", {2: -1, 1: 2, 0: -1}),
        ("2^-1 n", {1: Fraction(1, 2)}),
        ("1.5n", {1: Fraction(3, 2)}),
        ("(n+1)(n-1)", {2: 1, 0: -1}),
        ("n³", {3: 1}),
    ],
)
def test_parse_expression(text, expected):
    assert quiz.parse_expression(text).mapping() == {k: Fraction(v) for k, v in expected.items()}


@pytest.mark.parametrize("text", ["", "n 2", "2 3", "foo", "n^n", "n^0.5", "(n", "n)", "1/(n-n)", "n^13", "*", "1e"])
def test_parse_expression_errors_are_chinese(text):
    with pytest.raises(quiz.ExpressionError) as err:
        quiz.parse_expression(text)
    assert CJK.search(str(err.value))


def test_learner_text_is_never_executed(monkeypatch, tmp_path):
    """eval/exec/compile explode if called; code-looking answers still get feedback and leave no trace."""

    def explode(*args, **kwargs):
        raise AssertionError("learner text reached eval/exec/compile")

    quiz.questions()  # built before the trap is set (dataclasses use exec while classes are created)
    marker = tmp_path / "pwned"
    payloads = [
        "__import__('os').system('x')",
        f"__import__('pathlib').Path({str(marker)!r}).touch()",
        f"open({str(marker)!r}, 'w').write('64')",
        "(lambda: 64)()",
        "[].__class__.__base__.__subclasses__()",
        "64 if __import__('os').remove('/') else 64",
        "exec('x=64')",
        "eval('64')",
        "int('6' + '4')",  # 64 only if executed
        "len('x' * 64) + 0",
    ]
    results = []
    with monkeypatch.context() as trap:  # undone before asserting: pytest's own reporting uses compile
        for name in ("eval", "exec", "compile"):
            trap.setattr(builtins, name, explode)
        for text in payloads:
            results += [quiz.check(qid, text) for qid in quiz.question_ids()]
            results.append(quiz.interview_check(text))
    assert all(isinstance(fb, quiz.Feedback) and fb.message for fb in results)
    assert not marker.exists()
    assert not quiz.check("Q2", "int('6' + '4')").correct  # the digits are read, the call is not made
    assert not quiz.check("Q2", "len('x' * 64) + 0").correct


def test_numbers_come_from_lesson_lib(monkeypatch):
    """Change the paper's base model and the answer key follows: no number is typed into the questions."""
    monkeypatch.setattr(paper, "BASE_HEADS", 4)
    quiz.clear_cache()
    try:
        d_k = head_width(D, 4)
        assert "h = 4" in quiz.question("Q2").prompt
        assert quiz.check("Q2", str(d_k)).correct and not quiz.check("Q2", str(D_K)).correct
        assert quiz.check("Q3", f"4 · {d_k}n² = {D}n²").correct
        assert not quiz.check("Q3", f"{H} · {D_K}n² = {D}n²").correct
        assert quiz.check("S3", f"(4, {quiz.N_SHAPE_EXAMPLE}, {d_k})").correct
    finally:
        monkeypatch.undo()
        quiz.clear_cache()
    assert quiz.check("Q2", str(D_K)).correct


def test_answer_keys_match_the_flop_counter_and_the_kernel():
    n, h = quiz.N_FLOPS_EXAMPLE, quiz.H_FLOPS_EXAMPLE
    assert quiz.check("S4", str(count(n, D, h).matmul_total)).correct
    assert quiz.check("S4b", str(count(n, D, h).softmax_exp)).correct
    assert quiz.check("Q3", f"{H} · {D_K} n^2 = {count(1, D, H).scores}n^2").correct
    assert quiz.check("Q2", str(D_K)).correct


def test_explanations_teach_the_strict_corrections():
    q3 = quiz.question("Q3").explanation
    assert "严格来说" in q3 and f"{H} · {D_K}n² = {D}n²" in q3 and "QKᵀ" in q3 and "h·n²" in q3
    assert f"{count(quiz.N_FLOPS_EXAMPLE, D, H).softmax_exp:,}" in q3  # the softmax work that grows with h
    q5 = quiz.question("Q5").explanation
    assert all(f"第 {p} 页" in q5 for p in paper.FIGURE_PAGES.values()) and '"Law"' in q5
    assert "Σ_i head_i W^O_i" in quiz.question("Q4").explanation
    s7b = quiz.question("S7b").explanation
    assert "(B) 行" in s7b
    for qid in quiz.question_ids():
        assert quiz.question(qid).explanation.startswith("解析：")


def test_text_question_reveals_the_explanation():
    fb = quiz.check("Q1", "输出就是把所有词做加权平均。")
    assert fb.show_explanation and fb.covered == ("加权平均",) and len(fb.missing) == 2 and not fb.correct
    assert "参考答案" in fb.message


@pytest.mark.parametrize(
    ("answer", "covered"),
    [
        ("", ()),
        ("单头的加权平均会把指代和句法的信息抹平。", ("①",)),
        ("用投影把 d_model 拆成 h 个 d_k 维子空间，h×d_k=d_model，所以计算量和单头相近。", ("②",)),
        ("头数不是越多越好，表 3 里 32 个头每个太窄，BLEU 下降。", ("③",)),
        (
            "单头只有一组权重，加权平均会抹平不同角色；多头把 512 维投影到 8 个 64 维子空间，总计算量相近；"
            "但头太多 d_k 过窄，表3 里 BLEU 下滑。",
            ("①", "②", "③"),
        ),
        ("Averaging in one head blurs roles; split into subspaces at similar cost; too many heads are too narrow.",
         ("①", "②", "③")),
    ],
)  # fmt: skip
def test_interview_check_lists_points(answer, covered):
    fb = quiz.interview_check(answer)
    assert tuple(name[0] for name in fb.covered) == covered
    assert fb.correct is (len(covered) == 3)
    if answer:
        assert fb.show_explanation and fb.explanation.startswith("参考答案")
        assert f"覆盖了 {len(covered)} / 3" in fb.message and "正确" not in fb.message
        for name in fb.missing:
            assert f"还缺「{name}」" in fb.message


def test_model_answer_numbers_come_from_lesson_lib():
    text = quiz.model_answer()
    assert f"d_model = {D}" in text and f"d_k = {D_K}" in text
    assert f"{count(quiz.N_FLOPS_EXAMPLE, D, H).matmul_total:,}" in text
    assert "严格来说" in text and "相近" in text


def test_unknown_question_id():
    with pytest.raises(KeyError, match="Q1"):
        quiz.check("Q9", "64")


def test_feedback_html_is_plain_and_escaped():
    fb = quiz.Feedback(False, "还不对：<script>alert(1)</script>\n第二行")
    out = quiz.feedback_html(fb)
    assert "<script>" not in out and "&lt;script&gt;" in out and "<br>" in out
    assert " id=" not in out and "<style" not in out and "javascript" not in out.lower()


def test_notebook_asks_every_question():
    cells = (ROOT / "notebooks" / "src" / "10_self_test.md").read_text(encoding="utf-8")
    assert any(line.startswith("## 10 ") for line in cells.splitlines())
    for qid in quiz.question_ids():
        assert f'ask("{qid}")' in cells, qid
