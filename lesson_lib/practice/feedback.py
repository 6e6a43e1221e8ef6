"""What a check returns, what a question is, and its version; a message's head says its
verdict (「正确！」 only when every part is surely right), and its HTML, a themed box per verdict.
Tests read fields, not words."""

import dataclasses
import hashlib
import html
import json
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

from lesson_lib.show.theme import box

RIGHT = "正确！"  # a right answer's message starts with this; the word appears nowhere else
WRONG = "还不对："
FORM = "请换个写法："  # a box could not be read: nothing is judged
INCOMPLETE = "还没填完："  # some boxes are still empty: nothing is judged
ANSWER_FIRST = "还没有作答："  # nothing submitted: a prompt to answer, never a verdict
REVIEW = "要点对照："  # free text: the rubric, never a verdict
SELF = "自评："  # the learner's own tick of the rubric
_HEADS = {FORM: "form", INCOMPLETE: "form", ANSWER_FIRST: "blank", REVIEW: "review", SELF: "self"}


@dataclass(frozen=True)
class Feedback:
    correct: bool  # every part right (never for free text or a self-assessment)
    message: str  # starts with one of the heads above, which says the verdict
    question_id: str = ""
    # (box, right | wrong) if every box was read, else (box, read | unread | empty)
    parts: tuple[tuple[str, str], ...] = ()
    # (box, the value read, written exactly) for a judged form
    echoes: tuple[tuple[str, str], ...] = ()
    covered: tuple[str, ...] = ()  # a self-assessment: the rubric points ticked
    # ids of the named mistakes of a wrong answer ("d_k=64", "option=A")
    mistakes: tuple[str, ...] = ()
    reasons: tuple[tuple[str, str], ...] = ()  # (box, why not read: numeral, several, disowned …)
    version: str = ""  # the version of the question answered, set by ``quiz.check``

    @property
    def verdict(self) -> str:
        """right, wrong, form (a box unreadable or empty), blank (nothing sent), review or self."""
        judged = "right" if self.correct else "wrong"  # a message with no other head
        return next((v for head, v in _HEADS.items() if self.message.startswith(head)), judged)

    @property
    def blank(self) -> bool:
        """Not an attempt, so not recorded: nothing submitted, or a box empty or unreadable."""
        return self.verdict in ("blank", "form")


@dataclass(frozen=True)
class Question:
    """One question as data: its ``kind`` (form, single, multi, self) reads its ``key``."""

    id: str
    section: str  # where the question's idea is taught
    kind: str
    prompt: str
    explanation: str
    key: object = field(repr=False, compare=False)
    placeholder: str = ""
    # The question's own test cases, written as learners write them (not part of its version): a
    # right answer is accepted or, at worst, asked to be rewritten; a wrong one is never accepted.
    # Arabic digits only: one in Chinese numerals belongs in the adversarial table.
    right_answers: tuple = field(default=(), repr=False, compare=False)
    wrong_answers: tuple = field(default=(), repr=False, compare=False)
    # The named values its data computed, and the section function that draws its picture
    values: dict = field(default_factory=dict, repr=False, compare=False)
    picture: dict = field(default_factory=dict, repr=False, compare=False)
    counted: bool = True  # false: asked apart from the quiz, never in its count

    @property
    def choices(self) -> tuple[tuple[str, str], ...]:
        return tuple((k, label) for k, label, _ in getattr(self.key, "options", ()))

    @cached_property
    def version(self) -> str:
        return question_version(self.prompt, self.key, self.kind)


@dataclass(frozen=True)
class RubricPoint:
    """One point of a good answer: a short ``name`` (the checkbox) and what it says in full."""

    name: str
    text: str


@dataclass(frozen=True)
class Rubric:
    """A self-explanation's key: what learners compare their answer with (no prose is read)."""

    points: tuple[RubricPoint, ...]
    misconceptions: tuple[tuple[str, str], ...]  # (the wrong claim, why it is wrong)
    model_answer: str

    def text(self) -> str:
        """What the learner reads after writing: the points, then the misconceptions."""
        lines = ["好的回答会说到这几点："]
        for i, p in enumerate(self.points, start=1):
            number = "" if p.name[:1] in "①②③④⑤⑥⑦⑧⑨" else f"{i}. "  # ① carries its own number
            lines.append(f"{number}{p.name}：{p.text}")
        if self.misconceptions:
            lines.append("常见的误解（你的回答里有没有类似的说法？）：")
            lines += [f"✗ 「{claim}」——{why}" for claim, why in self.misconceptions]
        return "\n".join(lines)


def answer_first(qid: str, what: str) -> Feedback:
    message = f"{ANSWER_FIRST}先{what}再提交，哪怕不确定也没关系，提交后会告诉你差在哪里。"
    return Feedback(False, message, qid)


# Not in a version: wording that may improve without changing what is asked or which value is right
# (an option's why teaches too), and a box's ``per``: which count words it reads beside a value.
_UNVERSIONED = {
    "hints", "generic", "explain", "praise", "placeholder", "misconceptions", "model_answer", "per",
    "text",  # a rubric point's full wording (its name is what the learner ticks)
}


def _key_data(value):
    """What json cannot write of a key: a dataclass's fields but the unversioned and functions."""
    if dataclasses.is_dataclass(value):
        out = {"type": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.name == "options":
                out[f.name] = [[str(o[0]), str(o[1])] for o in value.options]
            elif f.name not in _UNVERSIONED:
                out[f.name] = getattr(value, f.name)
        return out
    if isinstance(value, frozenset | set):
        return sorted(map(str, value))
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    return None if callable(value) else str(value)


def question_version(prompt: str, key, kind: str) -> str:
    """The fingerprint of what a question asks and accepts; a saved verdict must match it."""
    data = json.dumps([kind, prompt, key], ensure_ascii=False, sort_keys=True, default=_key_data)
    return hashlib.sha256(data.encode("utf-8", "backslashreplace")).hexdigest()[:12]


def box_html(text: str, tone: str, css_class: str = "") -> str:
    """Escaped text in a themed box: ok for a right verdict, warn for a wrong one, else a note."""
    inner = box(text_html(text), {"right": "ok", "wrong": "warn"}.get(tone, "note"))
    return f'<div class="{html.escape(css_class)}">{inner}</div>' if css_class else inner


def text_html(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def feedback_html(feedback: Feedback) -> str:
    css_class = f"lesson-feedback lesson-feedback-{feedback.verdict}"
    return box_html(feedback.message, feedback.verdict, css_class)
