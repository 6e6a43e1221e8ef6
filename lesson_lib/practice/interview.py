"""§8's interview: a self-explanation whose rubric ①②③, usual wrong claims and reference
answer are §8's question file (``sections/s08_interview.toml``), checked and recorded apart
from the quiz. Nothing grades prose."""

from __future__ import annotations

from dataclasses import replace

from lesson_lib.practice import questions
from lesson_lib.practice.checkers import rubric_feedback, self_assess
from lesson_lib.practice.feedback import Feedback, Question, Rubric

INTERVIEW_ID = "面试"
MAX_INTERVIEW_CHARS = 2000


def interview() -> Question:
    return questions.question(INTERVIEW_ID)


def interview_question() -> str:
    return interview().prompt


def interview_rubric() -> Rubric:
    return interview().key


def model_answer() -> str:
    """The lesson's answer ①②③ with the 严格来说 corrections."""
    return interview().key.model_answer


def interview_version() -> str:
    return interview().version


def interview_check(answer) -> Feedback:
    """The rubric and reference answer to compare with; never a verdict."""
    fb = rubric_feedback(INTERVIEW_ID, answer, MAX_INTERVIEW_CHARS)
    return replace(fb, version=interview_version())


def interview_self_assess(ticked) -> Feedback:
    """The learner's tick of ①②③, recorded as a self-assessment."""
    return self_assess(INTERVIEW_ID, interview_rubric(), ticked)
