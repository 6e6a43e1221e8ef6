"""Reading and checking one answer: a number or a polynomial in n read by a bounded parser (never eval), and one
checker per question kind, ``CHECKERS[kind](question, answer) -> Feedback``.

Text is folded into one spelling (full-width forms, ², ×, Chinese numerals, 万/亿, other scripts' digits, LaTeX)
and parsed with limits on length, tokens, depth, exponent (checked before computing) and coefficient size. A form's
boxes are read by ``read_value`` or not at all: an unreadable box is named with the form it wants (in Chinese),
and only boxes read for certain are diagnosed. Free text is never graded: the learner gets a rubric and ticks it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
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

MAX_EXPRESSION_CHARS = 200  # one expression (a side of an equation chain)
MAX_TOKENS = 100
MAX_DEPTH = 16  # nested parentheses and signs
MAX_EXPONENT = 30  # |k| in x^k
MAX_DEGREE = 12  # highest power of n a result may reach
MAX_COEFFICIENT_DIGITS = 60  # numerator and denominator of every coefficient


class ExpressionError(ValueError):
    """The learner's expression cannot be read; the message (Chinese) says why and what to write."""


@dataclass(frozen=True)
class Poly:
    """A polynomial in n: ``terms`` are (power of n, nonzero Fraction), sorted by power; bounded in degree and size."""

    terms: tuple[tuple[int, Fraction], ...] = ()

    @staticmethod
    def make(mapping: dict[int, Fraction]) -> Poly:
        terms = tuple(sorted((p, Fraction(c)) for p, c in mapping.items() if c != 0))
        for p, c in terms:
            if p > MAX_DEGREE:
                raise ExpressionError(f"式子里出现了 n 的 {p} 次方，超过了本题的上限 {MAX_DEGREE}：次数太高了。")
            if max(abs(c.numerator), c.denominator) >= 10**MAX_COEFFICIENT_DIGITS:
                raise ExpressionError("式子里的数字太大了：请检查是不是多写了几位，或者指数写得太大。")
        return Poly(terms)

    @staticmethod
    def const(value) -> Poly:
        return Poly.make({0: Fraction(value)})

    @staticmethod
    def n() -> Poly:
        return Poly.make({1: Fraction(1)})

    @property
    def degree(self) -> int:
        return self.terms[-1][0] if self.terms else 0

    @property
    def is_constant(self) -> bool:
        return self.degree == 0

    @property
    def constant(self) -> Fraction:
        return dict(self.terms).get(0, Fraction(0))

    def __add__(self, other: Poly) -> Poly:
        out = dict(self.terms)
        for p, c in other.terms:
            out[p] = out.get(p, 0) + c
        return Poly.make(out)

    def __neg__(self) -> Poly:
        return Poly.make({p: -c for p, c in self.terms})

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        if self.degree + other.degree > MAX_DEGREE:  # checked before computing
            raise ExpressionError(f"乘出来会有 n 的 {self.degree + other.degree} 次方，超过了上限 {MAX_DEGREE}。")
        out: dict[int, Fraction] = {}
        for p, a in self.terms:
            for q, b in other.terms:
                out[p + q] = out.get(p + q, 0) + a * b
        return Poly.make(out)

    def divide(self, other: Poly) -> Poly:
        if not other.is_constant:
            raise ExpressionError("这里只支持除以一个常数（例如 512 / 8），不支持除以含 n 的式子。")
        if other.constant == 0:
            raise ExpressionError("式子里出现了除以 0：请检查分母。")
        return Poly.make({p: c / other.constant for p, c in self.terms})

    def power(self, exponent: Poly) -> Poly:
        """The exponent's size is checked before anything is computed: ``n ** d ** h`` is refused at once."""
        if not exponent.is_constant or exponent.constant.denominator != 1:
            raise ExpressionError("指数必须是整数，例如 n^2 或 n²。")
        k = int(exponent.constant)
        if abs(k) > MAX_EXPONENT:
            raise ExpressionError(f"指数 {k} 太大了（上限 {MAX_EXPONENT}）：乘法次数的式子里用不到这么高的次方。")
        if k < 0 and (not self.is_constant or self.constant == 0):
            raise ExpressionError("负指数只能用在非零常数上（例如 10^-3），不能用在 n 上。")
        if k < 0:
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
        text = ""
        for p, c in reversed(self.terms):
            num = "" if (abs(c) == 1 and p > 0) else fmt_number(abs(c))
            num = f"({num})" if "/" in num and p > 0 else num  # (1/3)n², not 1/3n²
            var = "" if p == 0 else "n" + ("" if p == 1 else str(p).translate(_TO_SUPERSCRIPT))
            text += (" - " if text else "-") if c < 0 else (" + " if text else "")
            text += num + var
        return text or "0"


def fmt_number(x) -> str:
    """The exact value, never rounded: 1,048,576 for integers, every digit of a finite decimal
    (31.9999999, 80,000.000001), a fraction otherwise (512/3). A wrong value never prints as a right one."""
    x = Fraction(x)
    if x.denominator == 1:
        return f"{x.numerator:,}"
    den, twos, fives = x.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return f"{x.numerator}/{x.denominator}"
    places = max(twos, fives)
    sign, scaled = ("-" if x < 0 else ""), abs(x) * 10**places
    whole, frac = divmod(int(scaled), 10**places)
    return f"{sign}{whole:,}.{frac:0{places}d}"


_TO_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


# ---------------------------------------------------------------------------------------------
# Reading learner text: normalise, cut into candidate expressions, parse (never eval)
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<name>[a-z_][a-z0-9_]*)|(?P<op>[-+*/^()×·]))")
ALIASES = {"dk": "d_k", "dv": "d_v", "dmodel": "d_model", "d_m": "d_model", "hidden": "d_model", "heads": "h"}
_OPERATOR_VARIANTS = str.maketrans(
    {
        "−": "-", "–": "-", "—": "-", "﹣": "-", "‐": "-",
        "⋅": "·", "∙": "·", "•": "·", "・": "·", "･": "·",
        "✕": "×", "✖": "×", "⨯": "×", "∗": "*",
        "÷": "/", "∕": "/",
        "[": "(", "]": ")", "{": "(", "}": ")",
    }
)  # fmt: skip
_CHINESE_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_CHINESE_SMALL_UNITS = {"十": 10, "百": 100, "千": 1000}
_CHINESE_BIG_UNITS = {"万": 10**4, "亿": 10**8}
MAX_READ_CHARS = 8000  # normalisation never looks further than this (callers cap answers far below it)


def as_text(answer, depth: int = 3) -> str:
    """Any object -> a str (a set or list of choice keys joined), unfiltered; '' for None or a broken __str__.

    Containers are read ``depth`` levels deep: a widget hands in at most a list of keys, and a value nested
    deeper (a learner calling the checker by hand) is unreadable, not a RecursionError."""
    if answer is None:
        return ""
    if isinstance(answer, dict):
        answer = list(answer.values())
    if isinstance(answer, (set, frozenset, list, tuple)):
        if depth <= 0:
            return ""
        return " ".join(sorted(as_text(item, depth - 1) for item in answer))
    if isinstance(answer, str):
        return answer
    try:
        return str(answer)
    except Exception:  # an object whose __str__ fails is just an unreadable answer
        return ""


def clean(answer, limit: int = MAX_READ_CHARS) -> str:
    """Any object -> a str without control characters (kept: newline and tab), at most ``limit`` characters read."""
    text = as_text(answer)[:limit]
    return "".join(ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else " " for ch in text)


def _chinese_number(word: str) -> str:
    """六十四 -> 64, 五百一十二 -> 512, 四万 -> 40000, 五千四百万 -> 54000000."""
    total, section, digit = 0, 0, None
    for ch in word:
        if ch in _CHINESE_DIGITS:
            digit = _CHINESE_DIGITS[ch]
        elif ch in _CHINESE_SMALL_UNITS:
            section += (1 if digit is None else digit) * _CHINESE_SMALL_UNITS[ch]
            digit = None
        else:
            section += digit or 0
            total = (total + section) * _CHINESE_BIG_UNITS[ch] if ch == "亿" else total + section * 10**4
            section, digit = 0, None
    return str(total + section + (digit or 0))


_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:([,\u2009\u202f\u00a0 ’'])\d{3})(?:\1\d{3})*(?![\d,])")


def _ascii_digits(text: str) -> str:
    """Digits of any script (٦٤, ६४, ６４) -> ASCII; superscripts are exponents and stay."""
    return "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() and not ch.isascii() else ch for ch in text)


_LATEX = re.compile(r"\\(times|cdot|div|left|right|,|;|!| )|\$")
_LATEX_WORDS = {"times": "×", "cdot": "·", "div": "/"}
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")


def _unlatex(text: str) -> str:
    """$8 \\times 64 n^{2}$ -> 8 × 64 n^{2}; \\frac{512}{8} -> (512)/(8) (braces are parentheses later)."""
    text = _FRAC.sub(r"(\1)/(\2)", text)
    return _LATEX.sub(lambda m: _LATEX_WORDS.get(m.group(1) or "", " "), text)


def normalize_math(text: str, thousands: bool = True) -> str:
    """Fold the ways people write maths into one ASCII-ish spelling: full-width, ², ×, 万, 5e7, d_{k}, 六十四,
    LaTeX's \\times and \\frac …

    ``thousands``: read 54,988,800 and 54 988 800 as one number (off for shapes, where (12,512) is two).
    """
    text = _ascii_digits(_unlatex(text[:MAX_READ_CHARS]))
    text = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", lambda m: "^(" + m.group().translate(_FROM_SUPERSCRIPT) + ") ", text)
    if thousands:
        text = _GROUPED.sub(lambda m: re.sub(r"\D", "", m.group()), text)
    text = re.sub(r"(?<![\d零〇一二两三四五六七八九十百千万亿])"
                  r"[零〇一二两三四五六七八九十][零〇一二两三四五六七八九十百千万亿]*",
                  lambda m: _chinese_number(m.group()) if re.search("[十百千万亿]", m.group()) else m.group(),
                  text)  # fmt: skip
    text = unicodedata.normalize("NFKC", text)[:MAX_READ_CHARS].lower()
    text = text.translate(_OPERATOR_VARIANTS).replace("**", "^")
    text = re.sub(r"_\(([a-z0-9]+)\)", r"_\1", text)  # d_{k} (braces became parentheses) -> d_k
    if "万" in text or "亿" in text:  # these patterns backtrack over long digit runs: only run them when they can match
        text = re.sub(r"(\d+(?:\.\d+)?)\s*([十百千])\s*(?=[万亿])",  # 5.5千万 -> 5500万
                      lambda m: _plain(Fraction(m.group(1)) * _CHINESE_SMALL_UNITS[m.group(2)]), text)
        text = re.sub(r"(\d+(?:\.\d+)?\s*亿\s*)?(\d+(?:\.\d+)?\s*万\s*)(\d{4}(?!\d))?"
                      r"|\d+(?:\.\d+)?\s*亿(\s*\d{8}(?!\d))?", _units, text)  # fmt: skip
    text = re.sub(r"(?<=\d)\s*千", "*1000 ", text)
    text = re.sub(r"([a-z0-9_)])\s*的?\s*平方", r"\1^2 ", text)  # 512 n 的平方, n平方
    text = re.sub(r"([a-z0-9_)])\s*的?\s*立方", r"\1^3 ", text)
    text = re.sub(r"([a-z0-9_)])\s*的\s*(\d{1,2})\s*次方", r"\1^\2 ", text)
    text = text.replace("除以", "/").replace("乘以", "×")
    text = re.sub(r"(?<=\d)e([+-]?\d{1,3})(?![\d.])", r"*10^(\1)", text)  # 5.5e7
    text = re.sub(r"(?<=[\d)\s])x(?=[\s\d(])", "×", text)  # 8 x 64 means 8 × 64
    return text


def _plain(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else str(float(value))


def _units(m: re.Match) -> str:
    """One number written with 亿/万 (5498万8800, 5.5亿, 1亿2000万): its value as digits."""
    text = re.sub(r"\s", "", m.group())
    value, rest = Fraction(0), text
    if "亿" in rest:
        head, rest = rest.split("亿", 1)
        value += Fraction(head) * 10**8
    if "万" in rest:
        head, rest = rest.split("万", 1)
        value += Fraction(head) * 10**4
    if rest:
        value += Fraction(rest)
    return (str(value.numerator) if value.denominator == 1 else str(float(value))) + " "


class _Parser:
    """expr := term (± term)*; term := unary ((×|·|*|/)? unary)*; unary := ± unary | power;
    power := atom (^ unary)?; atom := number | name | ( expr ). Bounded in length, tokens and depth."""

    def __init__(self, text: str, symbols: dict[str, Poly]):
        if len(text) > MAX_EXPRESSION_CHARS:
            raise ExpressionError(f"这个式子有 {len(text)} 个字符，太长了：请只写关键的一行"
                                  f"（{MAX_EXPRESSION_CHARS} 字以内）。")
        self.symbols, self.tokens, self.i, self.depth = symbols, [], 0, 0
        pos, text = 0, text.rstrip()
        while pos < len(text):
            if not (m := _TOKEN.match(text, pos)):
                bad = text[pos:].strip()[:1]
                raise ExpressionError(f"式子里有看不懂的字符「{bad}」：只能用数字、n、+ − × · / ^ ² 和括号。")
            self.tokens.append((m.lastgroup, m.group(m.lastgroup)))
            pos = m.end()
            if len(self.tokens) > MAX_TOKENS:
                raise ExpressionError(f"式子太长了（超过 {MAX_TOKENS} 个记号）：请只写关键的一行。")
        if not self.tokens:
            raise ExpressionError("式子是空的。")

    def parse(self) -> Poly:
        result = self.expr()
        if self.i < len(self.tokens):
            raise ExpressionError(f"读到「{self.tokens[self.i][1]}」时接不上了：是不是少了运算符或括号？")
        return result

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self):
        self.i += 1
        return self.tokens[self.i - 1] if self.i <= len(self.tokens) else ("end", "")

    def nested(self, read):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(f"括号或正负号套得太深了（超过 {MAX_DEPTH} 层）：请把式子写得简单一些。")
        result = read()
        self.depth -= 1
        return result

    def expr(self) -> Poly:
        result = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            result = result + self.term() if self.take()[1] == "+" else result - self.term()
        return result

    def term(self) -> Poly:
        result = self.unary()
        while True:
            kind, value = self.peek()
            if kind == "op" and value in "*×·/":
                self.take()
                result = result.divide(self.unary()) if value == "/" else result * self.unary()
            elif kind == "name" or (kind, value) == ("op", "("):
                result = result * self.unary()  # 512n, 8(n·64·n)
            elif kind == "num":
                pair = " ".join(t[1] for t in self.tokens[max(0, self.i - 1) : self.i + 1])
                raise ExpressionError(f"「{pair}」之间缺少运算符：请用 × 或 · 连起来（平方写成 n^2 或 n²）。")
            else:
                return result

    def unary(self) -> Poly:
        if self.peek() in (("op", "-"), ("op", "+")):
            sign = self.take()[1]
            inner = self.nested(self.unary)
            return -inner if sign == "-" else inner
        base = self.atom()
        if self.peek() == ("op", "^"):
            self.take()
            return base.power(self.nested(self.unary))
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
            inner = self.nested(self.expr)
            if self.take() != ("op", ")"):
                raise ExpressionError("括号没有配对：请检查每个「(」都有对应的「)」。")
            return inner
        if kind == "end":
            raise ExpressionError("式子在运算符后面就结束了：是不是少写了一个数？")
        raise ExpressionError(f"「{value}」出现的位置不对：请检查式子的写法。")


def parse_expression(text: str, symbols: dict[str, Poly] | None = None) -> Poly:
    """Parse one expression (already normalised or not) into a Poly. Raises ExpressionError, never evaluates code."""
    symbols = {"n": Poly.n()} if symbols is None else symbols
    return _Parser(normalize_math(clean(text)).strip(), symbols).parse()


# ---------------------------------------------------------------------------------------------
# One answer box: a number or a small expression, and nothing else
# ---------------------------------------------------------------------------------------------

MAX_BOX_CHARS = 120  # what one answer box reads; a longer entry is refused before it is read
# Words a learner writes around a value in a box: units, 「约」, 「答：」. Anything else in Chinese is prose,
# which a box does not read. 「是」「等于」「为」 say "=" (「d_k 是 32」, 「512/16 等于 32」).
_BOX_WORDS = re.compile(r"次乘法|次指数|个参数|乘法|参数|大约|左右|答案|约|答|维|次|个|exp|flops?")
_EQUALS_WORDS = re.compile(r"等于|是|为")
_LONE_DIGITS = re.compile(r"[零〇一二两三四五六七八九]+")
_SUFFIX = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([km])(?=$|[\s)=])")  # 80k, 1.28M (lower-cased)
_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _lone_digits(m: re.Match) -> str:
    return "".join(str(_CHINESE_DIGITS[ch]) for ch in m.group())


def _suffix(m: re.Match) -> str:
    return _plain(Fraction(m.group(1)) * {"k": 10**3, "m": 10**6}[m.group(2)])


def _box_text(raw: str) -> str:
    """One box's text in the parser's spelling: units and filler words gone, 「是」 as "=", 80k as 80000,
    dmodel as d_model, a closing full stop or trailing decimal point (「32.」) dropped."""
    t = normalize_math(raw)
    t = re.sub(r"^\s*([a-z_][a-z0-9_]*)\s*[:：]\s*(?=\S)", r"\1 = ", t)  # d_k：32 names the value like d_k = 32
    t = _BOX_WORDS.sub(" ", t)
    t = _EQUALS_WORDS.sub("=", t)
    t = _LONE_DIGITS.sub(_lone_digits, t)
    t = re.sub(r"[。．!！?？;；:：,，、\s]+$", "", t.strip()).strip()
    t = re.sub(r"(?<=\d)\.$", "", t)  # 32. -> 32
    t = re.sub(r"^[:：]", "", t).strip()
    t = t.replace("≈", "=").replace("~", "=")
    t = re.sub(r"(?<=\d)\.(?=\s*[=)(]|\s+\S)", "", t)  # 「80000. (h=16)」, 「32. = 512/16」
    t = _SUFFIX.sub(_suffix, t)
    return _NAME.sub(lambda m: ALIASES.get(m.group(), m.group()), t)


def _split_note(t: str) -> tuple[str, str] | None:
    """「main (note)」: the last top-level parenthesised group at the end, with something before it that is not
    an exponent (n^(2) is not a note). None when there is no such group."""
    t = t.rstrip()
    if not t.endswith(")"):
        return None
    depth = 0
    for i in range(len(t) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(t[i], 0)
        if depth == 0:
            main = t[:i].rstrip()
            if not main or main.endswith(("^", "(")) or main[-1] in "+-*/×·=":
                return None
            return main, t[i + 1 : -1].strip()
    return None


def read_value(text, symbols: dict[str, Poly], labels: Iterable[str] = ()) -> tuple[Poly | None, str]:
    """What one box holds: (value, "") or (None, why it cannot be read, in Chinese). Never guesses.

    Reads 64, ６４, 64维, 六十四, 6.4万, 80k, 1.28M, 5.5千万, 54,988,800, 5.5e7, 512/8, 8 \\times 64 n^2, ``d_k = 64``,
    「d_k 是 64」, 512/8 等于 64, 「64.」, dmodel/h, and a side note in parentheses that agrees with the value:
    「64（512/8）」, 「512n²（8·64n²）」, 「512n^2 (= 8·64·n^2)」, or a true remark about the question's sizes,
    「1280000 (h=16)」. Every side of ``=`` must have the same value; a name in ``labels`` (the box's unknown)
    may stand as a side. Words other than units make the box unreadable; so does a note that disagrees.
    """
    raw = as_text(text).strip()
    if len(raw) > MAX_BOX_CHARS:
        return None, f"这一栏写了 {len(raw):,} 个字符，太长了：只填一个数或一个式子（{MAX_BOX_CHARS} 字以内）。"
    t = _box_text(clean(raw))
    if not t:
        return None, "这一栏里没有读到数或式子。"
    if re.search(r"[^\x00-\x7f×·]", t) or re.search(r"[,;:!?'\"]", t):
        return None, "这一栏只读一个数或一个式子，读不了文字和标点：请只填数（单位已经写在框旁边）。"
    labels = {ALIASES.get(x, x) for x in labels}
    split = _split_note(t)
    if split is not None:
        main_text, note_text = split
        main, _ = _read_sides(main_text, symbols, labels)
        if main is not None:
            verdict = _note(main, note_text, symbols, labels)
            if verdict == "agrees":
                return main, ""
            if verdict == "differs":
                return None, (f"括号外是 {main}，括号里的备注和它不是同一个值：请只填你的答案（算式可以写成 "
                              "a / b = c，不要用括号做备注）。")
    return _read_sides(t, symbols, labels)


def _note(main: Poly, note: str, symbols: dict[str, Poly], labels: set[str]) -> str:
    """How a parenthesised group after a value reads: "agrees" (a side note equal to it, or a true remark such
    as h=16), "differs" (a note that says something else: not read), or "product" (8(n·64·n): multiply)."""
    sides = [s.strip() for s in note.split("=")]
    if len(sides) > 1 and _NAME.fullmatch(sides[0]) and sides[0] in symbols and sides[0] not in labels:
        remark, _ = _read_sides(note, symbols, labels)  # 「(h=16)」: true of the question, says nothing of main
        return "agrees" if remark is not None else "differs"
    value, _ = _read_sides(note, symbols, labels)
    if value is not None and value == main:
        return "agrees"
    if note.lstrip().startswith("=") or len(sides) > 1:
        return "differs"  # 「(= 500n²)」 claims an equality that does not hold
    if value is not None and main.is_constant and not value.is_constant:
        return "product"  # 8(n·64·n): a coefficient times a bracket
    return "differs"


def _read_sides(text: str, symbols: dict[str, Poly], labels: set[str]) -> tuple[Poly | None, str]:
    values = []
    for side in text.split("="):
        side = ALIASES.get(side.strip(), side.strip())
        if not side or side in labels:
            continue
        try:
            values.append(_Parser(side, symbols).parse())
        except ExpressionError as exc:
            return None, str(exc)
    if not values:
        return None, "这一栏里没有读到数或式子。"
    if len(set(values)) > 1:
        return None, f"这一栏的等式两边不相等（{' 和 '.join(str(v) for v in values)}）：请只填你算出的那一个。"
    return values[0], ""


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
    echoes = tuple((b.name, b.shown(values[b.name])) for b in k.boxes)  # exact: never rounded to the answer
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


def check_choice(q: Question, answer) -> Feedback:
    """Radio buttons (``single``) or checkboxes (``multi``): each wrong key chosen is named with why it is wrong."""
    k: ChoiceKey = q.key
    keys, why, single = tuple(key for key, _, _ in k.options), {key: w for key, _, w in k.options}, q.kind == "single"
    if not as_text(answer).strip():
        return blank(q.id, q.explanation, "选一个选项" if single else "勾选你认为对的选项（可以多选）")
    chosen = _keys(answer, keys)
    if not chosen:
        return unreadable(q.id, q.explanation, f"请点选一个选项（{'、'.join(keys)} 之一）。" if single else
                          f"请勾选选项（{'、'.join(keys)} 中的一个或几个）。")  # fmt: skip
    if single and len(chosen) > 1:
        return unreadable(q.id, q.explanation, f"这道题只选一项，你选了 {'、'.join(chosen)}。")
    if set(chosen) == k.answer or (single and chosen[0] in k.answer):
        return Feedback(True, RIGHT + k.praise, q.explanation, q.id)
    if single:
        return Feedback(False, f"{WRONG}选项 {chosen[0]}：{why[chosen[0]]}", q.explanation, q.id,
                        mistakes=(f"option={chosen[0]}",))  # fmt: skip
    parts, wrong, missing = [], sorted(set(chosen) - k.answer), k.answer - set(chosen)
    if good := sorted(set(chosen) & k.answer):
        parts.append(f"{'、'.join(good)} 选得对。")
    parts += [f"{key} 不该选：{why[key]}" for key in wrong]
    if missing:
        parts.append(f"还有 {len(missing)} 个对的选项没有选，再读一遍每一项。")
    mistakes = tuple(f"option={key}" for key in wrong) + (("missing",) if missing else ())
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
    "single": check_choice,
    "multi": check_choice,
    "self": check_self,
}
