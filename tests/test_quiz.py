"""The self-test's answer checking: the adversarial table, boxes read exactly, free text never graded, no execution."""

from __future__ import annotations

import builtins
import re
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import CJK
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quiz_answers import MEANT_RIGHT, NUMBERS, SELF, TABLE

from lesson_lib import paper
from lesson_lib.attention import head_width
from lesson_lib.costs import count, parameters
from lesson_lib.practice import interview as practice_interview
from lesson_lib.practice import questions as bank
from lesson_lib.practice import quiz, render
from lesson_lib.practice.feedback import FORM, INCOMPLETE, REVIEW, RIGHT, WRONG, Feedback
from lesson_lib.practice.parse import ExpressionError, Poly, parse_expression

ROOT = Path(__file__).resolve().parents[1]
D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
D_K = head_width(D, H)
SECTION_FILES = {2: "02_averaging", 3: "03_heads", 4: "04_flops", 5: "05_head_lab", 6: "06_real_heads",
                 7: "07_ablation"}  # fmt: skip


@pytest.fixture(autouse=True)
def strict_checking(monkeypatch):
    """Without the safety net a bug in a checker raises here instead of hiding behind a generic message."""
    monkeypatch.setattr(quiz, "_SAFETY_NET", False)


def _id(row) -> str:
    return f"{row[0]}-{row[2]}-{str(row[1])[:30]}"


# ------------------------------------------------------------------------------------------ the adversarial table
@pytest.mark.parametrize(("qid", "answer", "expected", "fragment"), TABLE, ids=[_id(r) for r in TABLE])
def test_adversarial_table(qid, answer, expected, fragment):
    fb = quiz.check(qid, answer)
    assert fb.verdict == expected, fb.message
    assert fragment in fb.message, fb.message
    heads = {"right": (RIGHT,), "wrong": (WRONG,), "form": (FORM, INCOMPLETE),
             "review": (REVIEW,)}[expected]  # fmt: skip
    assert fb.message.startswith(heads) and fb.question_id == qid
    assert fb.correct is (expected == "right")  # only a right verdict is ever recorded as correct
    if expected == "form":
        assert fb.blank  # an unreadable box is not an attempt: nothing is recorded


def test_the_table_is_large_and_covers_every_question_right_and_wrong():
    assert len(TABLE) >= 200
    for qid in bank.question_ids():
        verdicts = {v for q, _, v, _ in TABLE if q == qid}
        assert verdicts == {"review"} if bank.question(qid).kind == "self" else {"right", "wrong"} <= verdicts, qid


def test_done_when_counts():
    """No wrong answer shown as correct; of the right answers to one-value questions ≤ 1 in 10 turned back."""
    right_rows = [r[:2] for r in NUMBERS if r[2] == "right"] + MEANT_RIGHT
    turned_back = [r for r in right_rows if quiz.check(*r).verdict != "right"]
    assert len(right_rows) >= 80 and len(turned_back) * 10 <= len(right_rows)
    assert all(quiz.check(*r).verdict == "form" for r in turned_back)  # turned back by asking for a form, no diagnosis
    for qid, answer, expected, _ in TABLE:
        if expected != "right":
            fb = quiz.check(qid, answer)
            assert not fb.correct and "正确" not in fb.message


def test_feedback_names_only_what_was_read():
    """A wrong box is quoted back exactly as read; an unread box is never given a value."""
    fb = quiz.check("Q2", ["64（512/8）", "不变"])
    assert "你填的是 64。" in fb.message and "4,096" not in fb.message
    fb = quiz.check("S3", "（8，12，64），不是（12，8，64）")
    assert fb.verdict == "form" and "(8, 12, 64, 12, 8, 64)" not in fb.message
    fb = quiz.check("Q3", ["$8 \\times 64 n^2$", "$512 n^2$"])
    assert fb.correct and "不相等" not in fb.message
    fb = quiz.check("S4b", ["40000", "不会"])
    assert not fb.correct and "「exp 次数」填得对" in fb.message and "随 h 成正比增长" in fb.message


@pytest.mark.parametrize("qid", ["Q2", "Q3", "S3", "S4", "S4b", "S4c"])
def test_forms_read_each_box_on_its_own(qid):
    q = bank.question(qid)
    assert q.kind == "form" and q.key.boxes
    for box in q.key.boxes:
        assert CJK.search(box.label)  # every box has a Chinese visible label
        assert "正确" not in box.label


# ------------------------------------------------------------------------------------------ blanks, odd input
@pytest.mark.parametrize("qid", ["Q1", "Q2", "Q3", "Q4", "Q5", "S3", "S4"])
@pytest.mark.parametrize("answer", ["", "   ", "\n\t", None, set(), [], {}])
def test_blank_answers_are_not_attempts(qid, answer):
    fb = quiz.check(qid, answer)
    assert fb.blank and not fb.correct and "还没有作答" in fb.message


ODD = [
    "a" * 10_000, "６４" * 5_000, "ﷺ" * 1_999, "\x00\x01\x1b[31m64\x7f", "\ud800\udfff", "64\ud800",
    "64\u202e\u200b\u0301", "🙂" * 50, "9" * 5_000, "1e999", "(" * 500, ")" * 500, "=" * 100, "n^-1", "0^-1",
    "0^0", "-" * 200 + "1", "2^2^2^2^2", "NaN", "inf", "d_k=", "<script>alert(1)</script>",
    "'; DROP TABLE students; --", "1" + "0" * 40 + "*" + "1" + "0" * 40, ",".join(["64"] * 500), "64" + "+0" * 200,
    "\\frac{\\frac{1}{2}}{3}", "$$$$", "5千千万", "万", "亿亿",
]  # fmt: skip


@pytest.mark.parametrize("answer", ODD, ids=range(len(ODD)))
def test_odd_strings_give_feedback(answer):
    for qid in bank.question_ids():
        q = bank.question(qid)
        answers = [answer] if q.kind != "form" else [[answer] * len(q.key.boxes), answer]
        for a in answers:
            fb = quiz.check(qid, a)
            assert isinstance(fb, Feedback) and isinstance(fb.correct, bool) and fb.message
    assert practice_interview.interview_check(answer).message


def test_every_box_caps_the_length():
    fb = quiz.check("Q2", ["6" * 10_000, "不变"])
    assert fb.verdict == "form" and "太长" in fb.message and "10,000" in fb.message
    assert quiz.check("Q4", "A" * 1_000_000).verdict == "form"
    fb = quiz.check("Q1", "平均" * 1_000_000)
    assert fb.verdict == "review" and "只看了前" in fb.message


def test_non_string_answers():
    assert quiz.check("Q2", {"d_k": 32, "params": "不变"}).correct
    assert quiz.check("Q2", (32.0, "不变")).correct
    assert quiz.check("S3", (8, 12, 64)).correct
    assert quiz.check("Q4", 3).verdict == "form"
    assert quiz.check("Q5", {"A", "Q"}).verdict == "form"

    class Broken:
        def __str__(self):
            raise RuntimeError("boom")

    assert quiz.check("Q2", [Broken(), "不变"]).verdict == "form"
    assert quiz.check("Q4", Broken()).blank


BOXY = st.text(alphabet="0123456789nhdk_model+-*/^()×·÷²³=., 万千六十四 \t$\\{}", max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qid=st.sampled_from(sorted(bank.question_ids())), a=st.one_of(st.text(max_size=200), BOXY),
       b=st.one_of(st.text(max_size=50), BOXY))  # fmt: skip
def test_any_input_yields_feedback(qid, a, b):
    q = bank.question(qid)
    fb = quiz.check(qid, [a, b, a] if q.kind == "form" else a)
    assert isinstance(fb, Feedback) and isinstance(fb.correct, bool) and fb.message
    assert fb.message.startswith((RIGHT, WRONG, FORM, INCOMPLETE, REVIEW))


# ------------------------------------------------------------------------------------------ the box reader
@settings(max_examples=150, deadline=None)
@given(a=st.integers(-50, 50), b=st.integers(-50, 50), c=st.integers(1, 9), k=st.integers(0, 4))
def test_parser_agrees_with_polynomial_arithmetic(a, b, c, k):
    """(a·n + b)^k / c parsed equals the same polynomial built by hand; the value at n = 3 matches integers."""
    poly = parse_expression(f"({a}n + {b})^{k} / {c}")
    assert poly.value_at(3) == Fraction((3 * a + b) ** k, c)
    assert poly == (Poly.make({1: Fraction(a), 0: Fraction(b)}).power(Poly.const(k))).divide(
        Poly.const(c)
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [("64", 64), ("６４", 64), ("64维", 64), ("六十四", 64), ("6.4万", 64_000), ("5.5千万", 55_000_000),
     ("五千五百万", 55_000_000), ("54,988,800", 54_988_800), ("5.5e7", 55_000_000), ("512/8", 64), ("d_k = 64", 64),
     ("512/8 = 64", 64), ("64（512/8）", 64), ("\\frac{512}{8}", 64), ("$8 \\times 8$", 64), ("2^6", 64),
     ("约 64", 64), ("八", 8), ("4×10⁴", 40_000)],
)  # fmt: skip
def test_read_value(text, value):
    from lesson_lib.practice.parse import read_value

    got, why = read_value(text, {}, ("d_k",))
    assert why == "" and got == Poly.const(value)


@pytest.mark.parametrize("text", ["不是64", "64，不是512", "64 64", "x", "64——才怪", "512/8 = 60", "64(512/9)", "一样"])
def test_read_value_refuses_with_a_chinese_reason(text):
    from lesson_lib.practice.parse import read_value

    got, why = read_value(text, {}, ("d_k",))
    assert got is None and CJK.search(why)


@pytest.mark.parametrize("text", ["", "n 2", "2 3", "foo", "n^n", "n^0.5", "(n", "n)", "1/(n-n)", "n^13", "*", "1e"])
def test_parse_expression_errors_are_chinese(text):
    with pytest.raises(ExpressionError) as err:
        parse_expression(text)
    assert CJK.search(str(err.value))


def test_learner_text_is_never_executed(monkeypatch, tmp_path):
    """eval/exec/compile explode if called; code-looking answers still get feedback and leave no trace."""

    def explode(*args, **kwargs):
        raise AssertionError("learner text reached eval/exec/compile")

    bank.questions()  # built before the trap is set (dataclasses use exec while classes are created)
    practice_interview.interview_rubric()
    marker = tmp_path / "pwned"
    payloads = [
        "__import__('os').system('x')", f"__import__('pathlib').Path({str(marker)!r}).touch()",
        f"open({str(marker)!r}, 'w').write('32')", "(lambda: 32)()", "[].__class__.__base__.__subclasses__()",
        "exec('x=32')", "eval('32')", "int('3' + '2')", "len('x' * 32) + 0",
    ]  # fmt: skip
    results = []
    with monkeypatch.context() as trap:  # undone before asserting: pytest's own reporting uses compile
        for name in ("eval", "exec", "compile"):
            trap.setattr(builtins, name, explode)
        for text in payloads:
            for qid in bank.question_ids():
                q = bank.question(qid)
                results.append(quiz.check(qid, [text] * len(q.key.boxes) if q.kind == "form" else text))
            results.append(practice_interview.interview_check(text))
    assert all(isinstance(fb, Feedback) and fb.message for fb in results)
    assert not marker.exists()
    assert not quiz.check("Q2", ["int('3' + '2')", "不变"]).correct  # the call is not made
    assert not quiz.check("Q2", ["len('x' * 32) + 0", "不变"]).correct


# ------------------------------------------------------------------------------------------ free text
@pytest.mark.parametrize(("qid", "answer", "_expected", "_fragment"), SELF)
def test_free_text_is_never_graded(qid, answer, _expected, _fragment):
    fb = quiz.check(qid, answer)
    assert not fb.correct and not fb.judged and fb.verdict == "review" and fb.show_explanation
    assert "正确" not in fb.message and "还不对" not in fb.message
    for word in re.findall(r"「([^「」]+)」", fb.message.split("\n", 1)[-1]):
        if word not in ("记录自评",):
            assert word.casefold() in answer.casefold(), word  # a hint names only words in the answer


def test_self_assessment_is_recorded_as_such():
    q1 = bank.question("Q1")
    names = [p.name for p in q1.key.points]
    fb = quiz.assess("Q1", names[:2] + ["not a point"])
    assert fb.covered == tuple(names[:2]) and not fb.correct and fb.verdict == "self"
    assert f"2 / {len(names)}" in fb.message and "正确" not in fb.message
    assert practice_interview.interview_self_assess([]).covered == ()
    with pytest.raises(KeyError):
        quiz.assess("Q2", [])


def test_q1_premise_is_fixed():
    """One head can spread its weight; what it cannot do is keep the threads apart."""
    q1 = bank.question("Q1")
    assert "无法同时关注多个" not in q1.prompt and "也能把权重分给好几个词" in q1.prompt
    assert any(claim == "单头只能看一个词" for claim, _ in q1.key.misconceptions)
    assert "同一个向量" in q1.key.model_answer


# ------------------------------------------------------------------------------------------ content
def test_numbers_come_from_lesson_lib(monkeypatch):
    """Change the paper's base model and the answer keys follow: no number is typed into the questions."""
    monkeypatch.setattr(paper, "BASE_HEADS", 4)
    bank.clear_cache()
    try:
        d_k = head_width(D, 4)
        assert f"4 个 {d_k} 维的头" in bank.question("Q3").prompt
        assert quiz.check("Q3", [f"4 · {d_k}n²", f"{D}n²"]).correct
        assert not quiz.check("Q3", [f"{H} · {D_K}n²", f"{D_K}n²"]).correct
        assert quiz.check("S3", f"(4, {bank.N_SHAPE_EXAMPLE}, {d_k})").correct
    finally:
        monkeypatch.undo()
        bank.clear_cache()
    assert quiz.check("S3", f"({H}, {bank.N_SHAPE_EXAMPLE}, {D_K})").correct


def test_answer_keys_match_the_flop_counter_and_the_kernel():
    n, h = bank.N_FLOPS_EXAMPLE, bank.H_FLOPS_EXAMPLE
    c = count(n, D, h)
    assert quiz.check("S4", [str(c.scores // h), str(c.scores)]).correct
    assert quiz.check("S4b", [str(c.softmax_exp), "会"]).correct
    assert quiz.check("Q2", [str(head_width(D, h)), "不变" if parameters(D, h) == parameters(D, H) else "变多"]).correct
    from lesson_lib.practice.questions import TRANSFER_D_MODEL, TRANSFER_HEADS

    assert quiz.check("S4c", [str(head_width(TRANSFER_D_MODEL, TRANSFER_HEADS)),
                              str(parameters(TRANSFER_D_MODEL, TRANSFER_HEADS))]).correct  # fmt: skip


def test_transfer_and_understanding_questions():
    from lesson_lib.practice.questions import UNEVEN_HEADS

    assert "d_model = 768" in bank.question("S4c").prompt  # another configuration
    assert "去掉 W^O" in bank.question("S3c").prompt  # removing W^O
    s3d = bank.question("S3d")
    assert f"h = {UNEVEN_HEADS}" in s3d.prompt and D % UNEVEN_HEADS  # an h that does not divide d_model
    assert bank.facts()["uneven_refused"] in s3d.explanation and bank.facts()["uneven_refused"]
    s7c = bank.question("S7c")
    assert "d_k = 1" in s7c.prompt and s7c.key.answer == {"A", "B"} and "单调" in s7c.explanation
    q5 = bank.question("Q5")
    assert '"application"' in q5.prompt and "非常集中地落在" not in q5.explanation
    assert "一个头几乎把全部权重给了" in q5.explanation


def test_s4_does_not_repeat_code_exercise_3():
    n, h = bank.N_FLOPS_EXAMPLE, bank.H_FLOPS_EXAMPLE
    total = count(n, D, h).matmul_total
    for qid in ("S4", "S4b"):
        assert all(Fraction(total) != Fraction(b.target) for b in bank.question(qid).key.boxes if hasattr(b, "rel_tol"))


def test_explanations_teach_the_strict_corrections():
    q3 = bank.question("Q3").explanation
    assert "严格来说" in q3 and f"{H} · {D_K}n² = {D}n²" in q3 and "QKᵀ" in q3 and "h·n²" in q3
    assert f"{count(bank.N_FLOPS_EXAMPLE, D, H).softmax_exp:,}" in q3
    assert "Σ_i head_i W^O_i" in bank.question("Q4").explanation
    s7 = bank.question("S7").explanation
    assert "单次运行" not in s7 and "没有说每一行训练了几次" in s7
    s7b = bank.question("S7b").explanation
    assert "(B) 行" in s7b and "很大程度上" not in s7b and "部分" in s7b
    for qid in bank.question_ids():
        if bank.question(qid).kind != "self":
            assert bank.question(qid).explanation.startswith("解析：")


def test_right_and_wrong_words_never_appear_in_questions():
    """The browser test looks for 正确 and 还不对: neither may appear in prompts, choices, labels or 解析."""
    for q in bank.questions().values():
        texts = [q.prompt, q.explanation, q.placeholder, *(label for _, label in q.choices)]
        assert not any("正确" in t or "还不对" in t for t in texts), q.id


def test_model_answer_and_follow_ups_come_from_lesson_lib():
    from lesson_lib.costs import kv_sharing
    from lesson_lib.practice.interview import GQA_GROUPS

    text = practice_interview.model_answer()
    assert f"d_model = {D}" in text and f"d_k = {D_K}" in text
    assert f"{count(bank.N_FLOPS_EXAMPLE, D, H).matmul_total:,}" in text and "相近" in text
    assert "Michel" in text and "Voita" in text and "MQA" in text and "GQA" in text
    for k in (H, GQA_GROUPS, 1):
        assert f"{kv_sharing(D, H, k).cache_per_token:,}" in text
        assert f"{kv_sharing(D, H, k).projection_params:,}" in text
    assert kv_sharing(D, H, H).projection_params == 4 * D * D  # MHA: the four d_model × d_model projections
    with pytest.raises(ValueError):
        kv_sharing(D, H, 3)


def test_unknown_question_id():
    with pytest.raises(KeyError, match="Q1"):
        quiz.check("Q9", "64")


def test_feedback_html_is_plain_and_escaped():
    fb = Feedback(False, "还不对：<script>alert(1)</script>\n第二行")
    out = render.feedback_html(fb)
    assert "<script>" not in out and "&lt;script&gt;" in out and "<br>" in out
    assert " id=" not in out and "<style" not in out and "javascript" not in out.lower()


def test_each_section_question_ends_its_own_section():
    """Practice next to its idea: S2 … S7 at the end of their section's source; §10 asks the Q review."""
    src = ROOT / "notebooks" / "src"
    review = (src / "10_self_test.md").read_text(encoding="utf-8")
    for qid in bank.question_ids():
        q = bank.question(qid)
        if qid.startswith("Q"):
            assert f'ask("{qid}")' in review, qid
            continue
        section = int(re.search(r"\d+", q.section).group())
        text = (src / f"{SECTION_FILES[section]}.md").read_text(encoding="utf-8")
        assert f'ask("{qid}")' in text and f'ask("{qid}")' not in review, qid
        tail = text[text.index("**本节小测**"):]
        assert "\n## " not in tail and "\n### " not in tail  # nothing of the section comes after its questions
    interview = (src / "08_interview.md").read_text(encoding="utf-8")
    assert "interview_self_check()" in interview and "这一课的答法" not in interview  # ask first, reveal after


@settings(max_examples=300, deadline=None)
@given(st.integers(-10**9, 10**9), st.sampled_from(["{}", "{}次", "{:,}", " {} ", "{}.0", "{name} = {}"]))
def test_a_number_box_is_right_only_at_its_value(value, spelling):
    """Whatever spelling, a box is judged right exactly when the number read equals the target."""
    for qid in ("Q2", "S4b", "S4c"):
        box = bank.question(qid).key.boxes[0]
        read, why = box.read(spelling.format(value, name=box.name))
        assert read == value and why == ""
        assert box.right(read) is (value == box.target)


def test_deeply_nested_answers_are_unreadable_not_a_crash():
    """A learner calling the checkers by hand with a value nested 100,000 deep gets feedback, never RecursionError."""
    deep = []
    for _ in range(100_000):
        deep = [deep]
    for value in (deep, {"a": deep}, (deep, "64")):
        feedback = practice_interview.interview_check(value)
        assert not feedback.correct and not feedback.judged and "正确" not in feedback.message
        assert not quiz.check("Q2", value).correct  # feedback (it asks for a readable form) instead of raising
