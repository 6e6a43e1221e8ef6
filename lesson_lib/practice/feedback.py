"""What a check returns (``Feedback``), what a question is (``Question``), and the message heads.

A message starts with exactly one head: 「正确！」 when a checker is sure every part is right,
「还不对：」 when it is sure something is wrong, 「请换个写法：」 when it could not read a box (the
message says what form the box wants; not an attempt), 「还没填完：」 when a box is still empty,
and 「要点对照：」 for free text, which the
lesson never grades: the learner compares it with the rubric and records a self-assessment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Feedback", "Question", "RIGHT", "WRONG", "FORM", "INCOMPLETE", "REVIEW", "SELF", "blank", "unreadable",
           "echo"]  # fmt: skip

RIGHT = "正确！"  # a right answer's message starts with this; the word appears nowhere else
WRONG = "还不对："  # a wrong answer's message starts with this
FORM = "请换个写法："  # a box could not be read: nothing is judged
INCOMPLETE = "还没填完："  # some boxes are still empty: nothing is judged
REVIEW = "要点对照："  # free text: the rubric, never a verdict
SELF = "自评："  # the learner's own tick of the rubric


@dataclass(frozen=True)
class Feedback:
    """What the learner sees after 提交."""

    correct: bool  # every part right (never True for free text or a self-assessment)
    message: str  # starts with RIGHT, WRONG, FORM, REVIEW or SELF
    explanation: str = ""  # the question's 解析, shown on request
    question_id: str = ""
    blank: bool = False  # nothing (or not everything) answered, or a box unreadable: not an attempt
    show_explanation: bool = False  # free text reveals the rubric straight after writing
    judged: bool = True  # False for free text and self-assessments: nothing was graded
    unread: bool = False  # a box could not be read (the message says what form it wants)
    parts: tuple[tuple[str, str], ...] = ()  # (box name, "right" | "wrong") for what was read for certain
    covered: tuple[str, ...] = ()  # a self-assessment: the rubric points the learner ticked

    @property
    def verdict(self) -> str:
        """"right", "wrong", "form" (unreadable), "review" (free text) or "self" (a self-assessment)."""
        if self.unread:
            return "form"
        if not self.judged:
            return "self" if self.message.startswith(SELF) else "review"
        return "right" if self.correct else "wrong"


@dataclass(frozen=True)
class Question:
    """One self-test question, declared as data. ``kind`` picks its checker (see ``checkers.CHECKERS``):
    ``form`` (answer boxes: numbers, expressions, a small choice), ``single``, ``multi`` or ``self``
    (self-explanation); ``key`` is the kind's answer key (``FormKey``, ``ChoiceKey`` or a ``Rubric``)."""

    id: str
    section: str  # where the question's idea is taught, e.g. "第 4 节"
    kind: str
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


def unreadable(qid: str, explanation: str, message: str, head: str = FORM) -> Feedback:
    return Feedback(False, head + message, explanation, qid, blank=True, unread=True)


def echo(text: str, limit: int = 24) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
