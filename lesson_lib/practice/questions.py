"""The question bank, read from data: one TOML file per section beside its code,
``lesson_lib/sections/sNN_*.toml`` (the core lesson's, in section order) and ``lab_*.toml``
(the optional labs'). Every file is checked whole when the bank is first read: a mistake
raises ``QuestionDataError`` naming the file, the question and the field. The format (its
fields, the allowed lesson functions, the named checkers) is README's 「改编这节课」."""

import inspect
import math
import re
import string
import sys
from fractions import Fraction
from functools import cache, partial
from pathlib import Path

from lesson_lib import attention, costs, head_stats, paper
from lesson_lib.checks import LessonInputError
from lesson_lib.practice import checkers
from lesson_lib.practice.checkers import Poly
from lesson_lib.practice.feedback import Question, Rubric, RubricPoint

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
        where += f"字段「{field}」" if field else ""  # "" for the file's TOML itself
        guide = "（格式见 README「改编这节课」）"
        super().__init__(f"题目文件 {self.file.name}：{where}{problem}{guide}")


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
        attention.head_width(d_model, h)
    except LessonInputError as exc:
        return str(exc)
    return ""


# name in a file -> the function; its arguments are the ones a file may write (each spelled out,
# so that a lesson function's own signature or decorator never widens the format)
FUNCTIONS = {
    "paper.base_d_model": lambda: paper.BASE_D_MODEL,
    "paper.base_heads": lambda: paper.BASE_HEADS,
    "paper.table3": _table3,
    "attention.head_width": lambda d_model, h: attention.head_width(d_model, h),
    "attention.refusal": _refusal,
    "costs.count": lambda n, d_model, h, part: getattr(costs.count(n, d_model, h), part),
    "costs.parameters": lambda d_model, h: costs.parameters(d_model, h),
    "costs.kv_cache": (
        lambda d_model, h, groups: costs.kv_sharing(d_model, h, groups).cache_per_token
    ),
    "head_stats.winner_weight": lambda keys, length: head_stats.crowded_keys((keys,), length)[keys],
    "floor": lambda of: math.floor(of),
}
# arguments taken as written (a table's row or column, a part of the count); any other argument
# is a number, a value's name or an expression of them
WORDS = ("row", "column", "part")

# ------------------------------------------------------------------ the format: field -> type
TEXT = "text"  # a str whose {placeholders} are filled from the values; "" when left out
_FILE = {"values": dict, "questions": list}
_QUESTION = {
    "id": str, "kind": str, "section": str, "prompt": TEXT, "explanation": TEXT,
    "praise": TEXT, "answer": str, "options": list, "boxes": list, "values": dict,
    "whole": str, "spread": bool, "right_answers": list, "wrong_answers": list,
    "placeholder": TEXT, "picture": dict, "points": list, "misconceptions": list,
    "model_answer": TEXT, "counted": bool,
}  # fmt: skip
_ALWAYS = ("id", "kind", "section", "prompt")
_TESTS = ("right_answers", "wrong_answers")  # every question but a self-explanation has its own
_NEEDS = {  # by kind, the fields a question must have
    "single": (*_ALWAYS, "explanation", "answer", "options", *_TESTS),
    "multi": (*_ALWAYS, "explanation", "answer", "options", *_TESTS),
    "form": (*_ALWAYS, "explanation", "boxes", *_TESTS),
    "self": (*_ALWAYS, "points", "misconceptions", "model_answer"),
}
_OPTION = {"key": str, "label": TEXT, "why": TEXT}
_BOX = {
    "name": str, "kind": str, "label": TEXT, "target": object, "symbols": dict,
    "labels": list, "unit": TEXT, "hints": list, "generic": TEXT, "placeholder": TEXT,
    "explain": str, "options": list, "answer": str, "per": list,
}  # fmt: skip
_BOX_NEEDS = {
    "number": ("name", "label", "target"),
    "expression": ("name", "label", "target"),
    "choice": ("name", "label", "options", "answer"),
}
_HINT = {"value": object, "says": TEXT}
_POINT = {"name": str, "text": TEXT}
_MISCONCEPTION = {"claim": TEXT, "says": TEXT}
_TYPE_NAMES = {str: "文字", list: "列表", dict: "表", bool: "true 或 false"}


@cache
def _exact(value) -> Poly:
    """The exact number a value prints as; cached, as every expression in a file reads them all."""
    return Poly.const(Fraction(str(value)))


class _Reader:
    """Reads one file's questions; a problem raises ``QuestionDataError`` naming its place."""

    def __init__(self, path: Path):
        self.path = path
        self.qid = ""
        self.values: dict = {}

    def fail(self, field: str, problem: str) -> QuestionDataError:
        return QuestionDataError(self.path, self.qid, field, problem)

    # ---- tables, texts, numbers
    def table(self, raw, spec: dict, needs, where: str, what: str) -> dict:
        """``raw`` with only ``spec``'s fields, each of its type, and all of ``needs`` (what
        ``what``, 「single 题」, must have); a copy whose texts are filled."""
        if not isinstance(raw, dict):
            raise self.fail(where.rstrip("."), "应当是一个表（[[…]] 或 { … }）。")
        for name, value in raw.items():
            if name not in spec:
                raise self.fail(where + name, f"不认识：可用的字段是 {'、'.join(spec)}。")
            want = str if spec[name] == TEXT else spec[name]
            if want is not object and not isinstance(value, want):
                raise self.fail(where + name, f"应当是{_TYPE_NAMES[want]}。")
        if missing := [name for name in needs if name not in raw]:  # the first, said with its kind
            raise self.fail(where + missing[0], f"没有写：{what}必须有 {missing[0]}，请补上。")
        texts = {name: self.text(raw.get(name, ""), where + name)
                 for name, want in spec.items() if want == TEXT}
        return {**raw, **texts}

    def rows(self, items: list, spec: dict, needs, field: str) -> list[dict]:
        """A list of tables, such as a question's options."""
        what = f"{field} 里的每一项"
        return [self.table(raw, spec, needs, f"{field}[{i}].", what) for i, raw in enumerate(items)]

    def text(self, template: str, field: str) -> str:
        """A text with {name} or {name:format} placeholders, filled from the values."""
        try:
            return template.format_map(self.values)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError):  # said in English
            raise self.fail(field, self.unfilled(template)) from None

    def unfilled(self, template: str) -> str:
        """Why ``template`` does not fill, quoting as written an unpaired brace (「} 维」,
        「{d_model」) or the first placeholder that does not fill (「{dk}」, 「{d_k:.2x}」)."""
        name = next(iter(self.values), "名字")
        try:  # a field named None is the plain text after the last placeholder
            fields = [f for f in string.Formatter().parse(template) if f[1] is not None]
        except ValueError:  # an unpaired brace: quoted from where it stands
            closed = re.sub(r"\{\{|\}\}|\{[^{}]*\}", lambda m: " " * len(m[0]), template)
            at = re.search(r"[{}]", closed)
            quoted = f"「{template[at.start():at.start() + 12]}」" if at else ""
            return (f"里的花括号没有配对{quoted}：花括号本身写成 {{{{ 和 }}}}，"
                    f"占位符写成 {{{name}}}。")
        known = "、".join(self.values) or "（这个文件没有 values）"
        bad = ""
        for _, written, spec, _ in fields:
            try:
                format(self.values[written], spec)
            except (KeyError, ValueError, TypeError):
                bad = f"「{{{written}{':' if spec else ''}{spec}}}」"
                break
        return (f"里的占位符{bad}写错了：写成 {{{name}}}、{{{name}:,}}（千分位）或 "
                f"{{{name}:.2f}}（两位小数），名字只能用 values 里的 {known}；"
                "花括号本身写成 {{ 和 }}。")

    def number(self, value, field: str, unknown: dict | None = None):
        """A number, a value's name or an expression of them (``d_model / h``); with ``unknown``
        ({"n": Poly.n()}) an expression in n, as a Poly."""
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self.fail(field, "应当是一个数、一个 values 里的名字或它们的算式。")
        if not isinstance(value, str):
            return value
        names = {name: _exact(v)
                 for name, v in self.values.items()
                 if isinstance(v, int | float) and not isinstance(v, bool)}
        names.update(unknown or {})
        try:
            poly = checkers.parse_expression(value.lower(), names)
        except checkers.ExpressionError:
            known = "、".join(names) or "（还没有）"
            problem = (f"读不懂「{value}」：能写数、+ - * / ^、括号和这些名字：{known}；"
                       "课程函数的结果在 values 里写成 { call = \"函数名\", 参数 = … }。")
            raise self.fail(field, problem) from None
        if unknown is not None:
            return poly
        return int(poly.constant) if poly.constant.denominator == 1 else float(poly.constant)

    # ---- values
    def read_values(self, table, where: str) -> None:
        """Each value in order: a number, an expression of earlier ones, or a function's result."""
        if not isinstance(table, dict):
            raise self.fail(where, f"应当是{_TYPE_NAMES[dict]}。")
        for name, spec in table.items():
            field = f"{where}.{name}"
            if not name.isidentifier() or name in checkers.ALIASES:
                problem = "名字只能用字母、数字和下划线，也不能是 dk、heads 这类别名。"
                raise self.fail(field, problem)
            read = self.call if isinstance(spec, dict) else self.number  # a table is a call
            self.values[name] = read(spec, field)

    def call(self, spec: dict, field: str):
        name = str(spec.get("call"))  # a list written as the name: no such function
        if name not in FUNCTIONS:
            known = "、".join(FUNCTIONS)
            raise self.fail(f"{field}.call", f"「{name}」不是可用的函数：可用的是 {known}。")
        params = inspect.signature(FUNCTIONS[name]).parameters
        args = {arg: value if arg in WORDS else self.number(value, f"{field}.{arg}")
                for arg, value in spec.items() if arg != "call"}
        unknown = [arg for arg in args if arg not in params]
        missing = [arg for arg, p in params.items() if p.default is p.empty and arg not in args]
        if unknown or missing:  # the first argument it does not have, else the first left out
            known = "、".join(a if p.default is p.empty else f"{a}（可省）"
                             for a, p in params.items())
            said = f"不是 {name} 的参数" if unknown else f"没有写：{name} 必须有这个参数"
            problem = f"{said}（它的参数：{known}）。"
            if not params:  # 「它的参数：无」 would not say what to do; h = 8 as written
                problem = f"多余：{name} 不带参数，请删掉 {unknown[0]} = {spec[unknown[0]]!r}。"
            raise self.fail(f"{field}.{(unknown + missing)[0]}", problem)
        try:
            return FUNCTIONS[name](**args)
        except Exception as exc:  # a wrong row, an h the kernel refuses: said with the field
            raise self.fail(field, f"算不出来：{name} 说「{str(exc).rstrip('。')}」。") from None

    # ---- a question
    def question(self, raw) -> Question:
        if not isinstance(raw, dict):
            raw = {}  # then its kind is missing: said first
        self.qid = str(raw.get("id", ""))
        kind = raw.get("kind")
        if str(kind) not in _NEEDS:  # a list or table written as the kind: no such kind
            raise self.fail("kind", f"应当是 {'、'.join(_NEEDS)} 之一。")
        file_values = dict(self.values)
        try:
            self.read_values(raw.get("values", {}), "values")
            return self.build(self.table(raw, _QUESTION, _NEEDS[kind], "", f"{kind} 题"))
        finally:
            self.values = file_values  # a question's own values are its own

    def build(self, q: dict) -> Question:
        key = {"self": self.rubric, "form": self.form}.get(q["kind"], self.choices)(q)
        # what a self-explanation shows after the first answer: its rubric and model answer
        shown = key.text() + "\n" + key.model_answer if q["kind"] == "self" else q["explanation"]
        return Question(q["id"], q["section"], q["kind"], q["prompt"], shown, key=key,
                        placeholder=q["placeholder"], values=dict(self.values),
                        right_answers=self.answers(q.get("right_answers", []), "right_answers"),
                        wrong_answers=self.answers(q.get("wrong_answers", []), "wrong_answers"),
                        picture=q.get("picture", {}), counted=q.get("counted", True))

    def answers(self, items: list, field: str) -> tuple:
        """Test answers: one text, or one text per box."""
        out = []
        for i, item in enumerate(items):
            texts = [item] if isinstance(item, str) else item
            if not isinstance(texts, list) or not all(isinstance(a, str) for a in texts):
                raise self.fail(f"{field}[{i}]", "应当是一段文字，或每个框一段文字的列表。")
            filled = [self.text(a, f"{field}[{i}]") for a in texts]
            out.append(filled if isinstance(item, list) else filled[0])
        return tuple(out)

    def options(self, items: list, field: str) -> tuple[tuple[str, str, str], ...]:
        rows = self.rows(items, _OPTION, ("key", "label"), field)
        if len({o["key"] for o in rows}) < len(rows):
            raise self.fail(field, "里有重复的 key：每个选项一个不同的 key。")
        for i, o in enumerate(rows):  # as shown: {d_k_lo} and {d_model} are both 512 at h = 1
            if same := [p["key"] for p in rows[:i] if p["label"].strip() == o["label"].strip()]:
                raise self.fail(f"{field}[{i}].label", f"和选项 {same[0]} 的一样，都显示成"
                                f"「{o['label']}」：学生分不清 {same[0]} 和 {o['key']}，请改一个。")
        return tuple((o["key"], o["label"], o["why"]) for o in rows)

    def choices(self, q: dict) -> checkers.ChoiceKey:
        options = self.options(q["options"], "options")
        keys = [key for key, _, _ in options]
        if any(len(key) != 1 for key in keys):  # a learner may type 「AC」: one character a key
            raise self.fail("options", "里的每个 key 应当是一个字符（A、B、C……）。")
        answer = frozenset(q["answer"])
        if unknown := sorted(answer - set(keys)):
            raise self.fail("answer", f"里的「{unknown[0]}」不是选项的 key（{'、'.join(keys)}）。")
        if q["kind"] == "single" and len(answer) != 1:
            raise self.fail("answer", f"应当只写一个 key（{'、'.join(keys)} 之一）：这是单选题。")
        if unexplained := [key for key, _, why in options if key not in answer and not why]:
            problem = f"里错的选项 {unexplained[0]} 缺少 why：选了它的学生要读到错在哪里。"
            raise self.fail("options", problem)
        return checkers.ChoiceKey(options, answer, q["praise"])

    def form(self, q: dict) -> checkers.FormKey:
        boxes = tuple(self.box(raw, f"boxes[{i}]") for i, raw in enumerate(q["boxes"]))
        if len({b.name for b in boxes}) < len(boxes):
            raise self.fail("boxes", "里有重复的 name：每个框一个不同的 name。")
        whole = None
        if "whole" in q:  # a checker of the whole form, told the boxes' targets in box order
            whole = partial(self.named(q["whole"], "whole"), tuple(b.target for b in boxes))
        return checkers.FormKey(boxes, q["praise"], whole=whole, spread=q.get("spread", False))

    def named(self, name: str, field: str):
        if name not in checkers.NAMED:
            known = "、".join(checkers.NAMED)
            raise self.fail(field, f"「{name}」不是已有的检查器：可用的是 {known}。")
        return checkers.NAMED[name]

    def box(self, raw, where: str):
        kind = raw.get("kind", "number") if isinstance(raw, dict) else None
        if str(kind) not in _BOX_NEEDS:
            raise self.fail(f"{where}.kind", f"应当是 {'、'.join(_BOX_NEEDS)} 之一。")
        what = f"{kind} 框" if "kind" in raw else "数字框（不写 kind 时）"  # what the author wrote
        b = self.table(raw, _BOX, _BOX_NEEDS[kind], f"{where}.", what)
        if kind == "choice":
            options = self.options(b["options"], f"{where}.options")
            if b["answer"] not in {key for key, _, _ in options}:
                raise self.fail(f"{where}.answer", "应当是一个选项的 key。")
            return checkers.ChoiceBox(b["name"], b["label"], options, b["answer"])
        unknown = {"n": Poly.n()} if kind == "expression" else None
        written = b.get("symbols", {})
        symbols = {k: self.number(v, f"{where}.symbols.{k}") for k, v in written.items()}
        target = self.number(b["target"], f"{where}.target", unknown)
        rows = self.rows(b.get("hints", []), _HINT, ("value", "says"), f"{where}.hints")
        hints = tuple((self.number(h["value"], f"{where}.hints[{i}].value", unknown), h["says"])
                      for i, h in enumerate(rows))
        if unknown := [p for p in b.get("per", ()) if p not in checkers.PER_WORDS.values()]:
            raise self.fail(f"{where}.per", f"里的「{unknown[0]}」不认识：一个值数的是每个头、"
                            "每个词元或每层时写 \"head\"、\"token\" 或 \"layer\"；合计不写 per。")
        extra = dict(unit=b["unit"], hints=hints, placeholder=b["placeholder"],
                     labels=tuple(b.get("labels", ())), per=tuple(b.get("per", ())))
        if kind == "number":
            extra["generic"] = b["generic"]
            return checkers.NumberBox(b["name"], b["label"], target, symbols, **extra)
        # An expression box: its symbols are Polys in n, and the named checker says what a
        # wrong value means (generic when n's power is right); it is a named mistake.
        poly_symbols = {"n": Poly.n(), **{k: Poly.const(v) for k, v in symbols.items()}}
        checker = self.named(b.get("explain", "power_of_n"), f"{where}.explain")
        extra["explain"] = partial(checker, target, b["generic"])
        return checkers.ExpressionBox(b["name"], b["label"], target, poly_symbols, **extra)

    def rubric(self, q: dict) -> Rubric:
        points = self.rows(q["points"], _POINT, ("name", "text"), "points")
        wrong = self.rows(q["misconceptions"], _MISCONCEPTION, ("claim", "says"), "misconceptions")
        misconceptions = tuple((m["claim"], m["says"]) for m in wrong)
        return Rubric(tuple(RubricPoint(**p) for p in points), misconceptions, q["model_answer"])


def read_file(path: Path, bank: dict | None = None) -> list[Question]:
    """One file's questions, checked whole (``QuestionDataError`` names what is wrong). ``bank``
    ({id: (file, question)} of the files read before) refuses an id used again, and gains them."""
    path = Path(path)
    bank = {} if bank is None else bank
    reader = _Reader(path)
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its English said in Chinese, at its line and column
        place = re.search(r"at line (\d+), column (\d+)", str(exc))
        line = text.split("\n")[int(place[1]) - 1].strip()[:60] if place else ""  # quoted as typed
        where = f"第 {place[1]} 行「{line}」第 {place[2]} 列的" if place else "文件里"
        says = ("写法不对：每项写成 名字 = 值，文字用英文双引号括起来，数字直接写，"
                "同一个表里名字不重复，表头写成 [[questions]] 或 [values]，引号和括号成对。")
        raise reader.fail("", where + says) from None
    reader.table(data, _FILE, ("questions",), "", "题目文件")
    reader.read_values(data.get("values", {}), "values")
    for raw in data["questions"]:
        q = reader.question(raw)
        if q.id in bank:
            problem = f"已经被 {bank[q.id][0].name} 里的一道题用了：一个编号只能给一道题"
            raise reader.fail("id", problem + "，请换一个。")
        bank[q.id] = (path, q)
    return [q for file, q in bank.values() if file == path]


@cache
def _bank() -> dict[str, tuple[Path, Question]]:
    """{id: (its file, the question)} of every file, in file order."""
    bank = {}
    for path in sorted(SECTIONS.glob("*.toml")):
        read_file(path, bank)
    return bank


def question(question_id: str) -> Question:
    """The question with this id (a core's, a lab's, or one the quiz does not count)."""
    found = _bank().get(question_id)
    if found is None:
        known = ", ".join(_bank())
        raise KeyError(f"没有编号为 {question_id!r} 的题目；可用的编号是 {known}。")
    return found[1]


def asked_in(question_id: str) -> str:
    """Where the lesson asks a question: 「第 N 节」 by its file (sNN_…), else its section field."""
    path, q = _bank()[question_id]
    number = path.name[1:3]
    return f"第 {int(number)} 节" if number.isdigit() else q.section


def question_ids() -> tuple[str, ...]:
    """The core lesson's question ids in section order (what progress counts; no lab's)."""
    others = {*lab_ids(), *apart_ids()}
    return tuple(i for i in _bank() if i not in others)


def lab_ids() -> tuple[str, ...]:
    """The optional labs' question ids: found by id, never counted as the core's."""
    bank = _bank().items()
    return tuple(i for i, (path, q) in bank if q.counted and path.name.startswith("lab_"))


def apart_ids() -> tuple[str, ...]:
    """The ids of questions outside the quiz's count (``counted = false``: §8's interview)."""
    return tuple(i for i, (_, q) in _bank().items() if not q.counted)
