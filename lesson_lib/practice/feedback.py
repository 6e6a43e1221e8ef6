"""What a check returns, what a question is, and its version; a message's head says its verdict (「正确！」 only when
every part is surely right). Tests read fields, not words."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

RIGHT = "正确！"  # a right answer's message starts with this; the word appears nowhere else
WRONG = "还不对："
FORM = "请换个写法："  # a box could not be read: nothing is judged
INCOMPLETE = "还没填完："  # some boxes are still empty: nothing is judged
ANSWER_FIRST = "还没有作答："  # nothing submitted: a prompt to answer, never a verdict
REVIEW = "要点对照："  # free text: the rubric, never a verdict
SELF = "自评："  # the learner's own tick of the rubric


@dataclass(frozen=True)
class Feedback:
    correct: bool  # every part right (never for free text or a self-assessment)
    message: str  # starts with one of the heads above
    explanation: str = ""  # the question's 解析, shown on request
    question_id: str = ""
    blank: bool = False  # nothing (or not everything) answered, or a box unreadable: not an attempt
    show_explanation: bool = False  # free text reveals the rubric straight after writing
    judged: bool = True  # False for free text and self-assessments
    unread: bool = False  # a box could not be read (the message says what form it wants)
    parts: tuple[tuple[str, str], ...] = ()  # (box, "right" | "wrong") when every box was read, else
    # (box, "read" | "unread" | "empty") and nothing is judged
    echoes: tuple[tuple[str, str], ...] = ()  # (box, the value read, written exactly) for a judged form
    covered: tuple[str, ...] = ()  # a self-assessment: the rubric points ticked
    mistakes: tuple[str, ...] = ()  # ids of the named mistakes of a wrong answer ("d_k=64", "option=A")
    version: str = ""  # the version of the question answered, set by ``quiz.check``

    @property
    def verdict(self) -> str:
        """right, wrong, form (unreadable), blank (nothing submitted), review (free text) or self (self-assessed)."""
        if self.unread:
            return "form"
        if self.message.startswith(ANSWER_FIRST):
            return "blank"
        if not self.judged:
            return "self" if self.message.startswith(SELF) else "review"
        return "right" if self.correct else "wrong"


@dataclass(frozen=True)
class Question:
    """One question as data: ``kind`` (form, single, multi or self) picks its checker, ``key`` is its answer key."""

    id: str
    section: str  # where the question's idea is taught, e.g. "第 4 节"
    kind: str
    prompt: str
    explanation: str
    key: object = field(repr=False, compare=False)
    choices: tuple[tuple[str, str], ...] = ()  # (key, label) for single/multi: taken from the key's options
    placeholder: str = ""

    def __post_init__(self):
        if getattr(self.key, "options", None) and not self.choices:
            object.__setattr__(self, "choices", tuple((k, label) for k, label, _ in self.key.options))

    @cached_property
    def version(self) -> str:
        return question_version(self.prompt, self.key, self.kind)


def blank(qid: str, explanation: str, what: str = "写下你的答案") -> Feedback:
    message = f"{ANSWER_FIRST}先{what}再提交，哪怕不确定也没关系，提交后会告诉你差在哪里。"
    return Feedback(False, message, explanation, qid, blank=True, judged=False)


def unreadable(qid: str, explanation: str, message: str, head: str = FORM, parts=()) -> Feedback:
    return Feedback(False, head + message, explanation, qid, blank=True, unread=True, parts=tuple(parts))


# Wording that may improve without changing what is asked or accepted; an option's why teaches too.
_TEACHING_TEXT = {"hints", "generic", "explain", "praise", "placeholder", "misconceptions", "model_answer",
                  "description", "cues", "text", "explanation"}  # fmt: skip


def _canonical(value, depth: int = 0):
    """A question key's data as JSON (targets, options, answers, box names, units): no teaching text, no functions."""
    if depth > 8 or (callable(value) and not dataclasses.is_dataclass(value)):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"type": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.name == "options":
                out[f.name] = [[str(o[0]), str(o[1])] for o in value.options]
            elif f.name not in _TEACHING_TEXT:
                out[f.name] = _canonical(getattr(value, f.name), depth + 1)
        return out
    if isinstance(value, dict):
        return {str(k): _canonical(v, depth + 1) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, frozenset | set):
        return sorted(str(_canonical(v, depth + 1)) for v in value)
    if isinstance(value, list | tuple):
        return [_canonical(v, depth + 1) for v in value]
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)  # a Poly: exact


def question_version(prompt: str, key, kind: str = "") -> str:
    """The fingerprint of what a question asks and accepts: a saved verdict is dropped when it no longer matches."""
    data = json.dumps([kind, prompt, _canonical(key)], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(data.encode("utf-8", "backslashreplace")).hexdigest()[:12]
