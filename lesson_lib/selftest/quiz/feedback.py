"""What a check returns (``Feedback``), what a question is (``Question``), and the three message heads.

A message starts with exactly one head: 「正确！」 when a checker is sure the answer is right,
「还不对：」 when it is sure something is wrong, and 「要点对照：」 for free text, where a keyword reader
cannot be sure: it lists what it found and asks the learner to compare with the reference answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Feedback", "Question", "RIGHT", "WRONG", "REVIEW", "blank", "too_long", "echo"]

RIGHT = "正确！"  # a right answer's message starts with this; the word appears nowhere else
WRONG = "还不对："  # a wrong answer's message starts with this
REVIEW = "要点对照："  # free text: what was found, never a verdict of 正确


@dataclass(frozen=True)
class Feedback:
    """What the learner sees after 提交."""

    correct: bool  # counts as done (for free text: every key point stated, nothing contradicted)
    message: str  # starts with RIGHT, WRONG or REVIEW
    explanation: str = ""  # the question's 解析, shown on request (at once for free-text questions)
    question_id: str = ""
    blank: bool = False  # nothing was answered: not an attempt
    show_explanation: bool = False  # free-text questions reveal the 解析 straight after checking
    covered: tuple[str, ...] = ()  # key points found in a free-text answer
    missing: tuple[str, ...] = ()  # key points not found (or only negated)
    misconceptions: tuple[str, ...] = ()  # known wrong claims found in the answer
    judged: bool = True  # False for free text: a reading of keywords, not a verdict

    @property
    def verdict(self) -> str:
        """"right", "wrong" or "review" (free text)."""
        if not self.judged:
            return "review"
        return "right" if self.correct else "wrong"


@dataclass(frozen=True)
class Question:
    """One self-test question, declared as data. ``kind`` picks its checker (see ``checkers.CHECKERS``);
    ``key`` is the kind's answer key (a ``NumberKey``, ``ChoiceKey``, ``TextKey`` … from ``checkers``)."""

    id: str
    section: str  # where the question's idea is taught, e.g. "第 4 节"
    kind: str  # single, multi, number, expression, shape or text
    prompt: str
    explanation: str
    key: object = field(repr=False, compare=False)
    choices: tuple[tuple[str, str], ...] = ()  # (key, label) for single/multi: taken from the key's options
    placeholder: str = ""

    def __post_init__(self):
        options = getattr(self.key, "options", None)
        if options and not self.choices:
            object.__setattr__(self, "choices", tuple((k, label) for k, label, _ in options))


def blank(qid: str, explanation: str, what: str = "写下你的答案") -> Feedback:
    message = f"{WRONG}还没有作答。先{what}，哪怕不确定也没关系，提交后会告诉你差在哪里。"
    return Feedback(False, message, explanation, qid, blank=True)


def too_long(text: str, qid: str, explanation: str, limit: int, judged: bool = True) -> Feedback | None:
    if len(text) <= limit:
        return None
    return Feedback(
        False,
        f"{WRONG}这个答案有 {len(text):,} 个字符，太长了，我没有逐字去读。请只写关键的一两句或一个式子"
        f"（{limit} 字以内）。",
        explanation,
        qid,
        show_explanation=not judged,
    )


def echo(text: str, limit: int = 24) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
