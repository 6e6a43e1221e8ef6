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


def test_random_heads_have_sharp_rows_but_not_on_the_next_token():
    """Option E's feedback: §5's random heads also have a few sharp rows (one token above 0.9), but no random head
    puts most of its rows on the next token, as the map's trained head does."""
    import numpy as np

    from lesson_lib.sections import s05_head_lab as lab

    for h in lab.HEAD_CHOICES:
        weights = lab.lab_state(h).weights  # (h, n, n)
        n = weights.shape[1]
        assert (weights.max(axis=-1) > 0.9).any(), h
        on_next = (weights.argmax(axis=-1)[:, :-1] == np.arange(1, n)).sum(axis=-1)  # (h,) rows per head
        assert (on_next < (n - 1) / 2).all(), h


def test_the_map_cells_name_the_heads_the_lesson_describes():
    """§6's two map cells spell out layer and head (a learner reads them): the pronoun head, then the head Q5 reads,
    and Q5 is the next thing asked after that map (issue 40: the map-reading question in class, in §6)."""
    import re
    from pathlib import Path

    from lesson_lib.sections.s06_real_heads import pronoun

    src = Path(__file__).parents[1] / "notebooks" / "src"
    drawn = {name: re.findall(r"head_map\(.*?layer=(\d+), head=(\d+)\)", (src / name).read_text(encoding="utf-8"))
             for name in ("06_real_heads.md", "10_self_test.md")}
    assert drawn == {"06_real_heads.md": [tuple(map(str, pronoun.PRONOUN_HEAD)), tuple(map(str, pronoun.MAP_HEAD))],
                     "10_self_test.md": []}
    layer, head = pronoun.MAP_HEAD
    after_map = (src / "06_real_heads.md").read_text(encoding="utf-8").split(f"layer={layer}, head={head})")[1]
    assert re.search(r'ask\("(\w+)"\)', after_map).group(1) == "Q5"
