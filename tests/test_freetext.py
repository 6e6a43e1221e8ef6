"""Free text is never read: a written answer gets the rubric to compare with, no verdict and no hint."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib.practice import questions
from lesson_lib.practice.checkers import check_self
from lesson_lib.practice.feedback import Rubric, RubricPoint

RUBRIC = Rubric(
    points=(RubricPoint("一组权重", "…"), RubricPoint("平均", "…")),
    misconceptions=(("单头只能看一个词", "…"),),
    model_answer="参考答案：…",
)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_free_text_is_never_graded(answer):
    fb = check_self(questions.question("Q1"), answer)
    assert not fb.correct and fb.verdict in ("blank", "review")  # blank: asked to write first
    if not fb.blank:  # what was written is never read: any answer gets the same review
        assert fb == check_self(questions.question("Q1"), "不知道")


def test_rubric_text_lists_points_then_misconceptions():
    text = RUBRIC.text()
    assert text.index("一组权重") < text.index("常见的误解") < text.index("单头只能看一个词")


def test_lesson_rubrics_have_points_misconceptions_and_a_model_answer():
    for rubric in (questions.question("Q1").key, questions.question("面试").key):
        assert len(rubric.points) >= 3 and len(rubric.misconceptions) >= 3 and rubric.model_answer
