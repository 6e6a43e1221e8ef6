"""A section's questions, each held to the right and wrong answers kept in its own data (the `right_answers` and
`wrong_answers` of its TOML entry), read through the public loader: an instructor's new question brings its own
test cases, and the section's test file runs them (tests/test_sNN_*.py: test_each_question_judges_its_own_answers).
"""

from __future__ import annotations

from lesson_lib.practice import questions, quiz


def section_questions(*files: str) -> list:
    """The questions of these files of lesson_lib/sections/ that keep answers (a self-explanation keeps none)."""
    found = [q for name in files for q in questions.read_file(questions.SECTIONS / name)]
    return [q for q in found if q.right_answers or q.wrong_answers]


def misjudged(question, monkeypatch) -> list[tuple[str, object, str]]:
    """(kept as, answer, verdict) for each kept answer the quiz judges otherwise: a right one told 还不对, a wrong one
    accepted. A right answer may be asked to rewrite ("form": the box could not read it for certain), never judged
    wrong. A checker that raises fails the test instead of hiding behind the quiz's safety net."""
    monkeypatch.setattr(quiz, "_SAFETY_NET", False)
    found = []
    for answer in question.right_answers:
        verdict = quiz.check(question.id, answer).verdict
        if verdict not in ("right", "form"):
            found.append(("right", answer, verdict))
    for answer in question.wrong_answers:
        feedback = quiz.check(question.id, answer)
        if feedback.correct:
            found.append(("wrong", answer, feedback.verdict))
    return found
