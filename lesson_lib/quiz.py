"""The self-test of sections 8 and 10: questions, answer checking and the interview self-check.

Everything here is a pure function of the learner's answer: ``check(question_id, answer)`` returns a
``Feedback`` (``correct``, a Chinese ``message`` that says what was right, what is missing and a
hint, and the question's 解析). The widgets in ``quiz_widgets`` only wire controls to it.

Learner text is never executed. Numbers and expressions are read by a small recursive-descent
parser (numbers, + − × · * / ^ ², the symbol n and a few named sizes such as d_model, parentheses)
with limits on length, token count, nesting depth, exponent and the size of every coefficient; the
result is a polynomial in n compared exactly (fractions) with the answer key. Any string, however
long or odd, gets a ``Feedback``.

Every number in a question or an answer key comes from ``lesson_lib``: the base model's sizes and
Table 3 from ``paper``, d_k from ``attention.head_width``, multiply counts from ``flops``.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache

__all__ = [
    "Feedback",
    "Question",
    "ExpressionError",
    "Poly",
    "parse_expression",
    "questions",
    "question",
    "question_ids",
    "check",
    "interview_check",
    "INTERVIEW_POINTS",
    "model_answer",
    "Progress",
    "feedback_html",
    "text_html",
]

MAX_ANSWER_CHARS = 2000  # longer answers are not read at all (a kind message says so)
MAX_EXPRESSION_CHARS = 200  # one expression (a side of an equation chain)
MAX_TOKENS = 100
MAX_DEPTH = 16  # nested parentheses and signs
MAX_EXPONENT = 30  # |k| in x^k
MAX_DEGREE = 12  # highest power of n a result may reach
MAX_COEFFICIENT_DIGITS = 60  # numerator and denominator of every coefficient
RIGHT = "正确！"  # every right answer's message starts with this
WRONG = "还不对："  # every wrong answer's message starts with this; neither word appears anywhere else


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    """What the learner sees after 提交."""

    correct: bool
    message: str  # starts with 「正确！」 or 「还不对：」, then what was right, what is missing, a hint
    explanation: str = ""  # the question's 解析, shown on request (at once for free-text questions)
    question_id: str = ""
    blank: bool = False  # nothing was answered: the widgets do not count it as an attempt
    show_explanation: bool = False  # free-text questions reveal the 解析 straight after checking
    covered: tuple[str, ...] = ()  # key points found in a free-text answer
    missing: tuple[str, ...] = ()  # key points not found


@dataclass(frozen=True)
class Question:
    """One self-test question. ``kind`` is single, multi, number, expression, shape or text."""

    id: str
    section: str  # where the question's idea is taught, e.g. "第 4 节"
    kind: str
    prompt: str
    explanation: str
    choices: tuple[tuple[str, str], ...] = ()  # (key, label) for single/multi
    placeholder: str = ""
    checker: Callable[[object], Feedback] | None = field(default=None, repr=False, compare=False)


class ExpressionError(ValueError):
    """The learner's expression cannot be read; the message (Chinese) says why and what to write."""


# ---------------------------------------------------------------------------------------------
# Polynomials in n with exact rational coefficients
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Poly:
    """A polynomial in n: ``terms`` maps each power of n to a nonzero Fraction, sorted by power."""

    terms: tuple[tuple[int, Fraction], ...] = ()

    @staticmethod
    def make(mapping: dict[int, Fraction]) -> Poly:
        terms = tuple(sorted((p, Fraction(c)) for p, c in mapping.items() if c != 0))
        for p, c in terms:
            if p > MAX_DEGREE:
                raise ExpressionError(
                    f"式子里出现了 n 的 {p} 次方，超过了本题的上限 {MAX_DEGREE}：乘法次数不会这么高次。"
                )
            if _too_big(c):
                raise ExpressionError("式子里的数字太大了：请检查是不是多写了几位，或者指数写得太大。")
        return Poly(terms)

    @staticmethod
    def const(value) -> Poly:
        return Poly.make({0: Fraction(value)})

    @staticmethod
    def n() -> Poly:
        return Poly.make({1: Fraction(1)})

    def mapping(self) -> dict[int, Fraction]:
        return dict(self.terms)

    @property
    def degree(self) -> int:
        return self.terms[-1][0] if self.terms else 0

    @property
    def is_constant(self) -> bool:
        return self.degree == 0

    @property
    def constant(self) -> Fraction:
        return self.mapping().get(0, Fraction(0))

    def __add__(self, other: Poly) -> Poly:
        out = self.mapping()
        for p, c in other.terms:
            out[p] = out.get(p, Fraction(0)) + c
        return Poly.make(out)

    def __neg__(self) -> Poly:
        return Poly.make({p: -c for p, c in self.terms})

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        if self.degree + other.degree > MAX_DEGREE:
            raise ExpressionError(f"乘出来会有 n 的 {self.degree + other.degree} 次方，超过了上限 {MAX_DEGREE}。")
        out: dict[int, Fraction] = {}
        for p, a in self.terms:
            for q, b in other.terms:
                out[p + q] = out.get(p + q, Fraction(0)) + a * b
        return Poly.make(out)

    def divide(self, other: Poly) -> Poly:
        if not other.is_constant:
            raise ExpressionError("这里只支持除以一个常数（例如 512 / 8），不支持除以含 n 的式子。")
        if other.constant == 0:
            raise ExpressionError("式子里出现了除以 0：请检查分母。")
        return Poly.make({p: c / other.constant for p, c in self.terms})

    def power(self, exponent: Poly) -> Poly:
        if not exponent.is_constant or exponent.constant.denominator != 1:
            raise ExpressionError("指数必须是整数，例如 n^2 或 n²。")
        k = int(exponent.constant)
        if abs(k) > MAX_EXPONENT:
            raise ExpressionError(f"指数 {k} 太大了（上限 {MAX_EXPONENT}）：乘法次数的式子里用不到这么高的次方。")
        if k < 0:
            if not self.is_constant or self.constant == 0:
                raise ExpressionError("负指数只能用在非零常数上（例如 10^-3），不能用在 n 上。")
            return Poly.const(Fraction(1) / self.constant).power(Poly.const(-k))
        if self.degree * k > MAX_DEGREE:
            raise ExpressionError(f"乘出来会有 n 的 {self.degree * k} 次方，超过了上限 {MAX_DEGREE}。")
        result = Poly.const(1)
        for _ in range(k):
            result = result * self
        return result

    def value_at(self, n) -> Fraction:
        return sum((c * Fraction(n) ** p for p, c in self.terms), Fraction(0))

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for p, c in reversed(self.terms):
            sign = "-" if c < 0 else "+"
            mag = abs(c)
            num = "" if (mag == 1 and p > 0) else _fmt_number(mag)
            var = "" if p == 0 else ("n" if p == 1 else "n" + str(p).translate(_TO_SUPERSCRIPT))
            parts.append((sign, num + var))
        text = ("-" if parts[0][0] == "-" else "") + parts[0][1]
        for sign, body in parts[1:]:
            text += f" {sign} {body}"
        return text


def _too_big(c: Fraction) -> bool:
    limit = 10**MAX_COEFFICIENT_DIGITS
    return abs(c.numerator) >= limit or c.denominator >= limit


def _fmt_number(x) -> str:
    """1,048,576 for integers; a short decimal otherwise."""
    x = Fraction(x)
    if x.denominator == 1:
        return f"{x.numerator:,}"
    return f"{float(x):.6g}"


_TO_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


# ---------------------------------------------------------------------------------------------
# Reading learner text: normalise, cut into candidate expressions, parse (never eval)
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<name>[a-z_][a-z0-9_]*)|(?P<op>[-+*/^()×·]))")
_ALIASES = {"dk": "d_k", "dv": "d_v", "dmodel": "d_model", "d_m": "d_model", "hidden": "d_model", "heads": "h"}
_OPERATOR_VARIANTS = str.maketrans(
    {
        "−": "-", "–": "-", "—": "-", "﹣": "-", "‐": "-",
        "⋅": "·", "∙": "·", "•": "·", "・": "·", "･": "·",
        "✕": "×", "✖": "×", "⨯": "×", "∗": "*",
        "÷": "/", "∕": "/",
        "[": "(", "]": ")", "{": "(", "}": ")",
    }
)  # fmt: skip
_CHINESE_UNITS = {"千": "*1000", "万": "*10000", "亿": "*100000000"}
_CHINESE_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_CHINESE_MULTIPLIERS = {"十": 10, "百": 100, "千": 1000}


def _clean(answer) -> str:
    """Any object -> a str without control characters (kept: newline and tab)."""
    if answer is None:
        return ""
    if isinstance(answer, (set, frozenset, list, tuple)):
        return " ".join(sorted(_clean(item) for item in answer))
    if not isinstance(answer, str):
        try:
            answer = str(answer)
        except Exception:  # an object whose __str__ fails is just an unreadable answer
            return ""
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else " " for ch in answer)


def _chinese_number(word: str) -> str:
    """六十四 -> 64, 五百一十二 -> 512 (runs with a unit 十/百/千 only, so 「一组」 stays a word)."""
    total, digit = 0, None
    for ch in word:
        if ch in _CHINESE_DIGITS:
            digit = _CHINESE_DIGITS[ch]
        else:
            total += (1 if digit is None else digit) * _CHINESE_MULTIPLIERS[ch]
            digit = None
    return str(total + (digit or 0))


def _normalize_math(text: str, thousands: bool = True) -> str:
    """Fold the ways people write maths into one ASCII-ish spelling: full-width, ², ×, 万, 5e7, d_{k}, 六十四 …

    ``thousands``: read 54,988,800 as one number (off for shapes, where (12,512) is two).
    """
    text = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", lambda m: "^(" + m.group().translate(_FROM_SUPERSCRIPT) + ") ", text)
    if thousands:
        text = re.sub(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?![\d,])", lambda m: m.group().replace(",", ""), text)
    text = re.sub(r"(?<!\d)[零〇一二两三四五六七八九十百千]*[十百千][零〇一二两三四五六七八九十百千]*",
                  lambda m: _chinese_number(m.group()), text[: 4 * MAX_ANSWER_CHARS])  # fmt: skip
    text = unicodedata.normalize("NFKC", text)[: 4 * MAX_ANSWER_CHARS].lower()
    text = text.translate(_OPERATOR_VARIANTS).replace("**", "^")
    text = re.sub(r"_\(([a-z0-9]+)\)", r"_\1", text)  # d_{k} (braces became parentheses) -> d_k
    text = re.sub(r"(?<=\d)\s*([千万亿]+)", lambda m: "".join(_CHINESE_UNITS[u] for u in m.group(1)) + " ", text)
    text = text.replace("除以", "/").replace("乘以", "×")
    text = re.sub(r"(?<=\d)e([+-]?\d{1,3})(?![\d.])", r"*10^(\1)", text)  # 5.5e7
    text = re.sub(r"(?<=[\d)\s])x(?=[\s\d(])", "×", text)  # 8 x 64 means 8 × 64
    return text


def _segments(text: str, names: Iterable[str]) -> list[str]:
    """Cut normalised text into candidate expressions; prose (Chinese words, unknown names) separates them."""
    known = set(names)

    def keep_name(m):
        word = _ALIASES.get(m.group(), m.group())
        if word in known:
            return word
        if len(word) <= 4 and all(ch in known for ch in word):
            return "·".join(word)  # 4nd² means 4·n·d²
        return " "

    text = re.sub(r"[a-z_][a-z0-9_]*", keep_name, text)
    out = []
    for ch in text:
        if ch in "0123456789abcdefghijklmnopqrstuvwxyz_.+-*/^()×·= ":
            out.append(ch)
        elif unicodedata.category(ch)[0] == "L":
            out.append(" ")  # a word inside an expression: 「8 个头 × 64 维」 -> 8 × 64
        else:
            out.append("\n")  # punctuation and line breaks end an expression
    text = "".join(out)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", "\n", text)  # a full stop, not a decimal point
    text = re.sub(r"(?<=[0-9a-z_)])\s+(?=\d)", "\n", text)  # 「8 个头每个 64 维」 -> 8 | 64
    pieces = []
    for piece in text.split("\n"):
        piece = piece.strip(" =")
        if re.search(r"[0-9a-z]", piece):
            pieces.append(piece)
    return pieces


class _Parser:
    """expr := term (± term)*; term := unary ((×|·|*|/)? unary)*; unary := ± unary | power;
    power := atom (^ unary)?; atom := number | name | ( expr ). Bounded in depth and tokens."""

    def __init__(self, text: str, symbols: dict[str, Poly]):
        if len(text) > MAX_EXPRESSION_CHARS:
            raise ExpressionError(
                f"这个式子有 {len(text)} 个字符，太长了：请只写关键的一行（{MAX_EXPRESSION_CHARS} 字以内）。"
            )
        self.symbols = symbols
        self.tokens = self._tokenize(text)
        self.i = 0
        self.depth = 0

    @staticmethod
    def _tokenize(text: str) -> list[tuple[str, str]]:
        tokens, pos = [], 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                bad = text[pos:].strip()[:1]
                raise ExpressionError(f"式子里有看不懂的字符「{bad}」：只能用数字、n、+ − × · / ^ ² 和括号。")
            kind = m.lastgroup or "op"
            tokens.append((kind, m.group(kind)))
            pos = m.end()
            if len(tokens) > MAX_TOKENS:
                raise ExpressionError(f"式子太长了（超过 {MAX_TOKENS} 个记号）：请只写关键的一行。")
        if not tokens:
            raise ExpressionError("式子是空的。")
        return tokens

    def parse(self) -> Poly:
        result = self.expr()
        if self.i < len(self.tokens):
            raise ExpressionError(f"读到「{self.tokens[self.i][1]}」时接不上了：是不是少了运算符或括号？")
        return result

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def enter(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"括号或正负号套得太深了（超过 {MAX_DEPTH} 层）：请把式子写得简单一些。")

    def expr(self) -> Poly:
        result = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take()[1]
            rhs = self.term()
            result = result + rhs if op == "+" else result - rhs
        return result

    def term(self) -> Poly:
        result = self.unary()
        while True:
            kind, value = self.peek()
            if kind == "op" and value in "*×·/":
                self.take()
                rhs = self.unary()
                result = result.divide(rhs) if value == "/" else result * rhs
            elif kind == "name" or (kind, value) == ("op", "("):
                result = result * self.unary()  # 512n, 8(n·64·n)
            elif kind == "num":
                pair = _fmt_token(self.tokens, self.i)
                raise ExpressionError(f"「{pair}」之间缺少运算符：请用 × 或 · 连起来（平方写成 n^2 或 n²）。")
            else:
                return result

    def unary(self) -> Poly:
        if self.peek() in (("op", "-"), ("op", "+")):
            op = self.take()[1]
            self.enter()
            inner = self.unary()
            self.depth -= 1
            return -inner if op == "-" else inner
        return self.power()

    def power(self) -> Poly:
        base = self.atom()
        if self.peek() == ("op", "^"):
            self.take()
            self.enter()
            exponent = self.unary()
            self.depth -= 1
            return base.power(exponent)
        return base

    def atom(self) -> Poly:
        kind, value = self.take()
        if kind == "num":
            if len(value) > 30:
                raise ExpressionError("数字位数太多了：请检查是不是多打了几位。")
            return Poly.const(Fraction(value))
        if kind == "name":
            if value not in self.symbols:
                names = "、".join(sorted(self.symbols)) or "（无）"
                raise ExpressionError(f"不认识「{value}」：本题能用的符号有 {names}。平方请写成 n^2 或 n²。")
            return self.symbols[value]
        if (kind, value) == ("op", "("):
            self.enter()
            inner = self.expr()
            self.depth -= 1
            if self.take() != ("op", ")"):
                raise ExpressionError("括号没有配对：请检查每个「(」都有对应的「)」。")
            return inner
        if kind == "end":
            raise ExpressionError("式子在运算符后面就结束了：是不是少写了一个数？")
        raise ExpressionError(f"「{value}」出现的位置不对：请检查式子的写法。")


def _fmt_token(tokens, i) -> str:
    return " ".join(t[1] for t in tokens[max(0, i - 1) : i + 1])


def parse_expression(text: str, symbols: dict[str, Poly] | None = None) -> Poly:
    """Parse one expression (already normalised or not) into a Poly. Raises ExpressionError, never evaluates code."""
    symbols = {"n": Poly.n()} if symbols is None else symbols
    return _Parser(_normalize_math(_clean(text)).strip(), symbols).parse()


LABEL = "label"  # marks a side of an equation that is the unknown's name (d_k = …)


def _chains(text: str, symbols: dict[str, Poly], labels: Iterable[str] = ()):
    """Every candidate expression as an equation chain: a list of sides (Poly, or LABEL/('name', name))."""
    labels = set(labels)
    chains, errors = [], []
    for segment in _segments(_normalize_math(text), set(symbols) | labels):
        sides = []
        try:
            for side in segment.split("="):
                side = side.strip()
                if not side:
                    continue
                if side in labels:
                    sides.append(LABEL)
                    continue
                poly = _Parser(side, symbols).parse()
                sides.append(("name", side, poly) if side in symbols else poly)
        except ExpressionError as exc:
            errors.append((segment, str(exc)))
            continue
        if sides:
            chains.append(sides)
    return chains, errors


def _poly_of(side) -> Poly | None:
    if side == LABEL:
        return None
    return side[2] if isinstance(side, tuple) else side


def _too_long(text: str, qid: str, explanation: str) -> Feedback | None:
    if len(text) > MAX_ANSWER_CHARS:
        return Feedback(
            False,
            f"{WRONG}这个答案有 {len(text):,} 个字符，太长了，我没有逐字去读。请只写关键的一两句或一个式子"
            f"（{MAX_ANSWER_CHARS} 字以内）。",
            explanation,
            qid,
        )
    return None


def _blank(qid: str, explanation: str, what: str = "写下你的答案") -> Feedback:
    message = f"{WRONG}还没有作答。先{what}，哪怕不确定也没关系，提交后会告诉你差在哪里。"
    return Feedback(False, message, explanation, qid, blank=True)


def _echo(text: str, limit: int = 24) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


# ---------------------------------------------------------------------------------------------
# Checkers for each kind of question (built once per question by the factories below)
# ---------------------------------------------------------------------------------------------


def _number_checker(
    qid,
    explanation,
    target,
    *,
    rel_tol=0.0,
    symbols: dict[str, Fraction] | None = None,
    labels=(),
    givens=(),
    hints=(),
    generic_hint="",
    praise="",
):
    """A number (with tolerance) written any common way: 64, ６４, 64维, d_k = 64, 512/8, 5.5e7, 5498万 …

    ``labels`` name the unknown (a side ``d_k`` marks a claim); ``givens`` are numbers the question
    states (a bare mention of one is context, not an answer); ``hints`` map wrong values to advice.
    """
    target = Fraction(target)
    sym = {k: Poly.const(v) for k, v in (symbols or {}).items()}
    givens = {Fraction(g) for g in givens}

    def close(v: Fraction) -> bool:
        return abs(v - target) <= abs(target) * Fraction(rel_tol) if rel_tol else v == target

    def run(answer) -> Feedback:
        text = _clean(answer).strip()
        if not text:
            return _blank(qid, explanation, "写出一个数（可以写算式，例如 a / b）")
        if (long := _too_long(text, qid, explanation)) is not None:
            return long
        chains, errors = _chains(text, sym, labels)
        claims, context, problems = [], [], []
        for sides in chains:
            polys = [p for p in (_poly_of(s) for s in sides) if p is not None]  # symbols are all numbers here
            values = [p.constant for p in polys]
            if len(set(values)) > 1:
                shown = " = ".join(_fmt_number(v) for v in values)
                problems.append(f"等式 {shown} 两边并不相等，请再算一遍。")
                continue
            if not values:
                continue
            if LABEL in sides:
                claims.append(values[0])
            elif any(isinstance(s, tuple) for s in sides):
                continue  # 「h = 8」: restating the question
            elif len(sides) == 1 and values[0] in givens and not close(values[0]):
                context.append(values[0])
            else:
                claims.append(values[-1])
        if problems:
            return Feedback(False, f"{WRONG}{problems[0]}", explanation, qid)
        if not claims:
            if context:
                shown = "、".join(_fmt_number(v) for v in context)
                return Feedback(False, f"{WRONG}{shown} 是题目给出的条件，还不是答案。{generic_hint}", explanation, qid)
            if errors:
                return Feedback(False, f"{WRONG}没能读懂「{_echo(errors[0][0])}」：{errors[0][1]}", explanation, qid)
            return Feedback(
                False, f"{WRONG}答案里没有找到数字。请写一个数，或者能算出它的式子。{generic_hint}", explanation, qid
            )
        wrong = [v for v in claims if not close(v)]
        if not wrong:
            return Feedback(True, f"{RIGHT}{praise}", explanation, qid)
        v = wrong[0]
        for value, hint in hints:
            if Fraction(value) == v:
                return Feedback(False, f"{WRONG}你写的是 {_fmt_number(v)}。{hint}", explanation, qid)
        if target and abs(v - target) <= abs(target) / 5:
            off = float(abs(v - target) / abs(target)) * 100
            return Feedback(
                False, f"{WRONG}你写的是 {_fmt_number(v)}，已经很接近了，但差了约 {off:.1f}%：请逐项精确地算一遍。"
                f"{generic_hint}", explanation, qid,
            )  # fmt: skip
        return Feedback(False, f"{WRONG}你写的是 {_fmt_number(v)}。{generic_hint}", explanation, qid)

    return run


def _expression_checker(qid, explanation, targets, symbols, diagnose, *, no_n_hint):
    """An algebraic relation (a chain ``a = b = …`` or one side) equal to one of ``targets`` (name -> (Poly, praise)).
    """

    def run(answer) -> Feedback:
        text = _clean(answer).strip()
        if not text:
            return _blank(qid, explanation, "用 n 写出乘法次数的式子")
        if (long := _too_long(text, qid, explanation)) is not None:
            return long
        chains, errors = _chains(text, symbols)
        with_n, constant = [], []
        for sides in chains:
            polys = [_poly_of(s) for s in sides]
            if len(set(polys)) > 1:
                shown = " = ".join(str(p) for p in polys)
                message = f"{WRONG}等式两边不相等：化简后是 {shown}。请检查哪一边算错了。"
                return Feedback(False, message, explanation, qid)
            (with_n if polys[0].degree > 0 else constant).append(polys[0])
        if not with_n:
            if errors and not constant:
                return Feedback(False, f"{WRONG}没能读懂「{_echo(errors[0][0])}」：{errors[0][1]}", explanation, qid)
            values = [p.constant for p in constant]
            return Feedback(False, f"{WRONG}{no_n_hint(values)}", explanation, qid)
        for value in with_n:
            if value not in (poly for poly, _ in targets.values()):
                return Feedback(False, f"{WRONG}你的式子化简后是 {value}。{diagnose(value)}", explanation, qid)
        praise = next(msg for poly, msg in targets.values() if poly == with_n[-1])
        return Feedback(True, f"{RIGHT}{praise}", explanation, qid)

    return run


def _choice_keys(answer, keys: tuple[str, ...], labels: dict[str, str]) -> list[str] | None:
    """Keys chosen: a key, a set/list of keys, 'B', 'A, C', 'ac', or an option's label text."""
    if isinstance(answer, (set, frozenset, list, tuple)):
        out = []
        for item in answer:
            got = _choice_keys(item, keys, labels)
            if got is None:
                return None
            out.extend(got)
        return sorted(set(out))
    text = _clean(answer)
    folded = unicodedata.normalize("NFKC", text).strip()
    for key, label in labels.items():
        if folded == unicodedata.normalize("NFKC", label).strip():
            return [key]
    letters = re.sub(r"[^A-Za-z]", "", folded).upper()  # 「选 B。」「A、C」「ac」
    if letters and len(letters) <= 2 * len(keys) and set(letters) <= set(keys):
        return sorted(set(letters))
    return None


def _single_checker(qid, explanation, options, answer_key, praise):
    """options: (key, label, why) — ``why`` explains the option (why it is right or what is wrong in it)."""
    keys = tuple(k for k, _, _ in options)
    labels = {k: label for k, label, _ in options}
    why = {k: w for k, _, w in options}

    def run(answer) -> Feedback:
        if not _clean(answer).strip():
            return _blank(qid, explanation, "选一个选项")
        chosen = _choice_keys(answer, keys, labels)
        if not chosen:
            message = f"{WRONG}没有认出你选的是哪一项：请从 {'、'.join(keys)} 中选一个。"
            return Feedback(False, message, explanation, qid)
        if len(chosen) > 1:
            return Feedback(False, f"{WRONG}这道题只有一个最合适的选项，你选了 {'、'.join(chosen)}。", explanation, qid)
        key = chosen[0]
        if key == answer_key:
            return Feedback(True, f"{RIGHT}{praise}", explanation, qid)
        return Feedback(False, f"{WRONG}选项 {key}：{why[key]}", explanation, qid)

    return run


def _multi_checker(qid, explanation, options, answer_keys, praise):
    """Choose every true statement; feedback names what is missing and what should not be chosen, and why."""
    keys = tuple(k for k, _, _ in options)
    labels = {k: label for k, label, _ in options}
    why = {k: w for k, _, w in options}
    answer_keys = set(answer_keys)

    def run(answer) -> Feedback:
        if not _clean(answer).strip():
            return _blank(qid, explanation, "勾选你认为对的选项（可以多选）")
        chosen = _choice_keys(answer, keys, labels)
        if chosen is None:
            return Feedback(
                False, f"{WRONG}没有认出你选的是哪几项：请写 {'、'.join(keys)} 中的字母，例如「AC」。", explanation, qid
            )
        chosen = set(chosen)
        if chosen == answer_keys:
            return Feedback(True, f"{RIGHT}{praise}", explanation, qid)
        parts = []
        extra = sorted(chosen - answer_keys)
        missing = sorted(answer_keys - chosen)
        good = sorted(chosen & answer_keys)
        if good:
            parts.append(f"{'、'.join(good)} 选得对。")
        for k in extra:
            parts.append(f"{k} 不该选：{why[k]}")
        if missing:
            parts.append(f"还有 {len(missing)} 个对的选项没有选，再读一遍每一项。")
        return Feedback(False, WRONG + "".join(parts), explanation, qid)

    return run


def _shape_checker(qid, explanation, expected: tuple[int, ...], names: dict[str, int], diagnose):
    """A shape like (8, 12, 64), 8×12×64 or (h, n, d_k) (names are read as their values)."""

    def run(answer) -> Feedback:
        text = _clean(answer).strip()
        if not text:
            return _blank(qid, explanation, "写出形状，例如 (a, b, c)")
        if (long := _too_long(text, qid, explanation)) is not None:
            return long
        norm = _normalize_math(text, thousands=False)
        words = [_ALIASES.get(w, w) for w in re.findall(r"\d+|[a-z_][a-z0-9_]*", norm)]
        if any(len(w) > 12 for w in words if w.isdigit()):
            return Feedback(False, f"{WRONG}数字位数太多了：形状里的每个数都不会超过几千。", explanation, qid)
        dims = tuple(int(w) if w.isdigit() else names[w] for w in words if w.isdigit() or w in names)
        if not dims:
            return Feedback(False, f"{WRONG}没有找到形状里的数：请写成 (a, b, c) 这样的三个整数。", explanation, qid)
        if dims == expected:
            message = f"{RIGHT}形状是 {expected}：头放在最前面，每个头是一个 (n, d_k) 矩阵。"
            return Feedback(True, message, explanation, qid)
        message = f"{WRONG}你写的是 {dims}，应为 {len(expected)} 维的 (h, n, d_k)。{diagnose(dims)}"
        return Feedback(False, message, explanation, qid)

    return run


def _normalize_text(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text).lower())


def _covered(text: str, concepts) -> tuple[list[str], list[str]]:
    """Which concepts a free text mentions. A concept is (name, hint, groups); each group is a tuple of synonyms
    and the concept counts when every group has at least one synonym in the text."""
    folded = _normalize_text(text)
    covered, missing = [], []
    for name, _hint, groups in concepts:
        ok = all(any(_normalize_text(s) in folded for s in group) for group in groups)
        (covered if ok else missing).append(name)
    return covered, missing


def _text_checker(qid, explanation, concepts, required: int):
    """Short free text: checked against the 解析's key concepts (Chinese and English synonyms).

    A keyword check is a heuristic (it cannot tell 「不是平均」 from 「平均」), so the full 解析 is always
    shown afterwards and the learner judges their own wording against it.
    """

    def run(answer) -> Feedback:
        text = _clean(answer).strip()
        if not text:
            return _blank(qid, explanation, "用一两句话写下你的解释")
        if (long := _too_long(text, qid, explanation)) is not None:
            return Feedback(long.correct, long.message, explanation, qid, show_explanation=True)
        covered, missing = _covered(text, concepts)
        hints = {name: hint for name, hint, _ in concepts}
        have = f"你的回答提到了：{'、'.join(covered)}。" if covered else ""
        lack = "".join(f"还可以补上「{m}」：{hints[m]}" for m in missing)
        ok = len(covered) >= required
        head = RIGHT if ok else WRONG
        if not covered:
            body = f"没有找到解析里的关键词。{lack}"
        else:
            body = have + lack
        return Feedback(
            ok, head + body + "下面是完整解析，对照一下你的说法。", explanation, qid, False, True, tuple(covered),
            tuple(missing),
        )  # fmt: skip

    return run


# ---------------------------------------------------------------------------------------------
# The questions. Numbers come from lesson_lib (paper facts, the kernel's head_width, the FLOP counter).
# ---------------------------------------------------------------------------------------------

N_SHAPE_EXAMPLE = 12  # tokens in the §3 shape question (any n works; 12 keeps the numbers apart)
N_FLOPS_EXAMPLE = 50  # tokens in the §4 counting questions (the paper-facts example)
H_FLOPS_EXAMPLE = 16  # head count in the §4 counting questions (a Table 3 (A) row)


@cache
def _facts() -> dict:
    from . import paper
    from .attention import head_width, split_heads
    from .flops import count, parameters

    d, h = paper.BASE_D_MODEL, paper.BASE_HEADS
    d_k = head_width(d, h)
    one = count(1, d, h)  # at n = 1 every stage's count is its coefficient (each stage is one monomial)
    shape = split_heads(_zeros((N_SHAPE_EXAMPLE, d)), h).shape
    table_a = [r for r in paper.TABLE3 if r["row"] in ("base", "A")]
    lab_heads = [c for c in range(1, d + 1) if d % c == 0 and c <= 64]
    return {
        "d": d,
        "h": h,
        "d_k": d_k,
        "pages": dict(paper.FIGURE_PAGES),
        "table3": list(paper.TABLE3),
        "table_a": table_a,
        "scores_coef": one.scores,  # n²·d_model
        "weights_v_coef": one.weights_v,  # n²·d_model
        "proj_coef": one.qkv_projections + one.output_projection,  # n·4·d_model²
        "count": count,
        "parameters": parameters,
        "head_width": head_width,
        "split_shape": tuple(int(s) for s in shape),
        "lab_heads": (lab_heads[0], lab_heads[-1]),
    }


def _zeros(shape):
    import numpy as np

    return np.zeros(shape)


def _n2(coef) -> Poly:
    return Poly.make({2: Fraction(coef)})


def _q1() -> Question:
    f = _facts()
    explanation = (
        "解析：单头注意力对每个查询位置只算出一组权重（一行 softmax，总和为 1），输出是所有 Value 向量按这组权重的"
        "加权平均。想同时照顾「指代」和「语法角色」两条线索，就只能把权重分给几个词，各条线索的信息被混进同一个"
        "向量里，互相冲淡，谁也不够清晰——论文的说法是 averaging inhibits this（平均化抑制了这种能力）。"
        "多头的办法是给每条线索一套自己的权重。\n"
        "严格来说：第 2 节「小红 40%、小明 30%、苹果 30%」是简化的类比；真实的单头是在高维向量上做加权平均，"
        f"d_model = {f['d']} 的每一维都按同一组权重混合，但「多条信息被平均抹平」这个方向是一致的。"
    )
    concepts = (
        ("只有一组权重", "单头对每个查询只有一组（一行）注意力权重，总和为 1。", (
            ("一组", "一套", "一份", "一行", "单一", "唯一", "一个权重", "一个分布", "一种分布", "同一组", "只有一个",
             "oneset", "singleset", "onedistribution", "singledistribution", "onesetofweights"),
        )),
        ("加权平均", "输出是各个 Value 按这组权重的加权平均（加权求和）。", (
            ("平均", "加权", "求和", "凸组合", "average", "averaging", "weighted", "sum"),
        )),
        ("不同信息被混在一起", "几条线索的信息被挤进同一个向量，互相冲淡、无法分开。", (
            ("混", "抹平", "糊", "模糊", "压缩", "丢失", "损失", "冲淡", "稀释", "搅", "分不开", "无法区分", "抑制",
             "顾此失彼", "平庸", "mix", "blur", "blend", "inhibit", "dilut", "lose", "lost", "collapse", "wash"),
        )),
    )  # fmt: skip
    return Question(
        "Q1",
        "第 2 节",
        "text",
        "Q1　单头注意力为什么无法同时关注多个不同的重点？（用一两句话回答）",
        explanation,
        placeholder="用自己的话写：单头的权重是怎样的？输出是怎么算出来的？",
        checker=_text_checker("Q1", explanation, concepts, required=2),
    )


def _q2() -> Question:
    f = _facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    params = f["parameters"](d, h)
    explanation = (
        f"解析：每个头的 d_k = d_v = d_model / h = {d} / {h} = {d_k}。\n"
        f"对应的投影矩阵：每个头的 W_i^Q、W_i^K、W_i^V 都是 {d} × {d_k}；{h} 个头的 W_i^Q 并排放在一起就是一个 "
        f"{d} × {d} 的矩阵，W^O 也是 {d} × {d}。所以一层的投影参数共 4 · d_model² = {params:,} 个，"
        "无论 h 取多少都一样——这也是论文表 3 (A) 行改变头数时参数量不变的原因。"
    )
    hints = [
        (d, f"{d} 是 d_model，整个模型的宽度；它要平均分给 {h} 个头，每个头只拿到其中一份。"),
        (h, f"{h} 是头数 h；问的是每个头有多少维。"),
        (d * h, f"{d} × {h} 把乘除弄反了：维度是被切分给各个头的，应当用除法。"),
    ]
    for row in f["table3"]:
        if row["d_k"] != d_k and all(v != row["d_k"] for v, _ in hints):
            hints.append((row["d_k"], f"这是论文表 3 里 h = {row['h']} 时的 d_k；本题是 base 模型，h = {h}。"))
    return Question(
        "Q2",
        "第 3 节",
        "number",
        f"Q2　在 Base 模型中，d_model = {d}，h = {h}，每个头的 d_k 和 d_v 是多少？",
        explanation,
        placeholder="例如：d_k = …",
        checker=_number_checker(
            "Q2",
            explanation,
            d_k,
            symbols={"d_model": d, "h": h},
            labels=("d_k", "d_v"),
            givens=(d, h),
            hints=tuple(hints),
            generic_hint=f"提示：{d} 维要平均分给 {h} 个头，d_k = d_v = d_model / h。",
            praise=f"d_k = d_v = {d} / {h} = {d_k}：{d} 维平均切给 {h} 个头，每个头 {d_k} 维。",
        ),
    )


def _q3() -> Question:
    f = _facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    count = f["count"]
    n = N_FLOPS_EXAMPLE
    exps = {hh: count(n, d, hh).softmax_exp for hh in (1, h)}
    explanation = (
        f"解析：打分 QKᵀ 时，单头是 (n × {d}) 乘 (n × {d})ᵀ，得到 n × n 个分数，每个分数要 {d} 次乘法，"
        f"共 n · {d} · n = {d}n² 次。{h} 个头时，每个头是 (n × {d_k}) 乘 (n × {d_k})ᵀ，{d_k}n² 次，"
        f"{h} 个头合计 {h} · {d_k}n² = {d}n²。关键在 h × d_k = d_model：头变多，每个头就同比例变窄。\n"
        f"严格来说：{h} · {d_k}n² = {d}n² 只是 QKᵀ 这一步。weights × V 同样是 n²·d_model，也守恒；"
        "Q/K/V 投影与 W^O 共 4·n·d_model² 次，与 h 无关；但 softmax 对每个头的 n × n 分数各做一次 exp 和一次除法，"
        f"共 h·n² 次，会随 h 增长（n = {n} 时，h = 1 要 {exps[1]:,} 次 exp，h = {h} 要 {exps[h]:,} 次）。"
        "它比矩阵乘法小得多，所以论文说总成本「相近」（similar），而不是完全相同。"
    )
    symbols = {"n": Poly.n(), "d_model": Poly.const(d), "d": Poly.const(d), "h": Poly.const(h),
               "d_k": Poly.const(d_k), "d_v": Poly.const(d_k)}  # fmt: skip
    scores = _n2(f["scores_coef"])
    both = scores + _n2(f["weights_v_coef"])
    total = both + Poly.make({1: Fraction(f["proj_coef"])})
    targets = {
        "scores": (scores, f"{h} · (n · {d_k} · n) = {h} · {d_k}n² = {d}n²，和单头的 n · {d} · n 相同："
                           f"h × d_k = d_model，头变多、每头变窄，乘法总量不变。"),
        "scores+v": (both, f"你把打分 QKᵀ 和 weights × V 两步都算进去了：各 {d}n²，合计 {both}，同样与 h 无关。"),
        "matmul": (total, f"连投影一起算，全部矩阵乘法 {total} 次，与 h 无关。"),
    }  # fmt: skip

    def diagnose(value: Poly) -> str:
        if value == _n2(d_k):
            return f"这是一个头的乘法量；{h} 个头要再乘以 {h}。"
        if value == _n2(d * h):
            return f"看起来你让每个头都用了 {d} 维：多头时每个头只有 d_k = {d_k} 维。"
        if value == _n2(d * d):
            return (f"(n × {d}) 和 ({d} × n) 是两个矩阵的形状，不是乘法次数：结果有 n × n 个元素，"
                    f"每个元素做 {d} 次乘法，共 n · {d} · n。")  # fmt: skip
        if value.degree == 1:
            return "式子里 n 只有一次方：分数矩阵是 n × n，有 n² 个元素，每个都要算一次点积。"
        if value.degree > 2:
            return "n 的次数太高了：分数矩阵是 n × n，乘法次数是 n² 乘以每个点积的长度。"
        return f"单头打分的乘法次数是 n · {d} · n；请写出它和 {h} 个头的乘法次数之间的关系。"

    def no_n_hint(values) -> str:
        if Fraction(d) in values:
            return (f"{h} × {d_k} = {d} 说的是维度守恒，方向对了。再把它写成乘法次数：每个头打分要 n · {d_k} · n 次，"
                    "请写出含 n 的式子。")  # fmt: skip
        return "请用 n（词数）写出乘法次数，例如 n · 某个数 · n 这样的式子。"

    return Question(
        "Q3",
        "第 4 节",
        "expression",
        f"Q3　为什么 {h} 个 {d_k} 维的头与 1 个 {d} 维的头算力一样？请写出代数关系（用 n 表示词数）。",
        explanation,
        placeholder="用 n 写出乘法次数的等式，例如 … = …n²",
        checker=_expression_checker("Q3", explanation, targets, symbols, diagnose, no_n_hint=no_n_hint),
    )


def _q4() -> Question:
    f = _facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    explanation = (
        f"解析：先把 {h} 个头各自输出的 n × {d_k} 矩阵沿特征维度并排拼接（Concat），得到 n × {d} 的矩阵，"
        f"再乘以输出投影矩阵 W^O（{d} × {d}，可学习的参数）做线性融合，得到最终的 n × {d} 输出。\n"
        f"严格来说：Concat(head_1, …, head_{h}) W^O 等于 Σ_i head_i W^O_i（W^O_i 是 W^O 中对应第 i 个头的 {d_k} 行）。"
        "所以在同一层里，各个头在打分和加权时互不通信，直到 W^O 这一步才把它们的结果混合起来；"
        "不过下一层的每个头读到的输入，已经是上一层混合后的结果。"
    )
    options = (
        ("A", f"把 {h} 个头的输出逐元素取平均，得到 n × {d_k}",
         "取平均又回到了「加权平均抹平信息」的老问题，而且输出只剩 d_k 维，拼不回 d_model。"),
        ("B", f"沿特征维度拼接成 n × {d}，再乘以输出矩阵 W^O（{d} × {d}）",
         "拼接保留了每个头的结果，W^O 再把它们线性融合。"),
        ("C", "只保留注意力分数最高的那个头，其余丢掉",
         "多头没有「选一个头」的步骤：每个头的输出都会进入 Concat，由 W^O 学习怎样组合。"),
        ("D", f"沿词的方向（行）把它们首尾相接，得到 {h}n × {d_k}",
         f"那样每个词会变成 {h} 行，词和词对不上了；拼接应当沿特征维度（列），每个词仍是一行。"),
    )  # fmt: skip
    return Question(
        "Q4",
        "第 3 节",
        "single",
        f"Q4　{h} 个头的输出是如何汇聚成最终结果的？",
        explanation,
        choices=tuple((k, label) for k, label, _ in options),
        checker=_single_checker(
            "Q4", explanation, options, "B",
            f"Concat 得到 n × {d}，再乘 W^O 融合。W^O 是各头第一次「交换信息」的地方。",
        ),
    )  # fmt: skip


def _q5() -> Question:
    f = _facts()
    p = f["pages"]
    explanation = (
        "解析：论文附录展示的是编码器第 5 层的自注意力，三类分工：\n"
        f"① 长距离依赖（图 3，第 {p[3]} 页）：许多头把 \"making\" 连到远处的 \"more difficult\"，"
        "补全「making … more difficult」；\n"
        f"② 指代消解（图 4，第 {p[4]} 页）：头 5 和头 6 从代词 \"its\" 出发，注意力非常集中地落在先行词 \"Law\" 上；\n"
        f"③ 句法结构（图 5，第 {p[5]} 页）：两个头的模式与句子结构有关。\n"
        "这些分工不是人为指定的，而是训练中自发出现的。\n"
        f"严格来说：三张图分别在第 {p[3]}、{p[4]}、{p[5]} 页；只有图 4 给头标了号；先行词是 \"Law\" 这个词"
        "（课文写作 \"The Law\"）；图 4 里一个头几乎全部看 \"Law\"，另一个头分给 \"Law\" 和 \"application\"。"
    )
    options = (
        ("A", "长距离依赖：把 \"making\" 和远处的 \"more difficult\" 连起来（图 3）", "图 3 正是这种长距离依赖。"),
        ("B", "指代消解：代词 \"its\" 的注意力集中到先行词 \"Law\" 上（图 4）", "图 4 的头 5、头 6 正是这样。"),
        ("C", "句法结构：头的模式与句子结构相关（图 5）", "图 5 展示的正是与句子结构相关的头。"),
        ("D", "把英文单词对齐到德语译文中对应的词",
         "这些图是编码器的自注意力：同一个英文句子里的词互相看，图里没有德语。"),
        ("E", "每个头事先被人为指定了一种语言学角色",
         "没有人给头分配角色：分工是训练中自发出现的，论文只是事后把它们画出来。"),
    )  # fmt: skip
    return Question(
        "Q5",
        "第 6 节",
        "multi",
        "Q5　论文附录的可视化（图 3、图 4、图 5）说明各个头学会了哪些分工？（多选）",
        explanation,
        choices=tuple((k, label) for k, label, _ in options),
        checker=_multi_checker(
            "Q5", explanation, options, {"A", "B", "C"}, "长距离依赖、指代消解、句法结构，都是训练中自发出现的分工。"
        ),
    )


def _s2() -> Question:
    explanation = (
        "解析：单头注意力对每个查询只有一组权重（softmax 的一行，总和为 1），输出是各 Value 的加权平均。"
        "把更多权重给「小红」，就必须从别的词那里拿走；平均之后，也无法从输出里把各个词的贡献无损地分回来——"
        "不同的权重组合可能得到同一个输出。加大 d_model 只会让每个 Value 更长，权重仍然只有一组。"
        "两个头则各有一组权重，可以一个尖锐地看「小红」（指代），一个看语法角色，拼接后两份信息都还在。\n"
        "严格来说：第 2 节里的百分比是简化的类比，真实的注意力在高维向量上做加权平均。"
    )
    options = (
        ("A", "对每个查询位置，单头只有一组注意力权重，它们加起来等于 1", "这正是单头的限制所在。"),
        ("B", "只要把 d_model 加大，单头就能同时把注意力集中在两个不同的词上",
         "加大 d_model 只让每个 Value 向量更长；权重仍是一组、总和仍是 1，集中给一个词就没法再集中给另一个。"),
        ("C", "两个头可以各自给出一个尖锐的分布（一个看「小红」，一个看语法角色），拼接后两份信息都保留",
         "这正是多头的做法。"),
        ("D", "做完加权平均后，总能从输出里把每个词各自的贡献无损地分离出来",
         "平均是多对一的：不同的权重组合可以得到同一个输出，信息一旦混合就分不回来。"),
    )  # fmt: skip
    return Question(
        "S2",
        "第 2 节",
        "multi",
        "S2　关于「小明把苹果递给了小红，因为她帮过他」这个例子，下面哪些说法对？（多选）",
        explanation,
        choices=tuple((k, label) for k, label, _ in options),
        checker=_multi_checker("S2", explanation, options, {"A", "C"}, "单头只有一组权重；多头让每条线索各有一组。"),
    )


def _s3() -> Question:
    f = _facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    n = N_SHAPE_EXAMPLE
    expected = f["split_shape"]
    explanation = (
        f"解析：X 是 (n, d_model) = ({n}, {d})。先 reshape 成 (n, h, d_k) = ({n}, {h}, {d_k})，第 i 块连续的 {d_k} 列"
        f"就是第 i 个头；再交换前两个轴（transpose）得到 (h, n, d_k) = {expected}，每个头成为一个独立的 "
        f"({n}, {d_k}) 矩阵，才能对每个头做 Q Kᵀ。\n"
        f"常见错误：忘了 transpose，得到 ({n}, {h}, {d_k})；或者直接 reshape 成 ({h}, {n}, {d_k})——形状对了，"
        "内容却错了：不同词的特征被塞进了同一个头。"
    )
    names = {"h": h, "n": n, "d_k": d_k, "d_v": d_k, "d_model": d}

    def diagnose(dims) -> str:
        if dims == (n, h, d_k):
            return "是不是忘了 transpose？reshape 之后还要把头的轴换到最前面。"
        if dims == (h, d_k, n):
            return "后两维反了：那是 Kᵀ 的形状；split_heads 之后每个头仍是 (n, d_k)。"
        if dims == (n, d):
            return "这是拆分之前 X 的形状；拆成头之后多出一个「头」的维度。"
        if dims in ((h, n, d), (n, h, d)):
            return f"每个头只有 d_k = d_model / h = {d_k} 维，不是 {d} 维。"
        if len(dims) != 3:
            return "应当是 3 个数：(头数, 词数, 每个头的宽度)。"
        return f"三个数依次是头数 h、词数 n、每个头的宽度 d_k = {d} / {h}。"

    return Question(
        "S3",
        "第 3 节",
        "shape",
        f"S3　X 的形状是 (n, d_model) = ({n}, {d})，拆成 h = {h} 个头（split_heads）之后，形状是什么？",
        explanation,
        placeholder="例如：(a, b, c)",
        checker=_shape_checker("S3", explanation, expected, names, diagnose),
    )


def _s3b() -> Question:
    f = _facts()
    h, d_k = f["h"], f["d_k"]
    explanation = (
        "解析：在同一层里，每个头用自己的 W_i^Q、W_i^K、W_i^V 独立打分、独立做 softmax、独立加权求和，"
        f"彼此看不到对方的分数。直到 Concat 之后乘 W^O，各头的结果才被混合：Concat(head_1, …, head_{h}) W^O "
        f"= Σ_i head_i W^O_i，其中 W^O_i 是 W^O 中属于第 i 个头的 {d_k} 行。\n"
        "严格来说：这说的是一层之内；跨层时，下一层的每个头读到的输入已经混合了上一层所有头的信息。"
    )
    options = (
        ("A", "打分时：每个头会参考其他头的分数", "每个头只用自己的 Q_i、K_i 打分，看不到别的头。"),
        ("B", "softmax 时：所有头的分数放在一起归一化", "softmax 是每个头、每一行各自做的，各头的权重各自和为 1。"),
        ("C", "直到 Concat 之后乘 W^O，才把各头的结果混合起来", "W^O 是它们第一次混合的地方。"),
        ("D", "从来不交换：各头的结果直接拼接就是最终输出", "拼接之后还要乘 W^O，它正是把各头结果线性混合的一步。"),
    )  # fmt: skip
    return Question(
        "S3b",
        "第 3 节",
        "single",
        "S3b　在一层多头注意力里，各个头在哪一步才第一次「交换信息」？",
        explanation,
        choices=tuple((k, label) for k, label, _ in options),
        checker=_single_checker("S3b", explanation, options, "C", "Concat(head_i) W^O = Σ_i head_i W^O_i。"),
    )


def _s4() -> Question:
    f = _facts()
    d, h0 = f["d"], f["h"]
    n, h = N_FLOPS_EXAMPLE, H_FLOPS_EXAMPLE
    c = f["count"](n, d, h)
    base = f["count"](n, d, h0)
    d_k = f["head_width"](d, h)
    share = round(100 * c.projections_share)
    explanation = (
        f"解析：一层自注意力的矩阵乘法：Q/K/V 投影 3·n·d² = {c.qkv_projections:,}；打分 QKᵀ n²·d = {c.scores:,}；"
        f"weights × V n²·d = {c.weights_v:,}；输出投影 W^O n·d² = {c.output_projection:,}。"
        f"合计 4·n·d² + 2·n²·d = {c.matmul_total:,}，式子里没有 h，所以 h = {h} 与 h = {h0} 完全一样"
        f"（h = {h0} 时也是 {base.matmul_total:,}）。n = {n} 这么短时，四个投影占了约 {share}%。\n"
        f"严格来说：softmax 的 exp 与除法各 h·n² 次，会随 h 增长（见下一题），但它们不是矩阵乘法。"
    )
    hints = (
        (c.scores, "这只是打分 QKᵀ 这一步；还有 weights × V 与四个投影。"),
        (c.scores + c.weights_v, "打分和 weights × V 算对了，还漏了 Q/K/V 投影与 W^O（4·n·d²）。"),
        (c.qkv_projections + c.output_projection, "四个投影算对了，还漏了打分与 weights × V（2·n²·d）。"),
        (c.matmul_total - c.output_projection, "漏了输出投影 W^O（n·d²）。"),
        (c.matmul_total * h // h0, f"头数从 {h0} 变成 {h} 并不会让矩阵乘法按比例增加：每个头同时变窄了。"),
        (c.matmul_total + c.softmax_total, "你把 softmax 的 exp、除法和缩放也算进去了；本题只问矩阵乘法。"),
    )
    return Question(
        "S4",
        "第 4 节",
        "number",
        f"S4　n = {n}，d_model = {d}，h = {h}（每个头 d_k = {d_k}）：一层自注意力的矩阵乘法一共要做多少次乘法？"
        "（Q/K/V 投影、QKᵀ、weights × V、W^O 四部分都算）",
        explanation,
        placeholder="一个数，或能算出它的式子",
        checker=_number_checker(
            "S4",
            explanation,
            c.matmul_total,
            rel_tol=0.005,
            symbols={"n": n, "d_model": d, "d": d, "h": h, "d_k": d_k, "d_v": d_k},
            givens=(n, d, h, d_k),
            hints=hints,
            generic_hint="提示：四部分分别是 3·n·d²、n²·d、n²·d、n·d²。",
            praise=f"{c.matmul_total:,} 次，和 h = {h0} 时一模一样：矩阵乘法的总量与头数无关。",
        ),
    )


def _s4b() -> Question:
    f = _facts()
    d, h0 = f["d"], f["h"]
    n, h = N_FLOPS_EXAMPLE, H_FLOPS_EXAMPLE
    c = f["count"](n, d, h)
    c0 = f["count"](n, d, h0)
    c1 = f["count"](n, d, 1)
    explanation = (
        f"解析：每个头都有自己的 n × n 分数矩阵，softmax 对每个分数做一次 exp，所以 exp 的次数是 h·n² = "
        f"{h} × {n}² = {c.softmax_exp:,}。h = 1 时是 {c1.softmax_exp:,}，h = {h0} 时是 {c0.softmax_exp:,}："
        "随 h 成正比增长。"
        f"同样随 h 增长的还有除法和缩放（各 h·n²）。和矩阵乘法的 {c.matmul_total:,} 次相比它们很小，"
        "所以论文说多头的总成本与单头「相近」，而不是「相同」；头很多、序列很长时，这部分以及大量小矩阵的开销就会显现。"
    )
    hints = (
        (c0.softmax_exp, f"这是 h = {h0} 时的次数；exp 的次数是 h·n²，h = {h} 时要重新算。"),
        (c1.softmax_exp, "这是单头（h = 1）的次数：每个头都有自己的 n × n 分数，都要做 exp。"),
        (c.scores, "n²·d 是打分的乘法次数，不是 exp 的次数：每个分数只做一次 exp。"),
        (c.softmax_total, "这是 exp、除法和缩放三者的总和；本题只问 exp。"),
    )
    return Question(
        "S4b",
        "第 4 节",
        "number",
        f"S4b　同样 n = {n}，d_model = {d}，h = {h}：softmax 一共要算多少次 exp？它会随 h 变化吗？（写出次数）",
        explanation,
        placeholder="一个数，或能算出它的式子",
        checker=_number_checker(
            "S4b",
            explanation,
            c.softmax_exp,
            rel_tol=0.005,
            symbols={"n": n, "d_model": d, "d": d, "h": h},
            givens=(n, d, h),
            hints=hints,
            generic_hint="提示：每个头都有一个 n × n 的分数矩阵，每个分数做一次 exp。",
            praise=f"h·n² = {c.softmax_exp:,}：这部分随 h 增长，所以说「相近」而不是「相同」。",
        ),
    )


def _s5() -> Question:
    f = _facts()
    d = f["d"]
    lo, hi = f["lab_heads"]
    count, parameters, head_width = f["count"], f["parameters"], f["head_width"]
    n = N_FLOPS_EXAMPLE
    measures = (
        ("A", "参数量（W^Q、W^K、W^V、W^O）", lambda h: parameters(d, h)),
        ("B", f"矩阵乘法的总次数（n = {n}）", lambda h: count(n, d, h).matmul_total),
        ("C", f"softmax 的 exp 次数（n = {n}）", lambda h: count(n, d, h).softmax_exp),
        ("D", "每个头的宽度 d_k", lambda h: head_width(d, h)),
        ("E", "注意力图的张数", lambda h: h),
    )
    options, answer = [], set()
    for key, label, fn in measures:
        a, b = fn(lo), fn(hi)
        verdict = "不变" if a == b else ("变大" if b > a else "变小")
        options.append((key, label, f"h = {lo} 时是 {a:,}，h = {hi} 时是 {b:,}：{verdict}。"))
        if a == b:
            answer.add(key)
    explanation = (
        f"解析：d_model = {d} 时，h 从 {lo} 拖到 {hi}：\n"
        + "\n".join(f"· {label}：{why}" for _, label, why in options)
        + "\n参数量与矩阵乘法守恒，因为 h × d_k = d_model；随 h 增长的是 softmax 的工作量和注意力图的数量，"
        "变小的是每个头的宽度。"
    )
    return Question(
        "S5",
        "第 5 节",
        "multi",
        f"S5　在第 5 节的实验台上，把头数 h 从 {lo} 拖到 {hi}（d_model = {d}），下面哪些量保持不变？（多选）",
        explanation,
        choices=tuple((k, label) for k, label, _ in options),
        checker=_multi_checker(
            "S5", explanation, tuple(options), answer, "参数量和矩阵乘法守恒；softmax 的工作量与头数成正比。"
        ),
    )


def _table_a_label(row) -> str:
    return f"h = {row['h']}，d_k = {row['d_k']}"


def _s7() -> Question:
    f = _facts()
    rows = f["table_a"]
    best_bleu = max(r["bleu"] for r in rows)
    best = [r for r in rows if r["bleu"] == best_bleu]
    single = next(r for r in rows if r["h"] == 1)
    drop = round(best_bleu - single["bleu"], 1)
    keys = "ABCDEFG"
    options, answer = [], set()
    for key, row in zip(keys, sorted(rows, key=lambda r: r["h"])):
        why = f"BLEU {row['bleu']}，比最高的 {best_bleu} 低 {round(best_bleu - row['bleu'], 1)}。"
        if row["bleu"] == best_bleu:
            answer.add(key)
            why = f"BLEU {row['bleu']}，并列最高。"
        options.append((key, _table_a_label(row), why))
    ppl_best = min(best, key=lambda r: r["ppl"])
    by_h = sorted(rows, key=lambda r: r["h"])
    explanation = (
        f"解析：表 3 的 base 行与 (A) 行（d_model = {f['d']}，h × d_k 固定，计算量不变）：\n"
        + "\n".join(f"· {_table_a_label(r)}：BLEU {r['bleu']}，PPL {r['ppl']}" for r in by_h)
        + f"\nBLEU 最高的是 {'、'.join(_table_a_label(r) for r in best)}（并列 {best_bleu}），"
        f"困惑度 PPL 以 {_table_a_label(ppl_best)} 的 {ppl_best['ppl']} 略低。单头比最好的设置低 {drop} BLEU；"
        "头太多时又会下滑。\n严格来说：这些是开发集上的单次运行，论文没有报告方差，0.1 的差别说明不了谁更好；"
        "结论是「适中的头数最好，太少和太多都差」，而不是「某一个 h 一定最好」。"
    )
    return Question(
        "S7",
        "第 7 节",
        "multi",
        "S7　对照第 7 节的论文表 3（base 行和 (A) 行），按 BLEU，哪些设置最好？（多选：有并列）",
        explanation,
        choices=tuple((k, label) for k, label, _ in options),
        checker=_multi_checker(
            "S7", explanation, tuple(options), answer,
            f"{'、'.join(_table_a_label(r) for r in best)} 并列 BLEU {best_bleu}；单头低 {drop}。",
        ),
    )  # fmt: skip


def _s7b() -> Question:
    f = _facts()
    d = f["d"]
    rows = f["table3"]
    h32 = max((r for r in rows if r["row"] == "A"), key=lambda r: r["h"])
    narrow_b = next(r for r in rows if r["row"] == "B" and r["d_k"] == h32["d_k"])
    base = next(r for r in rows if r["row"] == "base")
    params_same = f["parameters"](d, h32["h"]) == f["parameters"](d, base["h"])
    n = N_FLOPS_EXAMPLE
    matmul_same = f["count"](n, d, h32["h"]).matmul_total == f["count"](n, d, base["h"]).matmul_total
    explanation = (
        f"解析：h = {h32['h']} 时每个头只有 d_k = {h32['d_k']} 维，BLEU {h32['bleu']}。"
        f"表 3 的 (B) 行在 h = {narrow_b['h']} "
        f"不变的情况下只把 d_k 缩到 {narrow_b['d_k']}，BLEU 也只有 {narrow_b['bleu']}：d_k 过窄，"
        "每个头的点积打分区分能力就不足。所以「头太多变差」很大程度上是「每个头太窄」造成的，"
        "两者在 (A) 行里是绑在一起的。"
        f"\n参数量：(A) 行所有 h 的投影参数都是 4·d_model²（{'相同' if params_same else '不同'}）；"
        f"矩阵乘法总量也{'相同' if matmul_same else '不同'}。"
    )
    options = (
        ("A", "参数量变多了，模型过拟合",
         "(A) 行的参数量与 base 相同：投影参数总是 4·d_model²，与 h 无关。"),
        ("B", "计算量变成了原来的 4 倍，训练不充分",
         "矩阵乘法总量与 h 无关（h × d_k = d_model）；只有 softmax 这类小开销随 h 增长。"),
        ("C", f"每个头只剩 d_k = {h32['d_k']} 维，太窄了；(B) 行 h = {narrow_b['h']}、d_k = {narrow_b['d_k']} 也只有 "
              f"BLEU {narrow_b['bleu']}",
         "窄 d_k 本身就会伤害效果。"),
        ("D", f"{h32['h']} 个头全都学成了一模一样的注意力模式",
         "论文没有给出这样的证据；表 3 能支持的解释是每个头太窄。"),
    )  # fmt: skip
    return Question(
        "S7b",
        "第 7 节",
        "single",
        f"S7b　表 3 里 h = {h32['h']}（d_k = {h32['d_k']}）的 BLEU 降到 {h32['bleu']}。最有根据的解释是哪一个？",
        explanation,
        choices=tuple((k, label) for k, label, _ in options),
        checker=_single_checker(
            "S7b", explanation, options, "C",
            f"d_k = {h32['d_k']} 太窄；(B) 行说明窄 d_k 本身就会掉分，头数多和头太窄在 (A) 行里是绑在一起的。",
        ),
    )  # fmt: skip


_FACTORIES = (_q1, _q2, _q3, _q4, _q5, _s2, _s3, _s3b, _s4, _s4b, _s5, _s7, _s7b)


@cache
def questions() -> dict[str, Question]:
    """All questions by id, in the order the notebook asks them."""
    out = {}
    for factory in _FACTORIES:
        q = factory()
        out[q.id] = q
    return out


def question_ids() -> tuple[str, ...]:
    return tuple(questions())


def question(question_id: str) -> Question:
    qs = questions()
    if question_id not in qs:
        raise KeyError(f"没有编号为 {question_id!r} 的题目；可用的编号是 {', '.join(qs)}。")
    return qs[question_id]


_SAFETY_NET = True  # tests switch this off so that a bug surfaces instead of a generic message


def check(question_id: str, answer) -> Feedback:
    """Check a learner's answer. Any answer (any string, None, a set of choice keys) gives a Feedback."""
    q = question(question_id)
    try:
        return q.checker(answer)
    except Exception:
        if not _SAFETY_NET:
            raise
        return Feedback(
            False,
            f"{WRONG}这个答案我没能读懂。请换一种写法再试一次，例如只写一个数或一个式子。",
            q.explanation,
            q.id,
        )


# ---------------------------------------------------------------------------------------------
# Interview self-check (section 8)
# ---------------------------------------------------------------------------------------------

INTERVIEW_QUESTION = "面试官问：「Multi-Head Attention 的作用是什么？为什么不直接用单头？头数是不是越多越好？」"

INTERVIEW_POINTS = (
    ("① 单头的加权平均会把不同角色抹平", "说明单头只有一组权重，加权平均会把指代、句法等不同角色的信息混在一起。", (
        ("平均", "averag", "抹平", "混", "冲淡", "模糊", "糊", "抑制", "inhibit", "blur", "mix", "一组权重", "一组"),
    )),
    ("② 拆成 h 个 d_k 维子空间，h × d_k = d_model，算力相近", "说明投影把 d_model 拆成 h 个 d_k 维子空间，"
     "因为 h × d_k = d_model，总计算量与单头相近。", (
        ("子空间", "subspace", "拆", "切", "分成", "split", "投影", "project", "d_k", "dk", "每个头", "维度"),
        ("算力", "计算量", "计算成本", "成本", "开销", "flop", "cost", "compute", "乘法", "守恒", "相当", "相近",
         "不变", "d_model", "dmodel", "512"),
    )),
    ("③ 头数并非越多越好：d_k 过窄会掉分（表 3）", "说明头数不是越多越好：头太多时每个头的 d_k 太窄，"
     "论文表 3 的消融实验里 BLEU 反而下降。", (
        ("越多越好", "太多", "过多", "toomany", "过窄", "太窄", "窄", "narrow", "表3", "table3", "消融", "ablation",
         "bleu", "32", "适中", "折中", "trade"),
    )),
)  # fmt: skip


def model_answer() -> str:
    """The lesson's answer ①②③ in our own words, with the 严格来说 corrections; numbers from lesson_lib."""
    f = _facts()
    d, h, d_k = f["d"], f["h"], f["d_k"]
    n = N_FLOPS_EXAMPLE
    rows = f["table_a"]
    best = max(r["bleu"] for r in rows)
    single = next(r for r in rows if r["h"] == 1)
    widest = max(rows, key=lambda r: r["h"])
    narrow_b = next(r for r in f["table3"] if r["row"] == "B" and r["d_k"] == widest["d_k"])
    total = f["count"](n, d, h).matmul_total
    return (
        "参考答案（核心：用几乎不变的算力换来子空间的多样性）\n"
        "① 单头注意力对每个查询只有一组权重，输出是全序列 Value 的加权平均；指代、主谓修饰等不同的语义角色被"
        "挤进同一个平均里，信息被抹平（论文：averaging inhibits this）。\n"
        f"② 多头用 W_i^Q、W_i^K、W_i^V 把 d_model = {d} 投影成 h = {h} 个 d_k = {d_k} 维的子空间，各头独立打分、"
        f"各司其职，Concat 之后由 W^O 融合。因为 h × d_k = d_model，矩阵乘法总量与单头相同（n = {n} 时都是 "
        f"{total:,} 次），投影参数都是 4·d_model²。严格来说 softmax 的 exp 与除法是 h·n²，随 h 增长，"
        "所以论文说的是总成本「相近」。\n"
        f"③ 头数并非越多越好：表 3 中单头比最好的设置低 {round(best - single['bleu'], 1)} BLEU；"
        f"h = {widest['h']}（d_k = {widest['d_k']}）降到 {widest['bleu']}。而 (B) 行 h = {narrow_b['h']}、"
        f"d_k = {narrow_b['d_k']} 也只有 {narrow_b['bleu']}，说明掉分很大程度来自每个头太窄。"
    )


def interview_check(answer) -> Feedback:
    """Which of the lesson's three points ①②③ the learner's answer covers; the model answer comes with it."""
    explanation = model_answer()
    text = _clean(answer).strip()
    if not text:
        return _blank("面试", explanation, "用自己的话写下你会怎么回答面试官")
    if len(text) > MAX_ANSWER_CHARS:
        long = _too_long(text, "面试", explanation)
        return Feedback(False, long.message, explanation, "面试", show_explanation=True, missing=_point_names())
    covered, missing = _covered(text, INTERVIEW_POINTS)
    hints = {name: hint for name, hint, _ in INTERVIEW_POINTS}
    parts = [f"覆盖了 {len(covered)} / {len(INTERVIEW_POINTS)} 个要点。"]
    if covered:
        parts.append("已覆盖：" + "；".join(covered) + "。")
    for name in missing:
        parts.append(f"还缺{name[0]}：{hints[name]}")
    ok = not missing
    head = RIGHT if ok else WRONG
    return Feedback(
        ok, head + "".join(parts) + "下面是参考答案。", explanation, "面试", False, True, tuple(covered), tuple(missing)
    )


def _point_names() -> tuple[str, ...]:
    return tuple(name for name, _, _ in INTERVIEW_POINTS)


# ---------------------------------------------------------------------------------------------
# Progress and rendering (pure; the widgets display these strings)
# ---------------------------------------------------------------------------------------------


class Progress:
    """Which questions were answered correctly, and how many attempts each took. Listeners are told of changes."""

    def __init__(self, ids: Iterable[str] | None = None):
        self.ids = tuple(ids) if ids is not None else question_ids()
        self.attempts: dict[str, int] = dict.fromkeys(self.ids, 0)
        self.solved: dict[str, bool] = dict.fromkeys(self.ids, False)
        self._listeners: list[Callable[[], None]] = []

    def record(self, feedback: Feedback) -> None:
        qid = feedback.question_id
        if feedback.blank or qid not in self.attempts:
            return
        self.attempts[qid] += 1
        self.solved[qid] = self.solved[qid] or feedback.correct
        for listener in list(self._listeners):
            listener()

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    @property
    def n_solved(self) -> int:
        return sum(self.solved.values())

    def summary(self) -> str:
        done = [q for q in self.ids if self.solved[q]]
        tried = [q for q in self.ids if self.attempts[q] and not self.solved[q]]
        todo = [q for q in self.ids if not self.attempts[q]]
        lines = [f"自测进度：已答对 {len(done)} / {len(self.ids)} 题。"]
        if done:
            lines.append("答对了：" + "、".join(done))
        if tried:
            lines.append("答过但还没答对：" + "、".join(tried) + "（可以看看提示再试一次）")
        if todo:
            lines.append("还没作答：" + "、".join(todo))
        if len(done) == len(self.ids):
            lines.append("全部完成，明天见！")
        return "\n".join(lines)


def text_html(text: str) -> str:
    """Plain text -> safe HTML (escaped, line breaks kept). No ids, no scripts: JupyterLab 4 shows it as is."""
    return html.escape(text).replace("\n", "<br>")


def feedback_html(feedback: Feedback) -> str:
    """The feedback area's HTML: green for right, amber for wrong, plain inline styles only."""
    colour = "#1b5e20" if feedback.correct else "#8a4b00"
    background = "#e8f5e9" if feedback.correct else "#fff4e5"
    return (
        f'<div style="padding:6px 10px;border-radius:4px;color:{colour};background:{background};line-height:1.6">'
        f"{text_html(feedback.message)}</div>"
    )
