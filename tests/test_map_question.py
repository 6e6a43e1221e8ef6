"""Q5 asks the learner to read a head's attention map (issue 40): the right reading passes, and each misreading
gets its own named mistake from the quiz's checker."""

from __future__ import annotations

import pytest

from lesson_lib.practice import questions, quiz


def test_the_right_reading_passes():
    feedback = quiz.check("Q5", {"A", "C"})
    assert feedback.verdict == "right" and feedback.mistakes == ()


@pytest.mark.parametrize("misreading", ["B", "D", "E"])  # previous token, attention sink, random
def test_each_misreading_is_named(misreading):
    feedback = quiz.check("Q5", {"A", "C", misreading})
    assert feedback.verdict == "wrong" and feedback.mistakes == (f"option={misreading}",)


def test_half_a_reading_is_not_enough():
    """The kind of head (A) without the evidence from the map that it ignores content (C), and the reverse."""
    for answer in ({"A"}, {"C"}):
        assert quiz.check("Q5", answer).verdict == "wrong"


def test_every_wrong_option_carries_its_own_explanation():
    q = questions.question("Q5")
    wrong = [(key, why) for key, _label, why in q.key.options if key not in q.key.answer]
    assert [key for key, _ in wrong] == ["B", "D", "E"] and len({why for _, why in wrong}) == 3 and all(wrong)


def test_the_prompt_names_the_head_the_cell_draws():
    import re

    from lesson_lib.sections.s06_real_heads import pronoun

    layer, head = map(int, re.search(r"(\d+) \w \W \w (\d+)", questions.question("Q5").prompt).groups())  # layer · head
    assert (layer, head) == pronoun.MAP_HEAD
