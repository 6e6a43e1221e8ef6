"""The self-test of sections 8 and 10, as a package: one idea per module.

- ``parse``: reading a learner's maths (polynomials in n, numbers in every script and unit, a bounded
  parser; learner text is never executed);
- ``freetext``: reading free text for key points, negation and known wrong claims;
- ``checkers``: one checker per kind of question and the dispatch ``CHECKERS[kind]``;
- ``bank``: the questions, declared once as data (how to add one: see its docstring);
- ``interview``: the §8 self-check and its reference answer;
- ``feedback`` / ``render``: what a check returns and its theme-aware HTML.

``check(question_id, answer)`` returns a ``Feedback`` for any answer (any string, None, a set of keys).
The learner's progress and its file live in ``lesson_lib.selftest.progress``.
"""

from __future__ import annotations

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
from .checkers import CHECKERS, MAX_CHARS
from .feedback import REVIEW, RIGHT, WRONG, Feedback, Question
from .interview import INTERVIEW_POINTS, INTERVIEW_QUESTION, interview_check, model_answer
from .parse import ExpressionError, Poly, parse_expression
from .render import box_html, feedback_html, text_html

__all__ = [
    "Feedback", "Question", "ExpressionError", "Poly", "parse_expression", "questions", "question", "question_ids",
    "check", "interview_check", "INTERVIEW_POINTS", "INTERVIEW_QUESTION", "model_answer", "feedback_html",
    "text_html", "box_html", "RIGHT", "WRONG", "REVIEW", "MAX_CHARS", "N_SHAPE_EXAMPLE", "N_FLOPS_EXAMPLE",
    "H_FLOPS_EXAMPLE", "facts", "clear_cache",
]  # fmt: skip

_SAFETY_NET = True  # tests switch this off so that a bug surfaces instead of a generic message


def check(question_id: str, answer) -> Feedback:
    """Check a learner's answer: the question's kind picks the checker. Never raises for any answer."""
    q = question(question_id)
    try:
        return CHECKERS[q.kind](q, answer)
    except Exception:
        if not _SAFETY_NET:
            raise
        return Feedback(False, f"{WRONG}这个答案我没能读懂。请换一种写法再试一次，例如只写一个数或一个式子。",
                        q.explanation, q.id)  # fmt: skip
