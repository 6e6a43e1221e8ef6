"""Reading one answer box (a number or a polynomial in n: Python's parser gives a syntax tree, never
code, and a whitelist of its nodes becomes a Poly) and one checker per question kind. A box that
cannot be read for certain says what it wants (in Chinese), echoing what it read; nothing is
judged."""

from __future__ import annotations

import ast
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from functools import partial
from itertools import pairwise

from lesson_lib.practice import feedback as fb
from lesson_lib.practice.feedback import Feedback, Question, Rubric, answer_first

# per box or answer: longer is refused unread
MAX_CHARS = {"form": 120, "single": 200, "multi": 200, "self": 1000}
MAX_DEPTH = 16  # nested signs, exponents and right-hand operands (a left chain 1+1+1 is flat)
MAX_EXPONENT = 30  # k in x^k, checked before computing
MAX_DEGREE = 12  # highest power of n a result may reach
MAX_DIGITS = 60  # numerator and denominator of every coefficient


class ExpressionError(ValueError):
    """Why a box cannot be read, in Chinese, and ``reason``, its id (what tests read)."""

    def __init__(self, message: str, reason: str = "expression"):
        super().__init__(message)
        self.reason = reason


class Unread(str):
    """Why a box was not read, in Chinese (a str, as the message shows it), and its id."""

    reason: str

    def __new__(cls, message: str, reason: str) -> Unread:
        why = super().__new__(cls, message)
        why.reason = reason
        return why


@dataclass(frozen=True)
class Poly:
    """A polynomial in n: sorted (power, nonzero Fraction) terms, bounded in degree and size."""

    terms: tuple[tuple[int, Fraction], ...] = ()

    @staticmethod
    def make(pairs) -> Poly:
        out: dict[int, Fraction] = {}
        for p, c in pairs:
            out[p] = out.get(p, 0) + Fraction(c)
        terms = tuple(sorted((p, c) for p, c in out.items() if c != 0))
        if terms and terms[-1][0] > MAX_DEGREE:
            raise ExpressionError(f"n 的次数超过了上限 {MAX_DEGREE}：请检查指数。")
        if any(max(abs(c.numerator), c.denominator) >= 10**MAX_DIGITS for _, c in terms):
            raise ExpressionError("数字太大了：请检查是不是多写了几位，或者指数写得太大。")
        return Poly(terms)

    @staticmethod
    def const(value) -> Poly:
        return Poly.make([(0, value)])

    @staticmethod
    def n() -> Poly:
        return Poly.make([(1, 1)])

    @property
    def degree(self) -> int:
        return self.terms[-1][0] if self.terms else 0

    @property
    def constant(self) -> Fraction:
        return dict(self.terms).get(0, Fraction(0))

    def __add__(self, other: Poly) -> Poly:
        return Poly.make(self.terms + other.terms)

    def __mul__(self, other: Poly) -> Poly:
        return Poly.make((p + q, a * b) for p, a in self.terms for q, b in other.terms)

    def divide(self, other: Poly) -> Poly:
        if other.degree > 0:
            raise ExpressionError(f"不能除以「{other}」：只能除以一个不为 0 的数。", "divisor")
        if other.constant == 0:  # read_value says what the box takes instead
            raise ExpressionError("除数是 0", "zero")
        return self * Poly.const(1 / other.constant)

    def power(self, exponent: Poly) -> Poly:
        """The exponent is checked before anything is computed: n^d^h is refused at once."""
        k = exponent.constant
        if exponent.degree > 0 or k.denominator != 1 or not 0 <= k <= MAX_EXPONENT:
            raise ExpressionError(f"指数「{exponent}」不行：指数要写 0 到 {MAX_EXPONENT} 的整数，"
                                  "例如 n^2 或 n²。")
        return math.prod([self] * int(k), start=Poly.const(1))

    def __str__(self) -> str:
        text = " ".join(_term(p, c) for p, c in reversed(self.terms))  # "+ 3n² - n", "- n"
        return re.sub(r"^\+ |^(-) ", r"\1", text) or "0"  # 3n² - n, -n


def _term(p: int, c: Fraction) -> str:
    """±|c|·nᵖ as the echo writes it: + 3n², - n, + (1/3)n², + 512/3."""
    num = "" if p > 0 and abs(c) == 1 else fmt_number(abs(c))
    num = f"({num})" if p > 0 and "/" in num else num  # (1/3)n², not 1/3n²
    power = {0: "", 1: "n"}.get(p, "n" + str(p).translate(_TO_SUPERSCRIPT))
    return f"{'-' if c < 0 else '+'} {num}{power}"


def fmt_number(x) -> str:
    """The exact value, never rounded (1,048,576; 31.9999999; 512/3): wrong never shows as right."""
    x = Fraction(x)
    places = next((p for p in range(4 * MAX_DIGITS) if 10**p % x.denominator == 0), None)
    if places is None:
        return f"{x.numerator}/{x.denominator}"
    return f"{Decimal(f'{x.numerator * 10**places // x.denominator}e-{places}'):,f}"  # exact


_TO_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
_FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


# ------------------------------------------------------------------------------ reading one box
def as_text(answer) -> str:
    """Any object as a str (a collection's items joined); '' for None or a broken __str__."""
    if isinstance(answer, dict):
        answer = list(answer.values())
    try:
        if isinstance(answer, set | frozenset | list | tuple):
            return " ".join(sorted(map(as_text, answer)))
        return "" if answer is None else str(answer)
    except Exception:  # a broken __str__, or a list nested too deep, is just unreadable
        return ""


def clean(answer, limit: int) -> str:
    """At most ``limit`` characters, control characters (but newline and tab) as spaces."""
    text = as_text(answer)[:limit]
    return "".join(c if c in "\n\t" or unicodedata.category(c)[0] != "C" else " " for c in text)


ALIASES = {
    "dk": "d_k", "dv": "d_v", "dmodel": "d_model", "d_m": "d_model", "hidden": "d_model",
    "heads": "h",
}
_OPERATORS = str.maketrans("−–—﹣‐⋅∙•・･✕✖⨯∗÷∕[]{}≈~", "-----·····×××*//()()==")
_MULTIPLIERS = {"千": 3, "万": 4, "亿": 8, "k": 3, "m": 6, "w": 4}
# A Chinese numeral written as a number (三十二, 八万); 一 in 一样、一共、一半、第一维, 两 in 两边、
# 两倍 are words (倍 and 半 then say the number is changed).
_NUMERAL = re.compile(r"[零〇一二两三四五六七八九十百千万亿]+")
_NOT_A_NUMERAL = re.compile(r"第[零〇一二两三四五六七八九十百千]+|一(?=[样下共起致般定些点边切半])"
                            r"|[统唯万]一|之一|两(?=[边者倍])|十分|(?<=[\d.])\s*[千万亿]+")
# Words beside a number are read around, unless they disown it (不是 32) or change it (32 的两倍,
# 32以外 but not 另外, 的 1/3, 32 或 64; 的话, or 时 twice or in a note, name another setting).
_WORD = r"[^\x00-\x7f×·]|[,;:!?'\"]"
_WORDS = re.compile(rf"(?:{_WORD})(?:\s*(?:{_WORD}))*")
_DISOWN = re.compile(r"[不没无非否错别未怪假误✗✘❌≠]|!=|以为|[倍半乘除加减方根到千万亿各少负掉去]"
                     r"|[扣抛忽剩补翻折超差]|(?<=[\d)])\s*[余起]|有余|或(?!许)|分之|[大小多高低]于|至多|最多"
                     r"|多了|的话"
                     r"|时(?=.*时|[^()]*\))|[以往向][上下]|以内|之间|还是|如果|要是|若|(?<![另此])外"
                     r"|其[他它]|[倒对]数|[相取]反|打底|[开出]头|(?<=[\d)])\s*多|的\s*\d+\s*/\s*\d+")
# 「每个头」「per token」「同一层」 count one head (token, layer); so does 「和一个头一样」 here:
# a comparison is a claim no box can read (「512（和一个头的键值一样）」 is false)
_PER = re.compile(r"(?:per[\s-]*|[每同]?一|每|单\s*(?=个))\s*个?\s*(head|token|layer|头|词元?|层)")
PER_WORDS = {"头": "head", "词": "token", "词元": "token", "层": "layer"}  # and head, token, layer
_COUNTED = {"头": "h", "组": "g"}  # 「16 个头」 is h 16, 「4 组」 g 4, where the box has h, g
# 「A 和 B 一样」 says A = B
_SAME_AS = re.compile(r"(?:和|跟|与|同)\s*([0-9a-z_\s+\-*/^().×·]+?)\s*(?:一样|相等|相同|一致)")
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_NOTE = re.compile(r"(.*[^\s^(+\-*/×·=])\s*\(([^()]*)\)")  # 「main (note)」: n^(2) is no note
_GLUED = re.compile(r"(?<![a-z\d_.])([a-z_]+)(\d+(?:\.\d+)?)(?![a-z\d_])")  # d_k32: name, number
_TOKEN = re.compile(r"\s*(?:\d+(?:\.\d+)?|[a-z_][a-z0-9_]*|[-+*/^()×·])")  # what the parser reads


# One box in the parser's spelling, one habit of writing per row (pattern, replacement), in order.
_UNFOLDED = [  # before NFKC folds the full-width forms
    (r"\\(times|cdot|div)", lambda m: {"times": "×", "cdot": "·", "div": "/"}[m[1]]),
    (r"\\(left|right|[,;! ])|\$", " "),  # \left(, $
    (r"\d", lambda m: str(unicodedata.decimal(m[0]))),  # ٣٢ (an Arabic-Indic 32)
    (r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", lambda m: "^" + m[0].translate(_FROM_SUPERSCRIPT) + " "),  # n²
    (r"(?<![\d.,])(?<![A-Za-z_] )\d{1,3}(?:([,\u2009\u202f\u00a0 ’'])\d{3})(?:\1\d{3})*(?![\d,])",
     lambda m: re.sub(r"\D", "", m[0])),  # 54,988,800, 54 988 800; g 4 512 is g = 4 then 512
]
_FOLDED = [
    (r"_\(([a-z0-9]+)\)", r"_\1"),  # d_{k} (braces became parentheses) -> d_k
    (r"(?<=[\d)千万亿])\s*([千万亿](?![a-z^])|[km](?![a-z^(])|(?<=\d)w(?![a-z0-9_(^]))",
     lambda m: f"*10^({_MULTIPLIERS[m[1]]}) "),  # 8万, 80k, 4w (chat's 4万; not 4 w, 4w_q)
    (r"(?<=\d)e\+?(\d{1,3})(?![\d.])", r"*10^(\1) "),  # 5e7
    (r"(?<=\d)e-(\d{1,3})(?![\d.])", r"/10^(\1) "),  # 5e-3
    (r"\s*的?\s*平方|(?<![a-z_]n)(?<=n)\s*方", "^2 "),  # n 的平方, n 方
    ("除以", "/"),
    ("乘以", "×"),
    (r"(?<=[\d)\s])x(?=[\s\d(])", "×"),  # 8 x 64 means 8 × 64
    (r"([a-z_][a-z0-9_]*)\s*:\s*(?=\S)", r"\1 = "),  # d_k：32 reads like d_k = 32
    (r"(?<=\d)\s*(?:个\s*)?heads?(?![a-z])", " 头"),  # 16 (个) heads is 16 个头; a bare heads is h
    # words around a value: units (12 tokens, 64 dims per head), 「约」, 「答：」
    (r"次指数|乘法|参数|大约|左右|差不多|答案|约|答|维|次|个|tokens?|dim[a-z]*|exps?|flops?"
     r"|per (?:head|token|layer)", " "),
    # 「是」「即」「一共」 say "="; not in 还是 (or), 以为 (wrongly thought), 因为 (because) …
    (r"等于|(?<![还要])是|(?<![以因认作成])为|即(?!使)|[一总]共|[合总]计", "="),
    (r"(?<=\d)\.(?=$|\s*[=)(]|\s+\S)", ""),  # 「32.」, 「80000. (h=16)」, 「32. = 512/16」
    (_NAME, lambda m: ALIASES.get(m[0], m[0])),
]


def parse_expression(text: str, symbols: dict[str, Poly], labels=()) -> Poly:
    """Python's own parser (a syntax tree only, never code) on the box's spelling or a question
    file's (d_model / h, n^2), then a whitelist of nodes evaluated into a Poly: numbers, names,
    + - × / ^, signs and parentheses."""
    listed = "".join(f"{name}、" for name in sorted(symbols))  # the box's own symbols
    square = "（平方写成 n^2 或 n²）" if "n" in symbols else ""  # only where n may be written
    allowed = f"可以用数字（也可写 8万、80k）、{listed}+ − × · / ^、= 和括号{square}"
    strange = _TOKEN.sub("", text).split() + [n for n in _NAME.findall(text) if n not in symbols]
    if strange and (strange[0] == "n" or strange[0] in labels):  # a number box: 512 n 方, d_v 64
        raise ExpressionError(f"这一栏只填一个数，不写「{strange[0]}」。", "n")
    if strange:  # 「%」, or a name that is not the box's (is, not: words)
        raise ExpressionError(f"不认识「{strange[0]}」：{allowed}。")
    if "//" in text:  # Python's floor division
        one_slash = re.sub(r"\s*//\s*", " / ", text.strip())
        raise ExpressionError(f"「//」是 Python 的整除，这里写一个 / 即可（{one_slash}）。",
                              "floor_division")
    if _NUMBER_AFTER.search(text):  # 32 64, 4 768: a number right after a value
        raise ExpressionError("两个数或符号之间没有运算符：若是一个式子，用 × 连起来；"
                              "若是两个答案，请只填一个。", "operator")
    python = _LEADING_ZEROS.sub("", _IMPLICIT.sub(r"\1*", text)).translate(_TO_PYTHON)
    python = " ".join(python.split())  # Python refuses a leading space
    try:  # Python's parser says MemoryError when nested too deep (a question file is not capped)
        return _evaluate(ast.parse(python, mode="eval").body, python, symbols, 0)
    except (SyntaxError, MemoryError, RecursionError):  # 2 ×× 3, (), a question file's 32)
        raise ExpressionError(f"式子读不通：数之间要有运算符，括号要配对；{allowed}。") from None


_VALUE = r"(?:(?<![\w.])\d+(?:\.\d+)?(?![\d.])|[a-z_]\w*(?!\w)|\))"  # a whole number, name, ")"
# a value before a name or "(" multiplies it: 512n, h d_k, 8(n·64·n), (h)n
_IMPLICIT = re.compile(f"({_VALUE})" + r"\s*(?=[a-z_(])")
_NUMBER_AFTER = re.compile(_VALUE + r"\s*\d")
_LEADING_ZEROS = re.compile(r"(?<![\w.])0+(?=\d)")  # 08 is 8 (Python refuses 08)
_TO_PYTHON = str.maketrans({"×": " * ", "·": " * ", "^": " ** "})  # 5 ×* 2 is no power
_OPERATIONS = {
    ast.Add: Poly.__add__,
    ast.Sub: lambda a, b: a + Poly.const(-1) * b,
    ast.Mult: Poly.__mul__,
    ast.Div: Poly.divide,
    ast.Pow: Poly.power,
}


def _evaluate(node: ast.expr, source: str, symbols: dict[str, Poly], depth: int) -> Poly:
    """One whitelisted node as a Poly; any other node (a call, //, a comparison …) is refused.
    Nesting on the right (signs, exponents, parentheses) is bounded (see MAX_DEPTH)."""
    if depth > MAX_DEPTH:
        raise ExpressionError(f"括号、正负号或 ^ 套得太深了（超过 {MAX_DEPTH} 层）："
                              "请把式子写得简单一些。")
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATIONS:
        left = _evaluate(node.left, source, symbols, depth)
        right = _evaluate(node.right, source, symbols, depth + 1)
        return _OPERATIONS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        sign = Poly.const(-1 if isinstance(node.op, ast.USub) else 1)
        return sign * _evaluate(node.operand, source, symbols, depth + 1)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        # exact, from the literal as written (one ASCII line): 31.9999999 is no float
        return Poly.const(Fraction(source[node.col_offset : node.end_col_offset]))
    if isinstance(node, ast.Name):  # every name is a symbol by now
        return symbols[node.id]
    raise SyntaxError(source)  # parse_expression says what a box may hold


def _remark(piece: str, symbols: dict[str, Poly], labels) -> bool:
    """Whether ``piece`` is a true remark on a symbol (「h = 16」); a false one (n = 12) fails."""
    name, equals, written = (part.strip() for part in piece.partition("="))
    if not equals or name not in set(symbols) - set(labels):
        return False
    if _maybe(piece, symbols, labels) is not None:  # h = 16; n = 词数
        return True
    if symbols[name].degree:  # n = 12: n is the number of tokens, a symbol in this box
        raise ExpressionError(f"这里 {name}（词元数）是符号，不代入数：请删掉「{piece}」。", "note")
    raise ExpressionError(f"本题 {name} = {symbols[name]}，不是 {written}：请按 {name} = "
                          f"{symbols[name]} 再算一遍。", "note")  # h = 8, (8 heads) where h is 16


def _pieces(text: str, symbols: dict, labels, remark=False) -> list[str]:
    """The math between the words of ``text``, to be read as one equation.

    Words before the first piece and after the last are dropped (「可能是 32 吧」). A true remark
    on a symbol (「h = 16」) is dropped beside another piece; in a ``remark`` (a note), so is a
    piece with no digit that does not start with "=" (「随 h 增长」). Between two pieces the words
    must stand beside an "=" (「512/16，也就是 32」) or part two sayings of the box's own name
    (「d_k：32；d_v：32」): another number is not read (「32 个头，32 维」)."""
    # in a note, a piece after words and "+" is another saying: 「4 组键 + 4 组值」 says g 4 twice
    pieces = [piece.strip(" +" if remark else " ") for piece in _WORDS.split(text) if piece.strip()]
    remarks = [piece for piece in pieces if _remark(piece, symbols, labels)]
    vague = [p for p in pieces if remark and not re.search(r"\d", p) and not p.startswith("=")]
    kept = [piece for piece in pieces if piece not in remarks + vague]
    if not kept:  # 「h = 16（头数）」; in a note, one of several true remarks (「h=1, d_k=512」)
        kept = remarks[:1] if remark else remarks
    for last, piece in pairwise(kept):
        joined = last.endswith("=") or piece.startswith("=")
        named = piece.split("=")[0].strip() in labels  # 「32, d_v=32」, 「d_k：32；d_v：32」
        if not (joined or named):
            raise ExpressionError("several", "several")  # _read says it, naming the numbers
    return kept


def _note(m: re.Match, symbols: dict[str, Poly], labels) -> str:
    """A note in parentheses that holds words: dropped (「(一个头)」) or kept as one more side of
    the equation (「(即 512/16)」); 「(h = 16)」 must hold."""
    inner = m.group(1)
    if not _WORDS.search(inner):
        return m.group()
    body = " = ".join(_pieces(inner, symbols, labels, remark=True))
    return " " if not body.strip("= ") or _remark(body, symbols, labels) else f"({body})"


def read_value(text, symbols: dict[str, Poly], labels=(), per=()) -> tuple[Poly | None, str]:
    """(value, "") or (None, why not: an ``Unread`` that quotes the box). Never guesses: every side
    of ``=`` must agree (the box's own name in ``labels`` may stand as a side), and so must a note
    in parentheses (「(h=16)」 must hold); words may stand around the one number, never disown it,
    change it, hold another or count per head (token, layer) unless ``per`` does."""
    typed = clean(text, 10 * MAX_CHARS["form"]).strip()
    try:
        return _read(as_text(text).strip(), symbols, labels, per), ""
    except ExpressionError as exc:  # a quote as typed: 「HEAD」, not the parser's 「head」
        if exc.reason == "zero":  # the divide does not know what the box takes
            exc = ExpressionError(f"{exc}：请填{_wanted(symbols)}。", exc.reason)
        why = re.sub(r"(?<=「)[^「」]+(?=」)",
                     lambda m: (re.search(re.escape(m[0]), typed, re.I) or m)[0], str(exc))
        shown = typed if len(typed) <= MAX_CHARS["form"] else typed[:20] + "……"
        return None, Unread(f"这一栏读到的是「{shown}」。{why}", exc.reason)


def _read(raw: str, symbols: dict[str, Poly], labels, per) -> Poly:
    if len(raw) > MAX_CHARS["form"]:
        raise ExpressionError(f"写了 {len(raw):,} 个字符，太长了：只填一个数或一个式子"
                              f"（{MAX_CHARS['form']} 字以内）。", "long")
    t = clean(raw, MAX_CHARS["form"])
    for pattern, replacement in _UNFOLDED:
        t = re.sub(pattern, replacement, t)
    t = unicodedata.normalize("NFKC", t).lower().translate(_OPERATORS)
    other = [m[0] for m in _PER.finditer(t) if PER_WORDS.get(m[1], m[1]) not in per]
    # the box's own name glued to its number (d_k32, dk32) says name = number, as 「d_k 32」 does
    t = _GLUED.sub(lambda m: f"{m[1]} {m[2]}" if ALIASES.get(m[1], m[1]) in labels else m[0], t)
    for pattern, replacement in _FOLDED:
        t = re.sub(pattern, replacement, t)
    if "\\" in t:  # \frac{512}{16}: \times, \cdot and \div are read, other commands are not
        raise ExpressionError("这一栏读不了 LaTeX 的 \\frac 之类的命令：分数请写成 a / b"
                              "（例如 512 / 16）。", "latex")
    # a Chinese numeral written as a number, quoted as written; a lone 一 is one only when nothing
    # else in the box could be the answer (「一个」, not 「80000（一个头）」)
    alone = not re.search(r"\d|[a-z]", raw, re.IGNORECASE)
    runs = [run for run in _NUMERAL.findall(_NOT_A_NUMERAL.sub(" ", raw)) if run != "一" or alone]
    if runs:
        raise ExpressionError(f"「{runs[0]}」是中文数字：请用阿拉伯数字写，"
                              "例如 32、8万、512/16。", "numeral")
    # words around the one number (see ``_pieces``): nothing is read past one that disowns or
    # changes it, quoted whole as typed: 「不对」, 「和头数无关」, 「不分组」 of 「（不分组）」
    if word := _DISOWN.search(t):
        said = word[0].strip()
        said = (re.search(rf"[^\W\x00-\x7f]*{re.escape(said)}[^\W\x00-\x7f]*", raw) or [said])[0]
        inside = re.search(rf"[(（]([^()（）]*{re.escape(said)}[^()（）]*)[)）]", raw)
        raise ExpressionError(f"文字「{inside[1].strip() if inside else said}」可能会改变这个数的"
                              "意思，这一栏判断不了；请只填你的答案。", "disowned")
    t = _named(t, symbols, labels)  # after the words that disown or change a number are refused
    if t.count("(") != t.count(")"):  # no box is read with them unpaired: say so, and how many
        add, extra = ")(" if t.count("(") > t.count(")") else "()"  # one bracket kind and its pair
        raise ExpressionError(f"括号没有配对：有 {t.count('(')} 个「(」、{t.count(')')} 个「)」；"
                              f"请补上缺的「{add}」，或删掉多的「{extra}」。", "brackets")
    if re.search(r"(?<![\w.])o\s*\(", t):  # O(n^2 d): how fast it grows, not how many
        raise ExpressionError(f"O(…) 只说增长的量级，这一栏要准确的值：请填{_wanted(symbols)}。",
                              "big_o")
    t = _SAME_AS.sub(r"= \1", t)
    worded = bool(_WORDS.search(t))
    try:
        t = re.sub(r"\(([^()]*)\)", partial(_note, symbols=symbols, labels=labels), t)
        value = _read_noted(" = ".join(_pieces(t, symbols, labels)), symbols, labels)
    # several values, or words between two (no "=" was written for certain): the numbers named
    # as typed, 「不止一个数（8、64）」
    except ExpressionError as exc:
        if exc.reason == "several" or (worded and exc.reason == "unequal"):
            numbers = re.findall(r"\d+(?:[.,]\d+)*", raw)
            what = f"不止一个数（{'、'.join(numbers)}）" if len(numbers) > 1 else "不止一个数或式子"
            raise ExpressionError(f"读到了{what}，这一栏只填一个。", "several") from None
        raise
    if other:  # the one value read, said to be of another count (40000 per head, in a total)
        raise ExpressionError(f"这一栏不按「{other[0]}」算。如果这个数就是这一栏要的，删掉「"
                              f"{other[0]}」再提交；如果只算了一部分，按这一栏的问法重算。", "per")
    return value


def _named(t: str, symbols: dict[str, Poly], labels) -> str:
    """A name the box knows then a number (h 16; never n in an expression box, nor a name inside a
    formula: d_model/h 512) or a count (16 个头) only labels what follows beside ×, /, (, = or a
    name: it is dropped, the number or its quotient (d_k 512/8) must be the question's. Else each
    says name = number, a piece of its own (h 16 d_k 32, g 4 512, 512 g 4, h 16 即 32; d_k 32)."""
    names = "|".join(map(re.escape, [*labels, *(k for k, v in symbols.items() if v.degree == 0)]))
    units = "|".join(unit for unit, name in _COUNTED.items() if name in symbols)
    pair = rf"(?<![\w.^/*×·+-])({names or '(?!)'})\s+(\d+(?:\.\d+)?)(?![\d.])"
    pair += rf"|(?<![\w.^])(\d+)\s*({units or '(?!)'})"  # or a count: 16 头
    for after_m, m in pairwise([None, *reversed(list(re.finditer(pair, t)))]):  # last first
        name = m[1] or _COUNTED[m[4]]
        number = m[2] or m[3]
        after = t[m.end() :]
        if name in labels:
            said = True  # name = number, or (False) the number alone
        elif re.match(r"\s*[×·*/^(]", after) or re.search(r"[×·*/^=]\s*$", t[: m.start()]):
            said = False
        elif not (after_m and after_m[1] and not m.string[m.end() : after_m.start()].strip()):
            said = not re.match(r"\s*[a-z_]", after)  # else as the name's pair right after it
        run = re.match(r"(?:\s*/\s*(?:\d+(?:\.\d+)?|[a-z_]\w*))*", after)[0]  # d_k 512/8
        if not said and _maybe(f"{name} = {number}{run}", symbols, labels) is None:
            _remark(f"{name} = {number}", symbols, labels)  # h 8 × 64 where h is 16: refused
        comma = ", " if re.search(r"[\w)]\s*$", t[: m.start()]) else ""
        # then a word, or (at the start: h 16 即 32) an "=", starts another piece
        more = "," if re.match(r"\s*\w" if t[: m.start()].strip() else r"\s*[\w=]", after) else ""
        t = t[: m.start()] + (f"{comma}{name} = {number}{more} " if said else f"{number} ") + after
    return t


def _read_noted(t: str, symbols: dict[str, Poly], labels) -> Poly:
    """A note in parentheses at the end is one more side of the equation (「32 (64)」 is refused as
    unequal, 「64 (d_v 64)」 read), unless it is a true remark on a symbol (「(h=16)」) or a factor:
    8(n·64·n) multiplies."""
    m = _NOTE.fullmatch(t)
    if not m:
        return _read_sides(t, symbols, labels)
    main, note = (part.strip() for part in m.groups())
    if _remark(note, symbols, labels):
        return _read_sides(main, symbols, labels)
    a, b = (_maybe(part, symbols, labels) for part in (main, note))
    factor = "=" not in note and None not in (a, b) and a.degree == 0 and b.degree > 0
    if None not in (a, b) and a != b and (named := note.split("=")[0].strip()) in labels:
        same = " = ".join(labels)  # 「d_k = d_v」
        raise ExpressionError(f"括号里 {named} 写的是 {b}，和 {a} 不一样；本课里 {same}，"
                              f"先想清楚哪一个对，再只填 {labels[0]} 一个数。", "other_name")
    if "=" not in note and None not in (a, b) and a != b and not factor:  # 32 (64): no "="
        said = note if note == str(b) else f"{note}（= {b}）"  # as read: 「512 / 8（= 64）」
        raise ExpressionError(f"括号里写的是 {said}，和前面的 {a} 不一样：若是相乘，请写 ×；"
                              "否则请只填你算出的那一个。", "unequal")
    return _read_sides(t if factor else f"{main} = {note}", symbols, labels)


def _maybe(text: str, symbols: dict[str, Poly], labels) -> Poly | None:
    try:
        return _read_sides(text, symbols, labels)
    except ExpressionError:
        return None


def _wanted(symbols: dict) -> str:
    """What a box takes, said to the learner: 一个数，或用 d_model、h 写出的式子."""
    return f"一个数，或用 {'、'.join(sorted(symbols))} 写出的式子" if symbols else "一个数"


def _read_sides(text: str, symbols: dict[str, Poly], labels) -> Poly:
    sides = dict.fromkeys(side.strip() for side in text.split("="))  # each side read once
    values = [parse_expression(side, symbols, labels)
              for side in sides if side and side not in labels]
    if not values and (named := set(sides) & set(labels)):  # only the box's own name (「d_k」)
        raise ExpressionError(f"{min(named)} 就是要填的量：请填它的值（{_wanted(symbols)}）。",
                              "no_number")
    if not values:
        raise ExpressionError("里面没有读到数或式子：请填一个数或式子。", "no_number")
    if len(set(values)) > 1:
        raise ExpressionError(f"等式两边不相等（{' 和 '.join(map(str, dict.fromkeys(values)))}）："
                              "请只填你算出的那一个。", "unequal")
    return values[0]


# ------------------------------------------------------------------------------ answer keys
@dataclass(frozen=True)
class NumberBox:
    """One number; a wrong value is explained by ``hints`` (value -> what it most likely means),
    else ``generic``."""

    name: str
    label: str  # the visible label before the box
    target: Fraction | int | Poly
    # names a learner may write in the box (d_model, h …) -> value
    symbols: dict = field(default_factory=dict)
    # an ExpressionBox's explanation of a wrong value
    explain: Callable[[Poly], str] | None = None
    unit: str = ""  # shown after the box
    hints: tuple = ()
    generic: str = ""
    placeholder: str = ""
    # other names of the box's unknown: 「d_k = d_v = 32」 reads as 32
    labels: tuple[str, ...] = ()
    per: tuple[str, ...] = ()  # what one value counts: head, token, layer; none for a total

    def read(self, text: str) -> tuple[Fraction | Poly | None, str]:
        symbols = {k: v if isinstance(v, Poly) else Poly.const(v) for k, v in self.symbols.items()}
        value, why = read_value(text, symbols, (self.name, *self.labels), self.per)
        if isinstance(self, ExpressionBox) or value is None:
            return value, why
        # a number box's symbols are numbers and parse_expression refuses n: what it read has no n
        return value.constant, ""

    def right(self, value) -> bool:
        return value == self.target

    def wrong_why(self, value) -> str:
        # a hint's value is a number, or a Poly in an expression box
        hint = next((hint for known, hint in self.hints if known == value), "")
        return hint or (self.explain(value) if self.explain else self.generic)

    def shown(self, value) -> str:  # the echo: every digit, never rounded to the answer
        return str(value) if isinstance(value, Poly) else fmt_number(value)


class ExpressionBox(NumberBox):
    """A polynomial in n: ``target``, ``symbols`` Polys; ``explain`` says what a wrong one means."""


@dataclass(frozen=True)
class ChoiceBox:
    """One choice among a few, radio buttons: ``options`` are (key, label, why right or wrong)."""

    name: str
    label: str
    options: tuple[tuple[str, str, str], ...]
    answer: str

    def read(self, text: str) -> tuple[str | None, str]:
        folded = unicodedata.normalize("NFKC", clean(text, MAX_CHARS["form"])).strip()
        for key, label, _ in self.options:
            if folded in (key, label):
                return key, ""
        labels = "、".join(label for _, label, _ in self.options)
        return None, Unread(f"这一栏读到的是「{folded}」：请从 {labels} 中选一个。", "choice")

    def right(self, value: str) -> bool:
        return value == self.answer

    def wrong_why(self, value: str) -> str:
        return next(why for key, _, why in self.options if key == value)

    def shown(self, value: str) -> str:
        return next(label for key, label, _ in self.options if key == value)


@dataclass(frozen=True)
class FormKey:
    """A form's boxes in order; ``whole`` may explain a wrong set of values at once (a shape)."""

    boxes: tuple
    praise: str
    whole: Callable[[dict], str] | None = None
    # a shape: 「(8, 12, 64)」 typed into the first box (or given as one string) fills all boxes
    spread: bool = False


@dataclass(frozen=True)
class ChoiceKey:
    # (key, label, why it is right or what is wrong with it)
    options: tuple[tuple[str, str, str], ...]
    answer: frozenset
    praise: str


# ------------------------------------------------------------------------------ form
def _shape(text: str) -> list[str]:
    """The parts of a shape typed into one box: 「（8，12，64）」, 8×12×64, torch.Size([8, 12, 64]);
    words before and after a bracketed shape are dropped (「形状是 (8, 12, 64)」) unless one
    disowns or changes it (「(8, 12, 64) 不对」)."""
    inner = unicodedata.normalize("NFKC", clean(text, 200)).strip()  # ，and ； are , and ; now
    worded = _DISOWN.search(inner)
    if not worded:
        inner = re.sub(r"^[^\x00-\x7f]+[\s:=]*(?=[(\[])", "", inner)
        inner = re.sub(r"(?<=[)\]])[\s,.;]*[^\x00-\x7f][^()\[\]]*$", "", inner)
    inner = re.sub(r"^(?:torch\s*\.\s*)?size\s*\((.*)\)$", r"\1", inner, flags=re.I | re.S)
    inner = inner.strip().rstrip("。.?").strip()
    # names = values: (h, n, d_k) = (8, 12, 64) reads h = 8, n = 12, d_k = 64
    if named := re.fullmatch(r"\(?([^()=]*?)\)?\s*=\s*\(?([^()=]*?)\)?", inner):
        names, values = (re.split(r"\s*,\s*", side.strip()) for side in named.groups())
        return [f"{a} = {b}" for a, b in zip(names, values)] if len(names) == len(values) else []
    inner = re.sub(r"\)\s*(\([^()]*\))$", r" \1)", inner)  # (8, 12, 64)(h 8): a note on the last
    inner = re.sub(r"^[(\[]+((?:[^()\[\]]|\([^()]*\))*)[)\]]+$", r"\1", inner).strip()  # 64 (h 8)
    # words between commas or × are units (8 头 × 12 × 64); a space parts numbers only (n = 8); no
    # separator in a note splits it (64 (h 8, d_k 64))
    seps = [rf"(?:{s})(?![^(]*\))" for s in (r"[,、;]", r"[×*]", r"[xX]|(?<=\d)\s+(?=\d)")]
    sep = r"[,、;×xX*]|\s" if worded else next((s for s in seps if re.search(s, inner)), seps[2])
    return [p.strip() for p in re.split(sep, inner) if p.strip()]


def _items(q: Question, answer) -> tuple[list, list, list[str], str]:
    """One item per box (a shape typed into the first box fills them when it has as many parts), the
    non-empty items past the last box, the shape's parts and the first box's text as typed."""
    names = [b.name for b in q.key.boxes]
    if isinstance(answer, dict):  # each box's by its name, then the keys that name no box
        answer = [*map(answer.get, names), *(v for k, v in answer.items() if k not in names)]
    if not isinstance(answer, list | tuple):  # one text is the first box's
        answer = [answer]
    items = [*answer, *[None] * len(names)][: len(names)]  # None where a box was not given
    extra = list(answer[len(names) :])
    first_alone = not any(as_text(v).strip() for v in items[1:])
    shape = _shape(items[0]) if q.key.spread and isinstance(items[0], str) and first_alone else []
    typed = as_text(items[0]).strip()
    items = shape if len(shape) == len(names) else items
    return items, [v for v in extra if as_text(v).strip()], shape, typed


def form_values(q: Question, answer) -> dict[str, str]:
    """The answer as {box name: text}, a shape typed into the first box spread over the boxes."""
    return {b.name: as_text(v) for b, v in zip(q.key.boxes, _items(q, answer)[0])}


def check_form(q: Question, answer) -> Feedback:
    boxes = q.key.boxes
    items, extra, shape, typed = _items(q, answer)
    texts = {b.name: as_text(v).strip() for b, v in zip(boxes, items)}
    if not any(texts.values()):
        return answer_first(q.id, "在框里填上答案")
    if extra or any(isinstance(v, list | tuple | set | frozenset | dict) for v in items):
        said = "、".join(f"「{t}」" for t in map(as_text, [*items, *extra]) if t.strip())
        crowded = f"读到的是{said[:200]}：这道题有 {len(boxes)} 个框，每个框只填一个值。"
        unread = tuple((b.name, "unread") for b in boxes)
        crowds = tuple((b.name, "crowded") for b in boxes)
        return Feedback(False, fb.FORM + crowded, q.id, parts=unread, reasons=crowds)
    read = {b.name: b.read(texts[b.name]) if texts[b.name] else (None, "") for b in boxes}
    first = boxes[0].name
    said = f"这一栏读到的是「{typed}」"
    numbers = sum(any(c.isdigit() for c in p) for p in shape)  # in the first box, others empty
    shaped = ""  # a shape typed into the first box, not read: the other boxes are not asked for
    # several numbers beside words that disown or change them: 「(8, 12, 64) 不对」, two shapes
    if numbers > 1 and getattr(read[first][1], "reason", "") == "disowned":
        shaped = Unread(f"{said}：旁边的文字（不对、不是……）或第二个形状让人看不出哪个是你的答案；"
                        "请只写你认为对的那个形状。", "shape_disowned")
    # a shape of another length, in ASCII only: how to write this one
    elif 1 < len(shape) != len(boxes) and all(p.isascii() for p in shape):
        axes = ", ".join(b.label.replace(" ", "") for b in boxes)
        shaped = Unread(f"{said}。你写的形状有 {len(shape)} 维，本题的形状有 {len(boxes)} 维："
                        f"写成 ({axes})，或每框填一个数。", "shape_length")
    # a whole shape in the first box, and the other boxes filled too
    elif q.key.spread and len(_shape(texts[first])) == len(boxes) > 1:
        shaped = Unread(f"{said}，是整个形状，可其他框也填了：请清空其他框，或每框只填一个数。",
                        "shape_crowded")
    # a part of a shape spread from the first box: its reason, said of the first box as typed
    elif len(shape) == len(boxes) and (bad := [b for b in boxes if read[b.name][0] is None]):
        why = read[bad[0].name][1]
        part = f"其中「{texts[bad[0].name]}」：" if texts[bad[0].name] in typed else ""  # as typed
        shaped = Unread(f"{said}。{part}{why.split('」。', 1)[-1]}", why.reason)
        texts.update((b.name, "") for b in boxes[1:])  # the learner left them empty
    if shaped:
        read[first] = (None, shaped)
    state = {name: "unread" if value is None else "read" for name, (value, _) in read.items()}
    state.update((name, "empty") for name, text in texts.items() if not text)
    states = tuple(state.items())
    empty = "、".join(f"「{b.label}」" for b in boxes if state[b.name] == "empty" and not shaped)
    if unread := [b for b in boxes if state[b.name] == "unread"]:
        reasons = tuple((b.name, read[b.name][1].reason) for b in unread)
        problems = "\n".join(f"「{b.label}」{_elsewhere(b, read[b.name][1], texts[b.name], boxes)}"
                             for b in unread)  # a box a line; what the boxes want, said once
        wants = {getattr(b, "placeholder", "") for b in unread}  # a shape's reason says it
        tail = "".join(f"（{want}）" for want in sorted(wants) if want and not shaped)
        message = fb.FORM + problems + tail + (f"{empty}还空着。" if empty else "")
        return Feedback(False, message, q.id, parts=states, reasons=reasons)
    if empty:
        message = f"{fb.INCOMPLETE}{empty}还空着，全部填好再提交。"
        return Feedback(False, message, q.id, parts=states)
    return _judge(q, {name: value for name, (value, _) in read.items()}, texts)


def _elsewhere(box, why: str, text: str, boxes) -> str:
    """Why a box was not read; another box's choice typed in it is sent there (「32；不变」)."""
    typed = [(len(label), label, b.label) for b in boxes if b is not box
             for _, label, _ in getattr(b, "options", ()) if label in text]
    if not typed:
        return why
    _, label, where = max(typed)
    return f"这一栏读到的是「{text}」。「{label}」是「{where}」这一问的答案；这一栏只填一个数。"


def _said(text: str, shown: str) -> str:  # as typed, beside the value read: 「512/8」（= 64）
    same = re.sub(r"[,\s]", "", text) == shown.replace(",", "")
    return f" {shown}" if same else f"「{text}」（= {shown}）"


def _judge(q: Question, values: dict, texts: dict) -> Feedback:
    """Every box read: right, or what each wrong value most likely means."""
    boxes = q.key.boxes
    wrong = [b for b in boxes if not b.right(values[b.name])]
    verdicts = tuple((b.name, "wrong" if b in wrong else "right") for b in boxes)
    # exact: never rounded to the answer
    echoes = tuple((b.name, b.shown(values[b.name])) for b in boxes)
    judged = partial(Feedback, question_id=q.id, parts=verdicts, echoes=echoes)
    if not wrong:
        return judged(True, fb.RIGHT + q.key.praise)
    if q.key.whole is not None and (said := q.key.whole(values)):
        shape_id = "shape=(" + ", ".join(str(v) for v in values.values()) + ")"
        return judged(False, fb.WRONG + said, mistakes=(shape_id,))
    verb = {b.name: "选" if isinstance(b, ChoiceBox) else "填" for b in wrong}
    parts = [f"「{b.label}」你{verb[b.name]}的是{_said(texts[b.name], b.shown(values[b.name]))}。"
             f"{b.wrong_why(values[b.name])}" for b in wrong]
    if len(wrong) < len(boxes) > 1:
        right = "、".join(f"「{b.label}」" for b in boxes if b not in wrong)
        parts.append(f"{right}填得对。")
    # a known mistake: a hint, or an expression box's explanation, not the generic word
    named = [b for b in wrong if b.wrong_why(values[b.name]) not in ("", getattr(b, "generic", ""))]
    mistakes = tuple(f"{b.name}={str(values[b.name]).replace(',', '')}" for b in named)
    return judged(False, fb.WRONG + "".join(parts), mistakes=mistakes)


# ------------------------------------------------------------------------------ choices
def check_choice(q: Question, answer) -> Feedback:
    """Radio buttons (``single``) or checkboxes (``multi``): each wrong key chosen is named with
    why it is wrong."""
    k: ChoiceKey = q.key
    why = {key: w for key, _, w in k.options}  # each key, in order, with why it is right or wrong
    single = q.kind == "single"
    typed = clean(answer, MAX_CHARS[q.kind] + 1)  # checkboxes' keys joined, or typed: B, AC, A、C
    if not typed.strip():
        return answer_first(q.id, "选一个选项" if single else "勾选你认为对的选项（可以多选）")
    folded = unicodedata.normalize("NFKC", typed).upper()
    chosen = sorted({ch for ch in folded if ch not in " ,、;/和\t\n"})
    readable = len(typed) <= MAX_CHARS[q.kind] and chosen and set(chosen) <= set(why)
    if readable and single and len(chosen) > 1:
        return Feedback(False, f"{fb.FORM}这道题只选一项，你选了 {'、'.join(chosen)}。", q.id)
    if not readable:
        how = "点选一个选项" if single else "勾选一个或几个选项"
        message = f"{fb.FORM}读到的是「{typed[:40]}」：请{how}（{'、'.join(why)}）。"
        return Feedback(False, message, q.id)
    if set(chosen) == k.answer:  # a single choice's answer is one key (questions.py checks)
        return Feedback(True, fb.RIGHT + k.praise, q.id)
    wrong = sorted(set(chosen) - k.answer)
    missing = set() if single else k.answer - set(chosen)
    good = sorted(set(chosen) & k.answer)
    parts = [f"{'、'.join(good)} 选得对。"] if good else []
    parts += [f"{key} 不该选。{why[key]}" for key in wrong]  # 「还不对：A 不该选。…」: one colon
    mistakes = tuple(f"option={key}" for key in wrong)
    if missing:
        parts.append(f"还有 {len(missing)} 个对的选项没有选，再读一遍每一项。")
        mistakes += ("missing",)
    return Feedback(False, fb.WRONG + "".join(parts), q.id, mistakes=mistakes)


# ------------------------------------------------------------------------------ self-explanation
def check_self(q: Question, answer) -> Feedback:
    """Free text is never read or graded: the learner gets the rubric to compare with."""
    cap = MAX_CHARS["self"]
    text = clean(answer, cap + 1).strip()
    if not text:  # nothing to compare yet: a prompt, no verdict
        prompt = (f"{fb.ANSWER_FIRST}先用自己的话写几句，哪怕不确定也没关系；写好后再提交，"
                  "就会出现要点清单和常见误解，由你自己对照。")
        return Feedback(False, prompt, q.id)
    head = (f"{fb.REVIEW}写好了。对照下面的要点和常见误解，勾出你的回答说到了哪几点，"
            "再点「记录自评」。")
    if len(text) > cap:
        head += f"（回答超过 {cap} 字，写短一些更容易对照。）"
    return Feedback(False, head, q.id)


def self_assess(qid: str, rubric: Rubric, ticked) -> Feedback:
    """The learner's own tick of the rubric, recorded as a self-assessment (never as 正确)."""
    names = [p.name for p in rubric.points]
    chosen = tuple(n for n in names if n in set(ticked or ()))
    rest = "；".join(n for n in names if n not in chosen)
    message = f"{fb.SELF}你勾了 {len(chosen)} / {len(names)} 个要点。" + (
        f"没勾的：{rest}。可以改一改你的回答，再对照一次。" if rest else
        "按你自己的对照，要点都说到了；再看一眼上面的误解，你的回答里没有吧？")  # fmt: skip
    return Feedback(False, message, qid, covered=chosen)


# ------------------------------------------------------------------------------ named checkers
def split_heads_shape_mistake(got: tuple[int, ...], n: int, h: int, d_k: int) -> str:
    """What a wrong split_heads shape most likely means (the §3 shape question and exercise 1)."""
    d_model = h * d_k
    if got == (n, h, d_k):
        return "是不是忘了 transpose？reshape 成 (n, h, d_k) 之后，还要把头的轴换到最前面。"
    if got == (h, d_k, n):
        return "后两个轴反了（那是 Kᵀ 的形状）：每个头应当是 (n, d_k)，一行一个词元。"
    if got == (n, d_model):
        return f"这还是拆分之前 X 的形状：需要把最后一维切成 {h} 份，多出一个「头」的维度。"
    if got in ((h, n, d_model), (n, h, d_model)):
        return f"每个头不是整个 {d_model} 维：d_model 是平均切给 h 个头的，每个头分到几维？"
    if len(got) != 3:
        return "结果应当有 3 个轴：(头数 h, 词元数 n, 每个头的宽度 d_k)。"
    return "三个轴依次是头数、词元数、每个头的宽度：对照一下哪一维的数不对、哪两维排反了。"


def split_heads_shape(targets: tuple, values: dict) -> str:
    """split_heads' (h, n, d_k) boxes read as a shape, axis by axis, and what it likely means."""
    got = tuple(values.values())
    if any(v.denominator != 1 for v in got):
        return "形状里的每一维都是整数。"
    got = tuple(int(v) for v in got)  # echoed as the boxes echo them (1,000), axis by axis
    read = "、".join(f"第{'一二三'[i]}维 {fmt_number(v)}" for i, v in enumerate(got))
    h, n, d_k = targets
    return f"你填的是{read}。" + split_heads_shape_mistake(got, n, h, d_k)


def power_of_n(target: Poly, generic: str, value: Poly) -> str:
    """An expression box's wrong value: ``generic`` when n's power is right, else that it is not."""
    if value.degree == target.degree:
        return generic
    return "式子里 n 的次数不对：n × n 个分数，每个都要算一次点积。"


# The checkers a question file may name: a form's ``whole``, an expression box's ``explain``.
NAMED = {checker.__name__: checker for checker in (split_heads_shape, power_of_n)}

CHECKERS: dict[str, Callable[[Question, object], Feedback]] = {
    "form": check_form, "single": check_choice, "multi": check_choice, "self": check_self,
}
