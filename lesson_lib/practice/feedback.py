"""What a check returns (``Feedback``), what a question is (``Question``), its version fingerprint, and the one
head a message starts with (「正确！」 only when every part is surely right). Tests read fields, not words."""

from __future__ import annotations

from dataclasses import dataclass, field

RIGHT = "正确！"  # a right answer's message starts with this; the word appears nowhere else
WRONG = "还不对："  # a wrong answer's message starts with this
FORM = "请换个写法："  # a box could not be read: nothing is judged
INCOMPLETE = "还没填完："  # some boxes are still empty: nothing is judged
ANSWER_FIRST = "还没有作答："  # nothing submitted: a prompt to answer, never a verdict
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
    parts: tuple[tuple[str, str], ...] = ()  # (box name, state): "right" | "wrong" when every box was read for
    # certain; "read" | "unread" | "empty" when some box was not (then nothing is judged)
    echoes: tuple[tuple[str, str], ...] = ()  # (box name, the value read, written exactly) for a judged form
    covered: tuple[str, ...] = ()  # a self-assessment: the rubric points the learner ticked
    mistakes: tuple[str, ...] = ()  # ids of the named mistakes a wrong answer made ("d_k=64", "option:A")
    version: str = ""  # the digest of the question answered (``question_version``), set by ``quiz.check``

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
    """One self-test question as data: ``kind`` (form, single, multi or self) picks its checker, ``key`` is that
    kind's answer key (``FormKey``, ``ChoiceKey`` or a ``Rubric``)."""

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

    @property
    def version(self) -> str:
        if "_version" not in self.__dict__:  # computed once: the digest hashes the whole key
            object.__setattr__(self, "_version", question_version(self.prompt, self.key, self.kind))
        return self.__dict__["_version"]


def blank(qid: str, explanation: str, what: str = "写下你的答案") -> Feedback:
    message = f"{ANSWER_FIRST}先{what}再提交，哪怕不确定也没关系，提交后会告诉你差在哪里。"
    return Feedback(False, message, explanation, qid, blank=True, judged=False)


def unreadable(qid: str, explanation: str, message: str, head: str = FORM, parts=()) -> Feedback:
    return Feedback(False, head + message, explanation, qid, blank=True, unread=True, parts=tuple(parts))


# ---------------------------------------------------------------------------------------------- versions
_TEACHING_TEXT = {"hints", "generic", "praise", "placeholder", "misconceptions", "model_answer", "description",
                  "cues", "text", "explanation"}  # wording that may improve without changing what is asked or accepted


def _canonical(value, depth: int = 0):
    """A JSON-able form of a question's key: its data (targets, options, answers, box names and units), not its
    teaching text and not its functions (a diagnosis explains a wrong value; it does not change which is right)."""
    import dataclasses
    from fractions import Fraction

    if depth > 8 or (callable(value) and not dataclasses.is_dataclass(value)):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"type": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.name == "options":  # (key, label, why): why teaches, key and label are what is asked
                out[f.name] = [[str(o[0]), str(o[1])] for o in getattr(value, f.name)]
            elif f.name not in _TEACHING_TEXT:
                out[f.name] = _canonical(getattr(value, f.name), depth + 1)
        return out
    if isinstance(value, dict):
        return {str(k): _canonical(v, depth + 1) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, frozenset | set):
        return sorted(str(_canonical(v, depth + 1)) for v in value)
    if isinstance(value, list | tuple):
        return [_canonical(v, depth + 1) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    return str(value)  # a Poly prints its exact coefficients


def question_version(prompt: str, key, kind: str = "") -> str:
    """The fingerprint of what a question asks and accepts (prompt, kind, answer key), computed from the question
    data: a saved verdict carries it, and is dropped when it no longer matches."""
    import hashlib
    import json

    data = json.dumps([kind, prompt, _canonical(key)], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(data.encode("utf-8", "backslashreplace")).hexdigest()[:12]
