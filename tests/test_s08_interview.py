"""§8 (sections/s08_interview.toml, the interview's rubric and reference answer): the section asks before it shows an
answer. The interview's checking and self-assessment are the engine's (tests/test_progress.py)."""

from __future__ import annotations

from helpers import lesson_cells, sentences


def test_interview_asks_before_it_shows_an_answer():
    """§8 asks first: no sentence of the answer is printed above the self-check; the prose before it names each of
    the widget's buttons."""
    from lesson_lib.practice import questions
    from lesson_lib.practice import widgets as quiz_widgets
    from lesson_lib.practice.progress import Progress

    text = "\n\n".join(c["source"] for c in lesson_cells())
    ask = text.index("interview_self_check()")
    section = text[text.index("## 8 ") : ask]
    answer = [s for s in sentences(questions.question("面试").key.model_answer) if len(s) > 8]
    assert answer and not [s for s in answer if s in section]
    widget = quiz_widgets.interview_self_check(Progress())
    buttons = [widget.submit.description, widget.record_button.description, widget.reveal.description]
    assert all(b.strip() and b in section for b in buttons), buttons
