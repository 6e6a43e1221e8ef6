"""One checker per kind of question, and the dispatch ``CHECKERS[kind](question, answer) -> Feedback``.

Each kind has an answer key (a small frozen dataclass) that a question declares; the checker reads
the learner's answer with ``parse`` (numbers, expressions) or ``freetext`` (key points) and says what
was right, what is wrong and why. Every kind caps the answer's length (``MAX_CHARS``), so a check
answers in milliseconds whatever is typed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from .feedback import REVIEW, RIGHT, WRONG, Feedback, Question, blank, echo, too_long
from .freetext import Misconception, Point, read_points, review_message
from .parse import EXPR, LABEL, NAME, Poly, as_text, chains, clean, fmt_number, negated_spans, normalize_math

__all__ = ["NumberKey", "ExpressionKey", "ChoiceKey", "ShapeKey", "TextKey", "CHECKERS", "MAX_CHARS"]

MAX_CHARS = {"number": 300, "expression": 300, "shape": 120, "single": 200, "multi": 200, "text": 1000}


# --------------------------------------------------------------------------------------------- answer keys
@dataclass(frozen=True)
class NumberKey:
    """A number (with tolerance) written any common way: 64, ６４, ٦٤, 64维, d_k = 64, 512/8, 5.5e7, 5498万8800 …

    ``labels`` name the unknown (a side ``d_k`` marks a claim); ``givens`` are numbers the question states
    (a bare mention of one is context, not an answer); ``hints`` map wrong values to advice;
    ``misconceptions`` are wrong claims in words (「不会随 h 变化」) that make the answer wrong.
    """

    target: Fraction
    praise: str
    rel_tol: float = 0.0
    symbols: dict = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    givens: tuple = ()
    hints: tuple = ()
    generic_hint: str = ""
    misconceptions: tuple[Misconception, ...] = ()


@dataclass(frozen=True)
class ExpressionKey:
    """An algebraic relation ``a = b`` equal to one of ``targets`` (name -> (Poly, praise)).

    ``sides`` names the two forms the relation must connect, each as groups of tokens (every group needs
    one token): e.g. the h-head form (8 and 64) and the one-head form (512). ``diagnose`` explains a wrong
    polynomial, ``no_n_hint`` an answer without n, ``one_side`` an answer that states only one form.
    """

    targets: dict
    symbols: dict
    diagnose: Callable[[Poly], str]
    no_n_hint: Callable[[list], str]
    sides: dict = field(default_factory=dict)  # form name -> groups of tokens
    one_side: dict = field(default_factory=dict)  # form name that is present alone -> advice


@dataclass(frozen=True)
class ChoiceKey:
    """``options``: (key, label, why) — ``why`` says why the option is right or what is wrong with it."""

    options: tuple[tuple[str, str, str], ...]
    answer: frozenset
    praise: str


@dataclass(frozen=True)
class ShapeKey:
    expected: tuple[int, ...]
    names: dict
    diagnose: Callable[[tuple], str]
    praise: str


@dataclass(frozen=True)
class TextKey:
    points: tuple[Point, ...]
    required: int
    misconceptions: tuple[Misconception, ...] = ()


# --------------------------------------------------------------------------------------------- helpers
def _read(q: Question, answer, what: str) -> tuple[str, Feedback | None]:
    """The answer as clean text, or the Feedback for a blank or over-long one (measured before it is read)."""
    raw = as_text(answer).strip()
    cap = MAX_CHARS[q.kind]
    if len(raw) > cap:
        return "", too_long(raw, q.id, q.explanation, cap, judged=q.kind != "text")
    text = clean(raw).strip()
    if not text:
        return text, blank(q.id, q.explanation, what)
    return text, None


def _wrong(q: Question, message: str) -> Feedback:
    return Feedback(False, WRONG + message, q.explanation, q.id)


def _claims_made(text: str, misconceptions) -> tuple[Misconception, ...]:
    return read_points(text, (), misconceptions).misconceptions if misconceptions else ()


# --------------------------------------------------------------------------------------------- number
def check_number(q: Question, answer) -> Feedback:
    k: NumberKey = q.key
    text, early = _read(q, answer, "写出一个数（可以写算式，例如 a / b）")
    if early:
        return early
    sym = {name: Poly.const(v) for name, v in k.symbols.items()}
    target = Fraction(k.target)

    def close(v: Fraction) -> bool:
        return abs(v - target) <= abs(target) * Fraction(k.rel_tol) if k.rel_tol else v == target

    for claim in _claims_made(text, k.misconceptions):
        return _wrong(q, f"「{claim.name}」：{claim.correction}")
    kept, denied = negated_spans(text)
    denied_values = [p.poly.constant for part in denied for sides in chains(part, sym, k.labels)[0]
                     for p in sides if p.poly is not None]  # fmt: skip
    found, errors = chains(kept, sym, k.labels)
    claims, context, problems = [], [], []
    givens = {Fraction(g) for g in k.givens}
    for sides in found:
        values = [s.poly.constant for s in sides if s.poly is not None]
        if len(set(values)) > 1:
            problems.append(f"等式 {' = '.join(fmt_number(v) for v in values)} 两边并不相等，请再算一遍。")
            continue
        if not values:
            continue
        kinds = {s.kind for s in sides}
        if LABEL in kinds:
            claims.append(values[0])
        elif NAME in kinds:
            continue  # 「h = 8」: restating the question
        elif len(sides) == 1 and values[0] in givens and not close(values[0]):
            context.append(values[0])
        else:
            claims.append(values[-1])
    if any(close(v) for v in denied_values):
        return _wrong(q, f"你写了「不是 {fmt_number(target)}」，可 {fmt_number(target)} 恰好就是答案。{k.generic_hint}")
    if problems:
        return _wrong(q, problems[0])
    if not claims:
        if context:
            shown = "、".join(fmt_number(v) for v in context)
            return _wrong(q, f"{shown} 是题目给出的条件，还不是答案。{k.generic_hint}")
        if denied_values:
            return _wrong(q, f"你只说了答案不是什么，还没有写出它是多少。{k.generic_hint}")
        if errors:
            return _wrong(q, f"没能读懂「{echo(errors[0][0])}」：{errors[0][1]}")
        return _wrong(q, f"答案里没有找到数字。请写一个数，或者能算出它的式子。{k.generic_hint}")
    wrong = [v for v in claims if not close(v)]
    if not wrong:
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id)
    v = wrong[0]
    for value, hint in k.hints:
        if Fraction(value) == v:
            return _wrong(q, f"你写的是 {fmt_number(v)}。{hint}")
    if target and abs(v - target) <= abs(target) / 5:
        off = float(abs(v - target) / abs(target)) * 100
        return _wrong(q, f"你写的是 {fmt_number(v)}，已经很接近了，但差了约 {off:.1f}%：请逐项精确地算一遍。"
                         f"{k.generic_hint}")  # fmt: skip
    return _wrong(q, f"你写的是 {fmt_number(v)}。{k.generic_hint}")


# --------------------------------------------------------------------------------------------- expression
def _forms(side_text: str, sides: dict) -> set[str]:
    tokens = set(re.findall(r"\d+|[a-z_][a-z0-9_]*", side_text))
    return {name for name, groups in sides.items() if all(tokens & set(group) for group in groups)}


def check_expression(q: Question, answer) -> Feedback:
    k: ExpressionKey = q.key
    text, early = _read(q, answer, "用 n 写出乘法次数的式子")
    if early:
        return early
    found, errors = chains(text, k.symbols)
    with_n, constant, forms = [], [], set()
    for sides in found:
        polys = [s.poly for s in sides]
        if len(set(polys)) > 1:
            return _wrong(q, f"等式两边不相等：化简后是 {' = '.join(str(p) for p in polys)}。请检查哪一边算错了。")
        if polys[0].degree > 0:
            with_n.append(polys[0])
            for s in sides:
                if s.kind == EXPR:
                    found_forms = _forms(s.text, k.sides)
                    forms |= found_forms if len(found_forms) == 1 else set()
        else:
            constant.append(polys[0])
    if not with_n:
        if errors and not constant:
            return _wrong(q, f"没能读懂「{echo(errors[0][0])}」：{errors[0][1]}")
        return _wrong(q, k.no_n_hint([p.constant for p in constant]))
    targets = [poly for poly, _ in k.targets.values()]
    for value in with_n:
        if value not in targets:
            return _wrong(q, f"你的式子化简后是 {value}。{k.diagnose(value)}")
    if k.sides and forms != set(k.sides):
        alone = next(iter(forms)) if len(forms) == 1 else ""
        return _wrong(q, f"化简后是 {with_n[-1]}，这一步没错。{k.one_side.get(alone, k.one_side.get('', ''))}")
    praise = next(msg for poly, msg in k.targets.values() if poly == with_n[-1])
    return Feedback(True, RIGHT + praise, q.explanation, q.id)


# --------------------------------------------------------------------------------------------- choices
_DENY = re.compile(r"[不没非错]|排除|去掉|除了|\bnot\b|\bno\b|\bwrong\b|\bexcept\b", re.IGNORECASE)


def _choice_keys(answer, keys: tuple[str, ...], labels: dict[str, str]) -> list[str] | None:
    """Keys chosen: a key, a set/list of keys, 'B', 'A, C', 'ac', an option's label; 「我选 A 和 C，B 不对」 -> A, C."""
    if isinstance(answer, (set, frozenset, list, tuple)):
        out = []
        for item in answer:
            got = _choice_keys(item, keys, labels)
            if got is None:
                return None
            out.extend(got)
        return sorted(set(out))
    folded = unicodedata.normalize("NFKC", clean(answer)).strip()
    for key, label in labels.items():
        if folded == unicodedata.normalize("NFKC", label).strip():
            return [key]
    chosen, denied = set(), set()
    for clause in re.split(r"[，,。；;！!？?\n]|但是|但|而", folded):
        words = re.findall(r"[A-Za-z]+", clause)
        words = [w for w in words if len(w) == 1 or w.isupper() or len(words) == 1]
        letters = [ch for w in words if set(w.upper()) <= set(keys) for ch in w.upper()]
        if not letters:
            continue
        if len(letters) > 2 * len(keys):
            return None
        (denied if _DENY.search(clause) else chosen).update(letters)
    chosen -= denied
    return sorted(chosen) if chosen else None


def check_single(q: Question, answer) -> Feedback:
    k: ChoiceKey = q.key
    keys = tuple(key for key, _, _ in k.options)
    _, early = _read(q, answer, "选一个选项")
    if early:
        return early
    chosen = _choice_keys(answer, keys, {key: label for key, label, _ in k.options})
    if not chosen:
        return _wrong(q, f"没有认出你选的是哪一项：请从 {'、'.join(keys)} 中选一个。")
    if len(chosen) > 1:
        return _wrong(q, f"这道题只有一个最合适的选项，你选了 {'、'.join(chosen)}。")
    if chosen[0] in k.answer:
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id)
    return _wrong(q, f"选项 {chosen[0]}：{dict((key, why) for key, _, why in k.options)[chosen[0]]}")


def check_multi(q: Question, answer) -> Feedback:
    k: ChoiceKey = q.key
    keys = tuple(key for key, _, _ in k.options)
    why = {key: w for key, _, w in k.options}
    _, early = _read(q, answer, "勾选你认为对的选项（可以多选）")
    if early:
        return early
    chosen = _choice_keys(answer, keys, {key: label for key, label, _ in k.options})
    if chosen is None:
        return _wrong(q, f"没有认出你选的是哪几项：请写 {'、'.join(keys)} 中的字母，例如「AC」。")
    chosen = set(chosen)
    if chosen == k.answer:
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id)
    parts = []
    if good := sorted(chosen & k.answer):
        parts.append(f"{'、'.join(good)} 选得对。")
    parts += [f"{key} 不该选：{why[key]}" for key in sorted(chosen - k.answer)]
    if missing := k.answer - chosen:
        parts.append(f"还有 {len(missing)} 个对的选项没有选，再读一遍每一项。")
    return _wrong(q, "".join(parts))


# --------------------------------------------------------------------------------------------- shape
def check_shape(q: Question, answer) -> Feedback:
    """A shape like (8, 12, 64), 8×12×64 or (h, n, d_k); with ``=`` every side must name the same shape."""
    k: ShapeKey = q.key
    text, early = _read(q, answer, "写出形状，例如 (a, b, c)")
    if early:
        return early
    from .parse import ALIASES  # the same spellings of d_k, d_model … as expressions use

    shapes = []
    for side in normalize_math(text, thousands=False).split("="):
        words = [ALIASES.get(w, w) for w in re.findall(r"\d+|[a-z_][a-z0-9_]*", side)]
        if any(len(w) > 12 for w in words if w.isdigit()):
            return _wrong(q, "数字位数太多了：形状里的每个数都不会超过几千。")
        dims = tuple(int(w) if w.isdigit() else k.names[w] for w in words if w.isdigit() or w in k.names)
        if dims:
            shapes.append(dims)
    if not shapes:
        return _wrong(q, "没有找到形状里的数：请写成 (a, b, c) 这样的三个整数。")
    if len(set(shapes)) > 1:
        return _wrong(q, f"等号两边不是同一个形状：{' 和 '.join(str(s) for s in shapes)}。")
    dims = shapes[0]
    if dims == k.expected:
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id)
    return _wrong(q, f"你写的是 {dims}，应为 {len(k.expected)} 维的 (h, n, d_k)。{k.diagnose(dims)}")


# --------------------------------------------------------------------------------------------- free text
def check_text(q: Question, answer) -> Feedback:
    """Short free text, read for the 解析's key points; never called 正确 (see ``freetext``)."""
    k: TextKey = q.key
    text, early = _read(q, answer, "用一两句话写下你的解释")
    if early:
        return early
    return text_feedback(q.id, q.explanation, text, k)


def text_feedback(qid: str, explanation: str, text: str, k: TextKey) -> Feedback:
    reading = read_points(text, k.points, k.misconceptions)
    complete = (len(reading.covered) >= k.required and not reading.negated and not reading.misconceptions
                and not reading.salad)  # fmt: skip
    return Feedback(
        complete,
        review_message(reading, k.points, REVIEW, complete),
        explanation,
        qid,
        show_explanation=True,
        covered=reading.covered,
        missing=reading.missing + reading.negated,
        misconceptions=tuple(c.name for c in reading.misconceptions),
        judged=False,
    )


CHECKERS: dict[str, Callable[[Question, object], Feedback]] = {
    "number": check_number,
    "expression": check_expression,
    "single": check_single,
    "multi": check_multi,
    "shape": check_shape,
    "text": check_text,
}
