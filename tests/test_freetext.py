"""The one reader of free text that is left: cue words found literally in an answer, shown as a hint, never a grade."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib.practice import interview, questions
from lesson_lib.practice.checkers import rubric_feedback
from lesson_lib.practice.freetext import MAX_CUES_SHOWN, Rubric, RubricPoint, noticed

RUBRIC = Rubric(
    points=(RubricPoint("一组权重", "…", ("一组", "softmax")), RubricPoint("平均", "…", ("平均", "Average"))),
    misconceptions=(("单头只能看一个词", "…"),),
    model_answer="参考答案：…",
)


def _hint(answer: str, rubric: Rubric) -> str:
    """The hint line of the review a free-text answer gets ('' when it names no word)."""
    message = rubric_feedback("Q", answer or " ", rubric, 1000).message
    return message.split("\n", 1)[1] if "\n" in message else ""


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ("单头只有一组权重，输出是加权平均", ("一组", "平均")),
        ("这种说法是错的：单头不是一组权重，也不平均", ("一组", "平均")),  # words, not claims: no reading of negation
        ("ＳＯＦＴＭＡＸ then average", ("softmax", "Average")),  # full-width and case folded
        ("不知道", ()),
        ("", ()),
    ],
)
def test_noticed_names_only_words_in_the_answer(answer, words):
    assert noticed(answer, RUBRIC) == words
    hint = _hint(answer, RUBRIC)
    assert (hint == "") is (not words)
    for word in words:
        assert f"「{word}」" in hint
    assert ("正确" not in hint and "要点" in hint) or not hint


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_a_hint_never_grades(answer):
    hint = _hint(answer, RUBRIC)
    assert "正确" not in hint and "还不对" not in hint and "/" not in hint  # no verdict, no count of points
    assert len(noticed(answer, RUBRIC)) <= sum(len(p.cues) for p in RUBRIC.points)


def test_hint_is_short():
    many = Rubric((RubricPoint("p", "…", tuple(f"词{i}" for i in range(20))),), (), "")
    assert _hint(" ".join(f"词{i}" for i in range(20)), many).count("「") == MAX_CUES_SHOWN


def test_rubric_text_lists_points_then_misconceptions():
    text = RUBRIC.text()
    assert text.index("一组权重") < text.index("常见的误解") < text.index("单头只能看一个词")


def test_lesson_rubrics_have_points_misconceptions_and_cues():
    for rubric in (questions.question("Q1").key, interview.interview_rubric()):
        assert len(rubric.points) >= 3 and len(rubric.misconceptions) >= 3 and rubric.model_answer
        assert all(p.cues for p in rubric.points)
