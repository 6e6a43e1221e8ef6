"""The self-test of sections 8 and 10, as a package: one idea per module.

- ``parse``: reading what one answer box holds (a number in every script and unit, or a polynomial in n;
  a bounded parser, learner text is never executed);
- ``checkers``: one checker per kind (answer boxes, radio buttons, checkboxes, self-explanation);
- ``freetext``: the rubric of a self-explanation and the one reader it keeps (cue words in the answer);
- ``bank``: the questions, declared once as data (how to add one: see its docstring);
- ``interview``: §8's rubric, reference answer and self-assessment;
- ``feedback`` / ``render``: what a check returns and its theme-aware HTML.

``check(question_id, answer)`` returns a ``Feedback`` for any answer (a dict of boxes, a key, a set of
keys, any string, None); ``assess(question_id, ticked)`` records a self-explanation's own tick.
The learner's progress and its file live in ``lesson_lib.selftest.progress``.
"""

from __future__ import annotations

from dataclasses import replace

from .bank import (
    H_FLOPS_EXAMPLE,
    N_FLOPS_EXAMPLE,
    N_SHAPE_EXAMPLE,
    clear_cache,
    facts,
    question,
    question_ids,
    questions,
)
from .checkers import CHECKERS, MAX_CHARS, form_values, self_assess
from .feedback import ANSWER_FIRST, FORM, INCOMPLETE, REVIEW, RIGHT, SELF, WRONG, Feedback, Question
from .interview import (
    INTERVIEW_ID,
    INTERVIEW_QUESTION,
    interview_check,
    interview_rubric,
    interview_self_assess,
    interview_version,
    model_answer,
)
from .parse import ExpressionError, Poly, parse_expression
from .render import box_html, feedback_html, text_html

__all__ = [
    "Feedback", "Question", "ExpressionError", "Poly", "parse_expression", "questions", "question", "question_ids",
    "check", "assess", "interview_check", "interview_self_assess", "interview_rubric", "INTERVIEW_ID",
    "INTERVIEW_QUESTION", "model_answer", "feedback_html", "text_html", "box_html", "RIGHT", "WRONG", "FORM",
    "INCOMPLETE", "REVIEW", "SELF", "MAX_CHARS", "N_SHAPE_EXAMPLE", "N_FLOPS_EXAMPLE", "H_FLOPS_EXAMPLE", "facts",
    "clear_cache", "form_values", "ANSWER_FIRST", "versions",
]  # fmt: skip

_SAFETY_NET = True  # tests switch this off so that a bug surfaces instead of a generic message


def check(question_id: str, answer) -> Feedback:
    """Check a learner's answer: the question's kind picks the checker. Never raises for any answer. The
    feedback carries the version of the question it answered (``Question.version``)."""
    q = question(question_id)
    try:
        return replace(CHECKERS[q.kind](q, answer), version=q.version)
    except Exception:
        if not _SAFETY_NET:
            raise
        return Feedback(False, f"{FORM}这个答案我没能读懂。请在每个框里只填一个数或一个式子，或者点选选项。",
                        q.explanation, q.id, blank=True, unread=True, version=q.version)  # fmt: skip


def versions() -> dict[str, str]:
    """Every question's version digest, and the §8 interview's (computed from the question data)."""
    out = {qid: question(qid).version for qid in question_ids()}
    out[INTERVIEW_ID] = interview_version()
    return out


def assess(question_id: str, ticked) -> Feedback:
    """A self-explanation question's self-assessment: the rubric points the learner ticked (never 正确)."""
    q = question(question_id)
    if q.kind != "self":
        raise KeyError(f"{question_id} 不是自我解释题，不需要自评。")
    return self_assess(q.id, q.key, ticked)
