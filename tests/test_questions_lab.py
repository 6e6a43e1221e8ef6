"""The labs' questions (the L rows of lesson_lib.practice.questions): declared as data with the bank's Question type,
checked by the quiz like the core's, asked in the labs, and their numbers computed from lesson_lib."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from lesson_lib.practice import questions, quiz

ROOT = Path(__file__).resolve().parents[1]


# the labs' own, beside core questions they ask again
LAB_OWN = [qid for qid in questions.lab_ids() if qid.startswith("L")]


@pytest.mark.parametrize("qid", LAB_OWN)
def test_the_right_choice_is_right_and_every_other_is_wrong(qid):
    q = questions.question(qid)
    assert q.id == qid and q.kind == "single" and len(q.key.answer) == 1
    for key, _ in q.choices:
        feedback = quiz.check(qid, key)
        assert feedback.correct == (key in q.key.answer), (qid, key)


def test_lab_questions_are_found_but_not_counted_as_the_cores():
    """Lab questions check like any other, yet the core's items (what progress counts) stay the same."""
    from lesson_lib.practice.progress import Progress

    assert set(LAB_OWN) <= set(questions.lab_ids())
    assert not set(questions.question_ids()) & set(LAB_OWN)
    assert not set(Progress().ids) & set(LAB_OWN)
    assert all(questions.question(qid).id == qid for qid in LAB_OWN)


def test_unknown_id_names_the_lab_questions():
    with pytest.raises(KeyError, match="L6a"):
        questions.question("L9")


def test_every_lab_question_is_asked_in_a_lab():
    spec = importlib.util.spec_from_file_location("build_notebook", ROOT / "scripts" / "build_notebook.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    asked = "".join(c["source"] for name, (src, _, _) in build.NOTEBOOKS.items() if name.startswith("lab_")
                    for c in build.source_cells(src=src) if c["kind"] == "code")
    assert all(f'ask("{qid}")' in asked for qid in LAB_OWN)
