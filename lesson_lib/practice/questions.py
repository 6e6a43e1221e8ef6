"""The question bank, read from data: one TOML file per section beside its code,
``lesson_lib/sections/sNN_*.toml`` (the core lesson's, in section order) and ``lab_*.toml``
(the optional labs'). Every file is checked whole when the bank is first read: a mistake
raises ``QuestionDataError`` naming the file, the question and the field. The format (its
fields, the allowed lesson functions, the named checkers) is README's 「改编这节课」."""

from __future__ import annotations

import math
import string
import sys
from fractions import Fraction
from functools import cache, partial
from pathlib import Path

from lesson_lib import paper
from lesson_lib.attention import head_width
from lesson_lib.checks import LessonInputError
from lesson_lib.costs import count, kv_sharing, parameters
from lesson_lib.head_stats import crowded_keys
from lesson_lib.practice import checkers
from lesson_lib.practice.checkers import (
    ChoiceBox,
    ChoiceKey,
    ExpressionBox,
    FormKey,
    NumberBox,
    Poly,
)
from lesson_lib.practice.feedback import Question
from lesson_lib.practice.freetext import Rubric, RubricPoint

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the backport, the same parser
    import tomli as tomllib

SECTIONS = Path(__file__).resolve().parent.parent / "sections"


class QuestionDataError(ValueError):
    """A question file the bank cannot use; ``file``, ``question`` (its id, "" for the file
    itself) and ``field`` say where, the message says it in Chinese with what to do."""

    def __init__(self, file: Path, question: str, field: str, problem: str):
        self.file = Path(file)
        self.question = question
        self.field = field
        where = f"题目 {question} 的" if question else ""
        guide = "（格式见 README「改编这节课」）"
        super().__init__(f"题目文件 {self.file.name}：{where}字段「{field}」{problem}{guide}")


# ------------------------------------------------------------------ the allowed lesson functions
def _table3(row: str, column: str, h=None, d_k=None):
    """A cell of the paper's Table 3: the first row named ``row`` with this h (and d_k)."""
    for r in paper.TABLE3:
        if r["row"] == row and h in (None, r["h"]) and d_k in (None, r["d_k"]):
            return r[column]
    raise ValueError(f"表 3 没有 row = {row}、h = {h}、d_k = {d_k} 这一行")


def _refusal(d_model: int, h: int) -> str:
    """What the kernel says when h does not divide d_model (its own Chinese message)."""
    try:
        head_width(d_model, h)
    except LessonInputError as exc:
        return str(exc)
    return ""


def _count(n: int, d_model: int, h: int, part: str) -> int:
    return getattr(count(n, d_model, h), part)


def _kv_cache(d_model: int, h: int, groups: int) -> int:
    return kv_sharing(d_model, h, groups).cache_per_token


def _winner_weight(keys: int, length: float) -> float:
    return crowded_keys((keys,), length)[keys]


def _floor(of) -> int:
    return math.floor(of)


NUMBER = "number"  # an argument that is a number, a value's name or an expression of them
WORD = "word"  # an argument that is a word (a column, a row, a part of the count)
FUNCTIONS = {  # name -> (function, {argument: NUMBER or WORD})
    "paper.base_d_model": (lambda: paper.BASE_D_MODEL, {}),
    "paper.base_heads": (lambda: paper.BASE_HEADS, {}),
    "paper.table3": (_table3, {"row": WORD, "column": WORD, "h": NUMBER, "d_k": NUMBER}),
    "attention.head_width": (head_width, {"d_model": NUMBER, "h": NUMBER}),
    "attention.refusal": (_refusal, {"d_model": NUMBER, "h": NUMBER}),
    "costs.count": (_count, {"n": NUMBER, "d_model": NUMBER, "h": NUMBER, "part": WORD}),
    "costs.parameters": (parameters, {"d_model": NUMBER, "h": NUMBER}),
    "costs.kv_cache": (_kv_cache, {"d_model": NUMBER, "h": NUMBER, "groups": NUMBER}),
    "head_stats.winner_weight": (_winner_weight, {"keys": NUMBER, "length": NUMBER}),
    "floor": (_floor, {"of": NUMBER}),
}

# ------------------------------------------------------------------ the format: field -> type
_QUESTION = {
    "id": str, "kind": str, "section": str, "prompt": str, "explanation": str,
    "praise": str, "answer": str, "options": list, "boxes": list, "values": dict,
    "whole": str, "spread": bool, "right_answers": list, "wrong_answers": list,
    "placeholder": str, "picture": dict, "points": list, "misconceptions": list,
    "model_answer": str, "counted": bool,
}  # fmt: skip
_CHOICE_NEEDS = ("id", "kind", "section", "prompt", "explanation", "answer", "options")
_FORM_NEEDS = ("id", "kind", "section", "prompt", "explanation", "boxes")
_TESTS = ("right_answers", "wrong_answers")  # every question but a self-explanation has its own
_NEEDS = {
    "single": (*_CHOICE_NEEDS, *_TESTS),
    "multi": (*_CHOICE_NEEDS, *_TESTS),
    "form": (*_FORM_NEEDS, *_TESTS),
    "self": ("id", "kind", "section", "prompt", "points", "misconceptions", "model_answer"),
}
_OPTION = {"key": str, "label": str, "why": str}
_BOX = {
    "name": str, "kind": str, "label": str, "target": object, "symbols": dict,
    "labels": list, "unit": str, "hints": list, "generic": str, "placeholder": str,
    "explain": str, "options": list, "answer": str,
}  # fmt: skip
_BOX_NEEDS = {
    "number": ("name", "label", "target"),
    "expression": ("name", "label", "target"),
    "choice": ("name", "label", "options", "answer"),
}
_HINT = {"value": object, "says": str}
_POINT = {"name": str, "text": str}
_MISCONCEPTION = {"claim": str, "says": str}
_TYPE_NAMES = {str: "文字", list: "列表", dict: "表", bool: "true 或 false"}


def _exact(x: int | float) -> Fraction:
    """A value as the exact number it prints as (25.8, not the float nearest to it)."""
    if isinstance(x, float):
        return Fraction(str(x))
    return Fraction(x)


def _plain(x: Fraction) -> int | float:
    """An int when whole, else a float (what a placeholder formats)."""
    if x.denominator == 1:
        return int(x)
    return float(x)


class _Reader:
    """Reads one file's questions; a problem raises ``QuestionDataError`` naming its place."""

    def __init__(self, path: Path):
        self.path = path
        self.qid = ""
        self.values: dict = {}

    def fail(self, field: str, problem: str) -> QuestionDataError:
        return QuestionDataError(self.path, self.qid, field, problem)

    # ---- fields, texts, numbers
    def fields(self, table, spec: dict, needs, where: str) -> dict:
        """``table`` with only ``spec``'s fields, each of its type, and all of ``needs``."""
        if not isinstance(table, dict):
            raise self.fail(where.rstrip("."), "应当是一个表（[[…]] 或 { … }）。")
        for name, value in table.items():
            if name not in spec:
                raise self.fail(where + name, f"不认识：可用的字段是 {'、'.join(spec)}。")
            want = spec[name]
            if want is not object and not isinstance(value, want):
                raise self.fail(where + name, f"应当是{_TYPE_NAMES[want]}。")
        for name in needs:
            if name not in table:
                raise self.fail(where + name, "缺少这个字段。")
        return table

    def text(self, template: str, field: str) -> str:
        """A text with {name} or {name:format} placeholders, filled from the values."""
        for _, name, _, _ in string.Formatter().parse(template):
            if name is not None and name not in self.values:
                known = "、".join(self.values) or "（无）"
                raise self.fail(field, f"里的占位符 {{{name}}} 不在 values 里：可用的是 {known}。")
        try:
            return template.format_map(self.values)
        except (ValueError, TypeError) as exc:
            problem = f"的占位符写法不对（{exc}）；花括号本身写成 {{{{ 和 }}}}。"
            raise self.fail(field, problem) from None

    def number(self, value, field: str, unknown: dict | None = None):
        """A number, a value's name or an expression of them (``d_model / h``); with ``unknown``
        ({"n": Poly.n()}) an expression in n, as a Poly."""
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self.fail(field, "应当是一个数、一个 values 里的名字或它们的算式。")
        if not isinstance(value, str):
            return value
        known = {k: Poly.const(_exact(v)) for k, v in self.values.items() if _is_number(v)}
        try:
            poly = checkers.parse_expression(value, {**known, **(unknown or {})})
        except checkers.ExpressionError as exc:
            raise self.fail(field, f"读不懂「{value}」：{exc}") from None
        if unknown is not None:
            return poly
        return _plain(poly.constant)

    # ---- values
    def read_values(self, table: dict, where: str) -> None:
        """Each value in order: a number, an expression of earlier ones, or a function's result."""
        for name, spec in table.items():
            field = f"{where}.{name}"
            if not name.isidentifier() or name in checkers.ALIASES:
                problem = "名字只能用字母、数字和下划线，也不能是 dk、heads 这类别名。"
                raise self.fail(field, problem)
            if isinstance(spec, dict):
                self.values[name] = self.call(spec, field)
            else:
                self.values[name] = self.number(spec, field)

    def call(self, spec: dict, field: str):
        name = spec.get("call")
        if name not in FUNCTIONS:
            known = "、".join(FUNCTIONS)
            raise self.fail(f"{field}.call", f"「{name}」不是可用的函数：可用的是 {known}。")
        function, arguments = FUNCTIONS[name]
        args = {}
        for arg, value in spec.items():
            if arg == "call":
                continue
            if arg not in arguments:
                known = "、".join(arguments) or "（无）"
                raise self.fail(f"{field}.{arg}", f"{name} 没有这个参数：它的参数是 {known}。")
            if arguments[arg] == WORD:
                args[arg] = value
            else:
                args[arg] = self.number(value, f"{field}.{arg}")
        try:
            return function(**args)
        except Exception as exc:  # a wrong row, an h the kernel refuses: said with the field
            raise self.fail(field, f"算不出来：{name} 说「{exc}」。") from None

    # ---- a question
    def question(self, raw) -> Question:
        self.qid = ""
        if isinstance(raw, dict):
            self.qid = str(raw.get("id", ""))
        kind = raw.get("kind") if isinstance(raw, dict) else None
        if kind not in _NEEDS:
            raise self.fail("kind", f"应当是 {'、'.join(_NEEDS)} 之一。")
        q = self.fields(raw, _QUESTION, _NEEDS[kind], "")
        if "picture" in q:
            self.picture(q["picture"])
        file_values = dict(self.values)
        self.read_values(q.get("values", {}), "values")
        try:
            return self.build(q, kind)
        finally:
            self.values = file_values  # a question's own values are its own

    def build(self, q: dict, kind: str) -> Question:
        common = {
            "placeholder": self.text(q.get("placeholder", ""), "placeholder"),
            "values": dict(self.values),
            "picture": q.get("picture", {}),
        }
        prompt = self.text(q["prompt"], "prompt")
        if kind == "self":
            rubric = self.rubric(q)
            explanation = rubric.text() + "\n" + rubric.model_answer
            return Question(q["id"], q["section"], kind, prompt, explanation, key=rubric, **common)
        common["right_answers"] = self.answers(q["right_answers"], "right_answers")
        common["wrong_answers"] = self.answers(q["wrong_answers"], "wrong_answers")
        praise = self.text(q.get("praise", ""), "praise")
        if kind == "form":
            key = self.form(q, praise)
        else:
            key = self.choices(q, praise)
        explanation = self.text(q["explanation"], "explanation")
        return Question(q["id"], q["section"], kind, prompt, explanation, key=key, **common)

    def answers(self, items: list, field: str) -> tuple:
        """Test answers: one text, or one text per box."""
        out = []
        for i, item in enumerate(items):
            where = f"{field}[{i}]"
            if isinstance(item, str):
                out.append(self.text(item, where))
            elif isinstance(item, list) and all(isinstance(a, str) for a in item):
                out.append([self.text(a, where) for a in item])
            else:
                raise self.fail(where, "应当是一段文字，或每个框一段文字的列表。")
        return tuple(out)

    def options(self, items: list, field: str) -> tuple[tuple[str, str, str], ...]:
        out = []
        for i, raw in enumerate(items):
            where = f"{field}[{i}]"
            o = self.fields(raw, _OPTION, ("key", "label"), where + ".")
            label = self.text(o["label"], where + ".label")
            out.append((o["key"], label, self.text(o.get("why", ""), where + ".why")))
        keys = [key for key, _, _ in out]
        if len(set(keys)) != len(keys):
            raise self.fail(field, "里有重复的 key。")
        return tuple(out)

    def choices(self, q: dict, praise: str) -> ChoiceKey:
        options = self.options(q["options"], "options")
        for key, _, _ in options:  # a learner may type 「AC」: one character a key
            if len(key) != 1:
                raise self.fail("options", f"里的 key「{key}」应当是一个字符（A、B、C……）。")
        answer = frozenset(q["answer"])
        keys = {key for key, _, _ in options}
        if not answer <= keys or (q["kind"] == "single" and len(answer) != 1):
            known = "、".join(sorted(keys))
            raise self.fail("answer", f"应当是选项的 key（{known}）；单选题只写一个。")
        for key, _, why in options:
            if key not in answer and not why:
                problem = f"里错的选项 {key} 缺少 why：选了它的学生要读到错在哪里。"
                raise self.fail("options", problem)
        return ChoiceKey(options, answer, praise)

    def form(self, q: dict, praise: str) -> FormKey:
        boxes = tuple(self.box(raw, f"boxes[{i}]") for i, raw in enumerate(q["boxes"]))
        names = [b.name for b in boxes]
        if len(set(names)) != len(names):
            raise self.fail("boxes", "里有重复的 name。")
        whole = None
        if "whole" in q:  # told the boxes' targets: a shape checker knows (h, n, d_k)
            whole = partial(self.named(q["whole"], "whole"), tuple(b.target for b in boxes))
        return FormKey(boxes, praise, whole=whole, spread=q.get("spread", False))

    def named(self, name: str, field: str):
        if name not in checkers.NAMED:
            known = "、".join(checkers.NAMED)
            raise self.fail(field, f"「{name}」不是已有的检查器：可用的是 {known}。")
        return checkers.NAMED[name]

    def picture(self, table: dict) -> None:
        """``draw``: the section function (module.function under sections/) that draws the
        question's picture, with its arguments. Checked without importing the section."""
        draw = table.get("draw", "")
        parts = draw.split(".") if isinstance(draw, str) else []
        found = False
        if len(parts) > 1:
            module = SECTIONS.joinpath(*parts[:-1])
            # a module, or a package's __init__ (s03_heads/)
            for path in (module.with_suffix(".py"), module / "__init__.py"):
                if path.is_file() and f"def {parts[-1]}(" in path.read_text(encoding="utf-8"):
                    found = True
        if not found:
            problem = f"「{draw}」不是 lesson_lib/sections 里的函数（写成 模块.函数）。"
            raise self.fail("picture.draw", problem)

    def box(self, raw, where: str):
        kind = raw.get("kind", "number") if isinstance(raw, dict) else None
        if kind not in _BOX_NEEDS:
            raise self.fail(f"{where}.kind", f"应当是 {'、'.join(_BOX_NEEDS)} 之一。")
        b = self.fields(raw, _BOX, _BOX_NEEDS[kind], f"{where}.")
        label = self.text(b["label"], f"{where}.label")
        if kind == "choice":
            options = self.options(b["options"], f"{where}.options")
            if b["answer"] not in {key for key, _, _ in options}:
                raise self.fail(f"{where}.answer", "应当是一个选项的 key。")
            return ChoiceBox(b["name"], label, options, b["answer"])
        unknown = {"n": Poly.n()} if kind == "expression" else None
        symbols = {}
        for name, value in b.get("symbols", {}).items():
            symbols[name] = self.number(value, f"{where}.symbols.{name}")
        target = self.number(b["target"], f"{where}.target", unknown)
        hints = []
        for i, raw_hint in enumerate(b.get("hints", [])):
            field = f"{where}.hints[{i}]"
            h = self.fields(raw_hint, _HINT, ("value", "says"), field + ".")
            value = self.number(h["value"], field + ".value", unknown)
            hints.append((value, self.text(h["says"], field + ".says")))
        generic = self.text(b.get("generic", ""), f"{where}.generic")
        extra = {
            "unit": self.text(b.get("unit", ""), f"{where}.unit"),
            "hints": tuple(hints),
            "placeholder": self.text(b.get("placeholder", ""), f"{where}.placeholder"),
            "labels": tuple(b.get("labels", ())),
        }
        if kind == "number":
            return NumberBox(b["name"], label, target, symbols, generic=generic, **extra)
        # An expression box: its symbols are Polys in n, and the named checker says what a
        # wrong value means (generic when n's power is right); it is a named mistake.
        poly_symbols = {"n": Poly.n(), **{k: Poly.const(v) for k, v in symbols.items()}}
        checker = self.named(b.get("explain", "power_of_n"), f"{where}.explain")
        explain = partial(checker, target, generic)
        return ExpressionBox(b["name"], label, target, poly_symbols, explain=explain, **extra)

    def rubric(self, q: dict) -> Rubric:
        points = []
        for i, raw in enumerate(q["points"]):
            p = self.fields(raw, _POINT, ("name", "text"), f"points[{i}].")
            points.append(RubricPoint(p["name"], self.text(p["text"], f"points[{i}].text")))
        wrong = []
        for i, raw in enumerate(q["misconceptions"]):
            m = self.fields(raw, _MISCONCEPTION, ("claim", "says"), f"misconceptions[{i}].")
            wrong.append((m["claim"], self.text(m["says"], f"misconceptions[{i}].says")))
        model_answer = self.text(q["model_answer"], "model_answer")
        return Rubric(tuple(points), tuple(wrong), model_answer)


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def read_file(path: Path, with_counted: bool = False) -> list:
    """One file's questions, checked whole (``QuestionDataError`` names what is wrong); with
    ``with_counted``, (question, whether the quiz counts it) pairs."""
    reader = _Reader(Path(path))
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise reader.fail("（TOML 写法）", f"读不了：{exc}") from None
    reader.fields(data, {"values": dict, "questions": list}, ("questions",), "")
    reader.read_values(data.get("values", {}), "values")
    out = [reader.question(raw) for raw in data["questions"]]
    counted = [raw.get("counted", True) for raw in data["questions"]]
    ids = [q.id for q in out]
    for qid in ids:
        if ids.count(qid) > 1:
            reader.qid = qid
            raise reader.fail("id", "在这个文件里出现了不止一次。")
    if with_counted:
        return list(zip(out, counted))
    return out


@cache
def _bank() -> dict[str, dict[str, Question]]:
    """{"core": …, "lab": …, "apart": …}, each {id: Question} in file order ("apart": one
    with ``counted = false``, §8's interview); an id in two files is refused."""
    bank = {"core": {}, "lab": {}, "apart": {}}
    seen: dict[str, Path] = {}
    for path in sorted(SECTIONS.glob("*.toml")):
        part = "lab" if path.name.startswith("lab_") else "core"
        for q, counted in read_file(path, with_counted=True):
            if q.id in seen:
                problem = f"已经在 {seen[q.id].name} 里用过了：每道题的编号只能有一个。"
                raise QuestionDataError(path, q.id, "id", problem)
            seen[q.id] = path
            bank[part if counted else "apart"][q.id] = q
    return bank


def read_again() -> None:
    """Forget the questions read: the next question reads the files again (after an edit)."""
    _bank.cache_clear()


def question(question_id: str) -> Question:
    """The question with this id (a core's or a lab's)."""
    bank = _bank()
    everyone = {**bank["core"], **bank["lab"], **bank["apart"]}
    found = everyone.get(question_id)
    if found is None:
        known = ", ".join(everyone)
        raise KeyError(f"没有编号为 {question_id!r} 的题目；可用的编号是 {known}。")
    return found


def question_ids() -> tuple[str, ...]:
    """The core lesson's question ids in section order (what progress counts; no lab's)."""
    return tuple(_bank()["core"])


def lab_ids() -> tuple[str, ...]:
    """The optional labs' question ids: found by id, never counted as the core's."""
    return tuple(_bank()["lab"])


def apart_ids() -> tuple[str, ...]:
    """The ids of questions outside the quiz's count (``counted = false``: §8's interview)."""
    return tuple(_bank()["apart"])
