"""§10, the self-test (sections/s10_self_test.toml): each question against the right and wrong answers kept in its
data. The notebook's self-test cells run in a kernel in test_self_test_notebook (slow); the engine that checks them
is tested on synthetic questions in test_question_data and test_quiz."""

from __future__ import annotations

import pytest
from own_answers import misjudged, section_questions


@pytest.mark.parametrize("question", section_questions("s10_self_test.toml"), ids=lambda q: q.id)
def test_each_question_judges_its_own_answers(question, monkeypatch):
    assert misjudged(question, monkeypatch) == []
