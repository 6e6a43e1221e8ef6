"""One checker per kind of question, and the dispatch ``CHECKERS[kind](question, answer) -> Feedback``.

- ``form``: answer boxes, each holding one value: a number (``NumberBox``, the unit beside it), a small
  expression in n (``ExpressionBox``), or one choice among a few (``ChoiceBox``, e.g. 会 / 不会). A box is
  read by ``parse.read_value`` or not at all: an unreadable box is named with the form it wants, and only
  boxes read for certain are diagnosed.
- ``single`` / ``multi``: the keys of radio buttons or checkboxes.
- ``self``: free text is not graded; the learner gets the rubric (``freetext``) and ticks it.

The answer of a form is a dict {box name: text}; a list in box order, or for one box a plain string,
is taken too. Every check answers in milliseconds whatever is typed (each box is capped).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from lesson_lib.practice.feedback import (
    ANSWER_FIRST,
    INCOMPLETE,
    REVIEW,
    RIGHT,
    SELF,
    WRONG,
    Feedback,
    Question,
    blank,
    unreadable,
)
from lesson_lib.practice.freetext import Rubric, hint_text
from lesson_lib.practice.parse import Poly, as_text, clean, fmt_number, read_value

__all__ = ["NumberBox", "ExpressionBox", "ChoiceBox", "FormKey", "ChoiceKey", "CHECKERS", "MAX_CHARS",
           "form_values", "self_assess"]  # fmt: skip

MAX_CHARS = {"form": 120, "single": 200, "multi": 200, "self": 1000}  # per box for forms


# --------------------------------------------------------------------------------------------- answer keys
@dataclass(frozen=True)
class NumberBox:
    """One number. ``hints`` map a wrong value to what it most likely means; ``generic`` is said otherwise."""

    name: str
    label: str  # the visible label before the box
    target: Fraction | int
    unit: str = ""  # shown after the box
    rel_tol: float = 0.0
    symbols: dict = field(default_factory=dict)  # names a learner may write in the box (d_model, h …) -> value
    hints: tuple = ()
    generic: str = ""
    placeholder: str = ""
    labels: tuple[str, ...] = ()  # names the box's unknown goes by (d_k, d_v): 「d_k = d_v = 32」 reads as 32

    def read(self, text: str) -> tuple[Fraction | None, str]:
        symbols = {k: Poly.const(v) for k, v in self.symbols.items()}
        value, why = read_value(text, symbols, (self.name, *self.labels))
        if value is None:
            return None, why
        if not value.is_constant:
            return None, "这一栏要的是一个数，不含 n。"
        return value.constant, ""

    def right(self, value: Fraction) -> bool:
        target = Fraction(self.target)
        return abs(value - target) <= abs(target) * Fraction(self.rel_tol) if self.rel_tol else value == target

    def wrong_why(self, value: Fraction) -> str:
        for known, hint in self.hints:
            if Fraction(known) == value:
                return hint
        return self.generic

    def named(self, value: Fraction) -> bool:
        """Whether a wrong value is a known mistake (one of the hints), not just any wrong number."""
        return any(Fraction(known) == value for known, _ in self.hints)

    verb = "填"

    def shown(self, value: Fraction) -> str:
        return fmt_number(value)


@dataclass(frozen=True)
class ExpressionBox:
    """A polynomial in n (symbols map names to Polys); ``diagnose`` explains a wrong one."""

    name: str
    label: str
    target: Poly
    symbols: dict
    diagnose: Callable[[Poly], str]
    unit: str = ""
    placeholder: str = ""

    def read(self, text: str) -> tuple[Poly | None, str]:
        value, why = read_value(text, self.symbols)
        if value is None:
            return None, why + " 例如写 n · 64 · n 或 64n²。" if why else why
        return value, ""

    def right(self, value: Poly) -> bool:
        return value == self.target

    def wrong_why(self, value: Poly) -> str:
        return self.diagnose(value)

    verb = "填"

    def shown(self, value: Poly) -> str:
        return str(value)


@dataclass(frozen=True)
class ChoiceBox:
    """One choice among a few, shown as radio buttons: ``options`` are (key, label, why it is right or wrong)."""

    name: str
    label: str
    options: tuple[tuple[str, str, str], ...]
    answer: str

    def read(self, text: str) -> tuple[str | None, str]:
        folded = unicodedata.normalize("NFKC", clean(text)).strip()
        for key, label, _ in self.options:
            if folded in (key, label):
                return key, ""
        return None, f"请从 {'、'.join(label for _, label, _ in self.options)} 中选一个。"

    def right(self, value: str) -> bool:
        return value == self.answer

    def wrong_why(self, value: str) -> str:
        return dict((k, why) for k, _, why in self.options)[value]

    verb = "选"

    def shown(self, value: str) -> str:
        return dict((k, label) for k, label, _ in self.options)[value]


@dataclass(frozen=True)
class FormKey:
    """The boxes of a form, in order; ``whole`` may explain a wrong set of values at once (a shape)."""

    boxes: tuple
    praise: str
    whole: Callable[[dict], str] | None = None
    spread: bool = False  # a shape: 「(8, 12, 64)」 typed into the first box (or given as one string) fills all boxes


@dataclass(frozen=True)
class ChoiceKey:
    """``options``: (key, label, why) — ``why`` says why the option is right or what is wrong with it."""

    options: tuple[tuple[str, str, str], ...]
    answer: frozenset
    praise: str


# --------------------------------------------------------------------------------------------- form
def form_values(q: Question, answer) -> dict[str, str]:
    """The answer as {box name: text}: a dict, a list/tuple in box order, or a plain string for a one-box form."""
    names = [b.name for b in q.key.boxes]
    if q.key.spread and isinstance(answer, str):
        answer = [answer]
    if q.key.spread and isinstance(answer, (dict, list, tuple)):
        answer = _spread(answer, names)
    if isinstance(answer, dict):
        return {n: as_text(answer.get(n)) for n in names}
    if isinstance(answer, (list, tuple)):
        items = list(answer)[: len(names)]
        return {n: as_text(items[i]) if i < len(items) else "" for i, n in enumerate(names)}
    if len(names) == 1:
        return {names[0]: as_text(answer)}
    return {n: "" for n in names}


_TUPLE_SEPARATORS = re.compile(r"\s*[,，、;；×xX*]\s*|\s+")
_TORCH_SIZE = re.compile(r"^\s*(?:torch\s*\.\s*)?size\s*\((.*)\)\s*$", re.IGNORECASE | re.DOTALL)


def _tuple_parts(first: str) -> list[str]:
    """「（8，12，64）」, 8×12×64, torch.Size([8, 12, 64]) -> ["8", "12", "64"]."""
    inner = unicodedata.normalize("NFKC", clean(first, 200)).strip()
    if m := _TORCH_SIZE.match(inner):
        inner = m.group(1)
    inner = inner.strip().rstrip("。.").strip().strip("()[]（）").strip()
    return [p for p in _TUPLE_SEPARATORS.split(inner) if p]


def _spread(answer, names: list[str]):
    """A whole tuple typed into the first box with the rest empty: 「（8，12，64）」, 8×12×64 -> one value a box."""
    items = list(answer.values()) if isinstance(answer, dict) else list(answer)
    first = items[0] if items else ""
    if not isinstance(first, str) or any(as_text(x).strip() for x in items[1:]):
        return answer
    parts = _tuple_parts(first)
    return parts if len(parts) == len(names) else answer


def _one_value_each(q: Question, answer) -> str:
    """Why the answer does not hold one value a box ('' when it does): more values than boxes, a box holding a
    list, or a shape of another length typed into the first box."""
    names = [b.name for b in q.key.boxes]
    if isinstance(answer, dict):
        boxes = [answer.get(n) for n in names]
        extra = [k for k, v in answer.items() if k not in names and as_text(v).strip()]
    elif isinstance(answer, (list, tuple)):
        boxes, extra = list(answer)[: len(names)], [v for v in list(answer)[len(names):] if as_text(v).strip()]
    else:
        boxes, extra = [answer], []
    want = f"这道题有 {len(names)} 个框，每个框只填一个数"
    if extra:
        return f"{want}，收到的却有 {len(names) + len(extra)} 个值。"
    for b, v in zip(q.key.boxes, boxes):
        if isinstance(v, (list, tuple, set, frozenset, dict)) and len(v) != 1:
            return f"{want}：「{b.label}」里放了 {len(v)} 个值。"
    if q.key.spread and boxes and isinstance(boxes[0], str) and not any(as_text(v).strip() for v in boxes[1:]):
        parts = _tuple_parts(boxes[0])
        if len(parts) > 1 and len(parts) != len(names) and all(p.isascii() for p in parts):  # not 「(8,12,64) 不对」
            return f"{want}；你写的形状有 {len(parts)} 维，本题的形状有 {len(names)} 维。"
    return ""


def check_form(q: Question, answer) -> Feedback:
    k: FormKey = q.key
    texts = form_values(q, answer)
    if not any(t.strip() for t in texts.values()):
        return blank(q.id, q.explanation, "在框里填上答案")
    if crowded := _one_value_each(q, answer):
        return unreadable(q.id, q.explanation, crowded, parts=[(b.name, "unread") for b in k.boxes])
    values, problems, empty, states = {}, [], [], []
    for b in k.boxes:
        if not texts[b.name].strip():
            empty.append(f"「{b.label}」")
            states.append((b.name, "empty"))
            continue
        value, why = b.read(texts[b.name])
        if value is None:
            problems.append(f"「{b.label}」{why}")
        states.append((b.name, "read" if value is not None else "unread"))
        values[b.name] = value
    if empty and not problems:
        return unreadable(q.id, q.explanation, f"{'、'.join(empty)}还空着，全部填好再提交。", INCOMPLETE, states)
    if empty:
        problems.append(f"{'、'.join(empty)}还空着。")
    if problems:
        return unreadable(q.id, q.explanation, "".join(problems), parts=states)
    verdicts = tuple((b.name, "right" if b.right(values[b.name]) else "wrong") for b in k.boxes)
    echoes = tuple((b.name, _echo(b, values[b.name])) for b in k.boxes)
    if all(v == "right" for _, v in verdicts):
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id, parts=verdicts, echoes=echoes)
    mistakes = tuple(f"{b.name}={_plain(values[b.name])}" for b in k.boxes if _named(b, values[b.name]))
    if k.whole is not None and (said := k.whole(values)):
        shape = "(" + ", ".join(_plain(v) for v in values.values()) + ")"
        return Feedback(False, WRONG + said, q.explanation, q.id, parts=verdicts, mistakes=(f"shape={shape}",),
                        echoes=echoes)
    parts, ok = [], []
    for b in k.boxes:
        value = values[b.name]
        if b.right(value):
            ok.append(f"「{b.label}」")
        else:
            parts.append(f"「{b.label}」你{b.verb}的是 {dict(echoes)[b.name]}。{b.wrong_why(value)}")
    if ok and len(k.boxes) > 1:
        parts.append(f"{'、'.join(ok)}填得对。")
    return Feedback(False, WRONG + "".join(parts), q.explanation, q.id, parts=verdicts, mistakes=mistakes,
                    echoes=echoes)


def _named(box, value) -> bool:
    """A wrong value that is a known mistake: a number box's hint, or any diagnosis of an expression or a choice."""
    if box.right(value):
        return False
    return box.named(value) if hasattr(box, "named") else bool(box.wrong_why(value))


def _plain(value) -> str:
    """A value as a mistake id writes it: 8192, 1/3, 512n², 变多 (no thousands separators)."""
    return str(value).replace(",", "")


def _echo(box, value) -> str:
    """The value read, exactly: never a spelling that equals the right one (31.9999999 is not echoed as 32)."""
    shown = box.shown(value)
    right = box.answer if isinstance(box, ChoiceBox) else box.target
    if not box.right(value) and shown == box.shown(right):  # impossible with exact formatting; kept as a promise
        return f"{shown}（与答案写出来一样，但不是同一个值：{value!r}）"
    return shown


# --------------------------------------------------------------------------------------------- choices
def _keys(answer, keys: tuple[str, ...]) -> list[str] | None:
    """Chosen keys: a key, a set/list of keys, or a string of key letters ('AC', 'A, C', 'a、c'); else None."""
    if len(as_text(answer)) > MAX_CHARS["multi"]:
        return None
    if isinstance(answer, (set, frozenset, list, tuple)):
        items = [unicodedata.normalize("NFKC", as_text(a)).strip().upper() for a in answer]
    else:
        text = unicodedata.normalize("NFKC", clean(as_text(answer), 400)).upper()
        items = [ch for ch in text if ch not in " ,、;/和\t\n"]
    if not items or any(i not in keys for i in items):
        return None
    return sorted(set(items))


def check_single(q: Question, answer) -> Feedback:
    k: ChoiceKey = q.key
    keys = tuple(key for key, _, _ in k.options)
    if not as_text(answer).strip():
        return blank(q.id, q.explanation, "选一个选项")
    chosen = _keys(answer, keys)
    if not chosen:
        return unreadable(q.id, q.explanation, f"请点选一个选项（{'、'.join(keys)} 之一）。")
    if len(chosen) > 1:
        return unreadable(q.id, q.explanation, f"这道题只选一项，你选了 {'、'.join(chosen)}。")
    if chosen[0] in k.answer:
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id)
    why = dict((key, w) for key, _, w in k.options)[chosen[0]]
    return Feedback(False, f"{WRONG}选项 {chosen[0]}：{why}", q.explanation, q.id, mistakes=(f"option={chosen[0]}",))


def check_multi(q: Question, answer) -> Feedback:
    k: ChoiceKey = q.key
    keys = tuple(key for key, _, _ in k.options)
    why = {key: w for key, _, w in k.options}
    if not as_text(answer).strip():
        return blank(q.id, q.explanation, "勾选你认为对的选项（可以多选）")
    chosen = _keys(answer, keys)
    if chosen is None:
        return unreadable(q.id, q.explanation, f"请勾选选项（{'、'.join(keys)} 中的一个或几个）。")
    chosen = set(chosen)
    if chosen == k.answer:
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id)
    parts = []
    if good := sorted(chosen & k.answer):
        parts.append(f"{'、'.join(good)} 选得对。")
    parts += [f"{key} 不该选：{why[key]}" for key in sorted(chosen - k.answer)]
    if missing := k.answer - chosen:
        parts.append(f"还有 {len(missing)} 个对的选项没有选，再读一遍每一项。")
    mistakes = tuple(f"option={key}" for key in sorted(chosen - k.answer)) + (("missing",) if missing else ())
    return Feedback(False, WRONG + "".join(parts), q.explanation, q.id, mistakes=mistakes)


# --------------------------------------------------------------------------------------------- self-explanation
def check_self(q: Question, answer) -> Feedback:
    """Free text: never graded. Returns the rubric to compare with, and a hint naming words in the answer."""
    rubric: Rubric = q.key
    return rubric_feedback(q.id, q.explanation, answer, rubric, MAX_CHARS["self"])


def rubric_feedback(qid: str, explanation: str, answer, rubric: Rubric, cap: int) -> Feedback:
    text = clean(as_text(answer), cap + 1).strip()
    if not text:  # nothing to compare yet: a prompt, no verdict (free text is never graded anyway)
        return Feedback(False, f"{ANSWER_FIRST}先用自己的话写几句，哪怕不确定也没关系；写好后再提交，"
                               "就会出现要点清单和常见误解，由你自己对照。", explanation, qid, blank=True, judged=False)
    head = f"{REVIEW}写好了。对照下面的要点和常见误解，勾出你的回答说到了哪几点，再点「记录自评」。"
    if len(text) > cap:
        head += f"（回答超过 {cap} 字，提示只看了前 {cap} 字。）"
    hint = hint_text(text[:cap], rubric)
    message = head + ("\n" + hint if hint else "")
    return Feedback(False, message, explanation, qid, show_explanation=True, judged=False)


def self_assess(qid: str, rubric: Rubric, ticked) -> Feedback:
    """The learner's own tick of the rubric, recorded as a self-assessment (never as 正确)."""
    names = [p.name for p in rubric.points]
    chosen = tuple(n for n in names if n in set(ticked or ()))
    rest = [n for n in names if n not in chosen]
    message = f"{SELF}你勾了 {len(chosen)} / {len(names)} 个要点。"
    if rest:
        message += "没勾的：" + "；".join(rest) + "。可以改一改你的回答，再对照一次。"
    else:
        message += "按你自己的对照，要点都说到了；再看一眼上面的误解，你的回答里没有吧？"
    return Feedback(False, message, "", qid, judged=False, covered=chosen)


CHECKERS: dict[str, Callable[[Question, object], Feedback]] = {
    "form": check_form,
    "single": check_single,
    "multi": check_multi,
    "self": check_self,
}
