"""Find the tests that hold a Chinese phrase instead of a behaviour (issue 36).

    python scripts/phrase_scan.py [tests] [--limit 15]

An AST scan of every ``*.py`` under the folder. A *finding* is an operand that is Chinese text in:

- an ``assert`` statement's test (``assert text.startswith("……")``), a comparison, an ``in`` / ``not in``;
- a regex call (``re.search/match/fullmatch/findall/finditer``, a compiled pattern's methods,
  ``pytest.raises(match=…)``);
- a call, by its bare name, to a test helper (a module-level function, or the nested function a fixture
  hands out) that puts one of its parameters into one of the above (``assert_chinese_message``,
  ``raises_chinese``, any test's own helper), at the call site.

An operand is Chinese text when it is a string literal with a Chinese character (CJK U+4E00–U+9FFF or
Chinese punctuation), an f-string, ``+``/``%`` or ``.format`` with such a part, a tuple/list/set of them,
or a name bound to one: a local or module variable, a ``for`` target over them, a parametrize value,
a default, a fixture or helper function that returns one. A call's arguments are the code's *input*,
so ``check("八个头") == "wrong"`` is not a finding.

Two exceptions, both printed:
- ``# phrase kept: <reason>`` on the finding's line (or the line above it) keeps it: the words are
  the behaviour. Kept findings still count toward the limit.
- an *echo*: a name bound to Chinese text that the same function also passes into the code under
  test (``typed = "八个"; check(typed); assert typed in message``) asserts that the learner's own
  input comes back, which is behaviour; echoes are listed but not counted.

Exit status 1 when the count exceeds the limit.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

CHINESE = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff01-\uff5e「」『』【】、，。：；！？（）—…]")
KEEP = re.compile(r"#\s*phrase kept:\s*(.+)")
REGEX_FUNCS = {"search", "match", "fullmatch", "findall", "finditer"}
NOT_INPUT = {"str", "repr", "len", "sorted", "set", "list", "tuple", "dict", "print", "escape", "any",
             "all", "isinstance", "format", "join", "compile", "split", "strip", "replace", "count",
             "startswith", "endswith", "find", "index", "append", "add", "extend", "zip", "enumerate"}
TEXT_METHODS = {"startswith", "endswith", "count", "find", "index", "rfind", "rindex"}


def chinese(s) -> bool:
    return isinstance(s, str) and bool(CHINESE.search(s))


@dataclass
class Finding:
    path: str
    line: int
    function: str
    literal: str
    kept: str = ""
    echo: bool = False


class Bindings:
    """Which names hold Chinese text: per function (locals), per module, and across all tests."""

    def __init__(self):
        self.globals: set[str] = set()        # module-level names in any test file
        self.returning: set[str] = set()      # functions (helpers, fixtures) that return Chinese text
        self.asserting: dict[str, set] = {}   # helper name -> positions/names of parameters it asserts on


_SCOPES: dict[ast.AST, list[ast.AST]] = {}


def scope_names(func) -> list[ast.AST]:
    """The function's own statements, not nested functions' (they are scanned on their own).
    Remembered per node: the scan asks for the same function's nodes many times (a quadratic walk)."""
    if func not in _SCOPES:
        _SCOPES[func] = _own_nodes(func)
    return _SCOPES[func]


_KINDS: dict[tuple, list[ast.AST]] = {}
BINDING = (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.comprehension)
TESTING = (ast.Compare, ast.Assert, ast.Call)


def scope_nodes_of(func, kinds: tuple) -> list[ast.AST]:
    """``scope_names(func)``'s nodes of those kinds, in order; remembered, as resolve() reads them every round."""
    key = (func, kinds)
    if key not in _KINDS:
        _KINDS[key] = [node for node in scope_names(func) if isinstance(node, kinds)]
    return _KINDS[key]


def _own_nodes(func) -> list[ast.AST]:
    out = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


STRING_CALLS = {"str", "repr", "sorted", "list", "tuple", "set", "escape", "compile"}
STRING_METHODS = {"format", "join", "strip", "lstrip", "rstrip", "lower", "upper", "casefold", "replace",
                  "split", "escape", "compile"}


def text_names(node) -> set[str]:
    """The names whose text an expression carries on (x, f"{x}", x + "…", str(x), x[0], re.escape(x)),
    not names it only uses (page.locator(x).count() is about the page, not the text x)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.FormattedValue):
        return text_names(node.value)
    if isinstance(node, (ast.JoinedStr, ast.Tuple, ast.List, ast.Set)):
        parts = node.values if isinstance(node, ast.JoinedStr) else node.elts
        return set().union(*(text_names(v) for v in parts))
    if isinstance(node, ast.Dict):
        return set().union(*(text_names(v) for v in node.values))
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod, ast.Mult)):
        return text_names(node.left) | text_names(node.right)
    if isinstance(node, (ast.Subscript, ast.Starred)):
        return text_names(node.value)
    if isinstance(node, ast.IfExp):
        return text_names(node.body) | text_names(node.orelse)
    if isinstance(node, ast.Call):
        f = node.func
        args = set().union(*(text_names(a) for a in node.args))
        if isinstance(f, ast.Name) and f.id in STRING_CALLS:
            return args
        if isinstance(f, ast.Attribute) and f.attr in STRING_METHODS:
            return text_names(f.value) | args
    return set()


def names_inside(node) -> set[str]:
    """A bare name, or the names inside a literal list, tuple, set or dict (not inside a call)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Starred):
        return names_inside(node.value)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return set().union(*(names_inside(e) for e in node.elts))
    if isinstance(node, ast.Dict):
        return set().union(*(names_inside(v) for v in node.values))
    if isinstance(node, ast.JoinedStr):                  # md(f"## {title}"): title went in
        return text_names(node)
    return set()


def imported_names(tree, test_modules: set[str]) -> set[str]:
    """Names a file imports from anywhere but the tests themselves: not test text."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in test_modules:
            out |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


class Scanner:
    def __init__(self, files: list[Path], root: Path):
        self.files = files
        self.root = root
        self.trees = {f: ast.parse(f.read_text(encoding="utf-8"), str(f)) for f in files}
        self.lines = {f: f.read_text(encoding="utf-8").splitlines() for f in files}
        self.b = Bindings()
        self.module_names: dict[Path, set[str]] = {}
        self.local_names: dict[ast.AST, set[str]] = {}
        self.local_assigned: dict[ast.AST, set[str]] = {}
        self._file_inputs: dict = {}
        self._functions: list | None = None
        self._inputs: dict = {}
        self._taint: dict = {}
        self.exclude: set[str] = set()  # names taken as the learner's own input (an echo)
        self.row_columns: dict[tuple, set[int]] = {}  # a loop variable over a table's rows: its text columns
        self.scope = None  # the function (or module) whose statements are being read
        self.path = None  # and its file
        stems = {path.stem for path in self.trees}
        self.module_assigned = {path: {n.id for n in scope_names(tree)
                                       if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                                | imported_names(tree, stems)
                                for path, tree in self.trees.items()}
        # module-level assignments by name: a parametrize table's rows
        self.tables: dict[str, list] = {}
        for path, tree in self.trees.items():
            for n in tree.body:
                if isinstance(n, ast.Assign):
                    for t in n.targets:
                        if isinstance(t, ast.Name):
                            self.tables.setdefault(t.id, []).append((path, n.value))

    # ---- what is Chinese text ---------------------------------------------------------
    def is_text(self, node, names: set[str], local: set[str]) -> bool:
        if node is None:
            return False
        if isinstance(node, ast.Constant):
            return chinese(node.value)
        if isinstance(node, ast.JoinedStr):
            return any(self.is_text(v, names, local) for v in node.values
                       if isinstance(v, ast.Constant))
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, (ast.Add, ast.Mod, ast.Mult)):
                return False                       # base / "我的 课程" is a path, not text
            return self.is_text(node.left, names, local) or self.is_text(node.right, names, local)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(self.is_text(e, names, local) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.is_text(v, names, local) for v in node.values)
        if isinstance(node, ast.Name):
            if node.id in self.exclude:
                return False
            if node.id in local:
                return node.id in names
            if node.id in names:
                return True
            if self.path is not None and node.id in self.module_assigned[self.path]:
                return node.id in self.module_names.get(self.path, set())   # this module's own name
            return node.id in self.b.globals                               # imported from another test file
        if isinstance(node, ast.Subscript):
            columns = self.row_columns.get((self.scope, getattr(node.value, "id", None)))
            if columns is not None:
                index = node.slice
                if isinstance(index, ast.Constant) and isinstance(index.value, int):
                    return index.value in columns
                return bool(columns)
            return self.is_text(node.value, names, local)
        if isinstance(node, ast.Starred):
            return self.is_text(node.value, names, local)
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                if f.id in self.b.returning:
                    return True
                if f.id in {"str", "tuple", "list", "set", "frozenset", "sorted"} and node.args:
                    return self.is_text(node.args[0], names, local)
                return False
            if isinstance(f, ast.Attribute):
                if f.attr == "compile" and isinstance(f.value, ast.Name) and f.value.id == "re":
                    return bool(node.args) and self.is_text(node.args[0], names, local)
                if f.attr in {"format", "strip", "lower", "replace", "join", "escape", "split"}:
                    return self.is_text(f.value, names, local) or (
                        f.attr == "escape" and bool(node.args)
                        and self.is_text(node.args[0], names, local))
                if f.attr in self.b.returning:
                    return True
            return False
        if isinstance(node, ast.IfExp):
            return self.is_text(node.body, names, local) or self.is_text(node.orelse, names, local)
        return False

    def text_of(self, node) -> str:
        """The Chinese literal(s) the operand holds or names, for the report."""
        parts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and chinese(n.value)]
        if parts:
            return " | ".join(parts)
        return ast.unparse(node)

    # ---- bindings -----------------------------------------------------------------------
    def bind_targets(self, target, value, names, local, iterating=False) -> bool:
        """Mark the names in ``target`` if ``value`` (or its items when iterating) is Chinese text."""
        changed = False
        rows = self.rows_of(value) if iterating else None
        if rows is not None and all(isinstance(r, (ast.Tuple, ast.List)) for r in rows):
            if isinstance(target, ast.Name):     # a row: only its Chinese columns are text
                columns = {i for r in rows for i, e in enumerate(r.elts) if self.is_text(e, names, local)}
                key = (self.scope, target.id)
                if self.row_columns.get(key) != columns:
                    self.row_columns[key] = columns
                    changed = True
                return changed
            if isinstance(target, (ast.Tuple, ast.List)):
                for r in rows:
                    for t, v in zip(target.elts, r.elts):
                        changed |= self.bind_targets(t, v, names, local)
                return changed
        if isinstance(target, ast.Name):
            if self.is_text(value, names, local) and target.id not in names:
                names.add(target.id)
                changed = True
        elif isinstance(target, (ast.Tuple, ast.List)):
            rows = []
            if iterating and isinstance(value, (ast.Tuple, ast.List, ast.Set)):
                rows = [e for e in value.elts if isinstance(e, (ast.Tuple, ast.List))]
            if not iterating and isinstance(value, (ast.Tuple, ast.List)):
                rows = [value]
            for row in rows:
                for t, v in zip(target.elts, row.elts):
                    changed |= self.bind_targets(t, v, names, local)
            if not rows and self.is_text(value, names, local):
                for t in target.elts:
                    if isinstance(t, ast.Name) and t.id not in names:
                        names.add(t.id)
                        changed = True
        return changed

    def bind_scope(self, body_nodes, names, local) -> bool:
        changed = False
        for node in body_nodes:
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    changed |= self.bind_targets(t, node.value, names, local)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                changed |= self.bind_targets(node.target, node.value, names, local)
            elif isinstance(node, (ast.For, ast.comprehension)):
                changed |= self.bind_targets(node.target, node.iter, names, local, iterating=True)
        return changed

    def function_params(self, func, names: set[str]) -> None:
        """Parameters bound to Chinese text: defaults, parametrize values, fixtures returning it."""
        args = func.args.args + func.args.kwonlyargs
        defaults = [None] * (len(func.args.args) - len(func.args.defaults)) + func.args.defaults
        defaults += func.args.kw_defaults
        for a, d in zip(args, defaults):
            if d is not None and self.is_text(d, set(), set()):
                names.add(a.arg)
            if a.arg in self.b.returning:
                names.add(a.arg)
        for dec in func.decorator_list:
            if not (isinstance(dec, ast.Call) and ast.unparse(dec.func).endswith("parametrize")):
                continue
            if len(dec.args) < 2:
                continue
            first = dec.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                argnames = [s.strip() for s in first.value.split(",") if s.strip()]
            elif isinstance(first, (ast.Tuple, ast.List)):
                argnames = [e.value for e in first.elts if isinstance(e, ast.Constant)]
            else:
                continue
            rows = self.rows_of(dec.args[1])
            if rows is None:
                if self.is_text(dec.args[1], set(), set()):
                    names.update(argnames)
                continue
            for row in rows:
                if isinstance(row, ast.Call) and ast.unparse(row.func).endswith("param"):
                    row = ast.Tuple(elts=row.args) if len(argnames) > 1 else row.args[0]
                if len(argnames) == 1:
                    if self.is_text(row, set(), set()):
                        names.add(argnames[0])
                elif isinstance(row, (ast.Tuple, ast.List)):
                    for n, v in zip(argnames, row.elts):
                        if self.is_text(v, set(), set()):
                            names.add(n)

    def rows_of(self, node, depth=0):
        """A parametrize table's rows: a literal list, a module constant, or their sum; None if unknown."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return list(node.elts)
        if isinstance(node, ast.Name) and depth < 10:
            candidates = self.tables.get(node.id, [])  # this file's own first, then an imported one
            own = [value for path, value in candidates if path == self.path]
            if not own and node.id in self.module_assigned.get(self.path, ()):
                return None                             # built here some other way: unknown rows
            for value in own or [value for _, value in candidates]:
                rows = self.rows_of(value, depth + 1)
                if rows is not None:
                    return rows
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.rows_of(node.left, depth + 1), self.rows_of(node.right, depth + 1)
            return None if left is None or right is None else left + right
        return None

    def functions(self):
        """Every (file, function) pair, walked once: the scan loops over them many times."""
        if self._functions is None:
            self._functions = [(path, node) for path, tree in self.trees.items()
                               for node in ast.walk(tree)
                               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return self._functions

    def assigned(self, func) -> set[str]:
        if func not in self.local_assigned:
            out = {a.arg for a in func.args.args + func.args.kwonlyargs}
            for n in scope_names(func):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.add(n.id)
            self.local_assigned[func] = out
        return self.local_assigned[func]

    def signature(self, func) -> tuple[list[str], str]:
        return [a.arg for a in func.args.args], func.args.vararg.arg if func.args.vararg else ""

    def tainted(self, func) -> dict[str, set[str]]:
        """Local names that carry a parameter's value (``for f in fragments``), by parameter. It reads only the
        function's own tree: worked out once per function, not once per round of resolve()."""
        if func not in self._taint:
            self._taint[func] = self._tainted(func)
        return self._taint[func]

    def _tainted(self, func) -> dict[str, set[str]]:
        positional, vararg = self.signature(func)
        params = positional + [a.arg for a in func.args.kwonlyargs] + ([vararg] if vararg else [])
        taint = {p: {p} for p in params}
        changed = True
        while changed:
            changed = False
            for n in scope_names(func):
                pairs = []
                if isinstance(n, ast.Assign):
                    pairs = [(t, n.value) for t in n.targets]
                elif isinstance(n, (ast.For, ast.comprehension)):
                    pairs = [(n.target, n.iter)]
                for target, value in pairs:
                    origin = set()
                    for name in text_names(value):
                        origin |= taint.get(name, set())
                    for t in ast.walk(target):
                        if isinstance(t, ast.Name) and origin - taint.get(t.id, set()):
                            taint.setdefault(t.id, set()).update(origin)
                            changed = True
        return taint

    def resolve(self) -> None:
        """Bind names to a fixpoint: module constants, locals, returns, helper parameters."""
        self.by_name = {}   # a helper called by its bare name: a module-level function, or a fixture's
        for tree in self.trees.values():
            for func in tree.body:
                if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                self.by_name.setdefault(func.name, func)
                inner = {n.name: n for n in func.body if isinstance(n, ast.FunctionDef)}
                for n in func.body:       # a fixture that hands out a nested helper
                    if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) \
                            and n.value.id in inner:
                        self.by_name[func.name] = inner[n.value.id]
        changed = True
        while changed:
            changed = False
            for path, tree in self.trees.items():
                names = self.module_names.setdefault(path, set())
                self.scope, self.path = tree, path
                if self.bind_scope(scope_nodes_of(tree, BINDING), names, set()):
                    changed = True
                new = names - self.b.globals
                if new:
                    self.b.globals |= new
                    changed = True
            for path, func in self.functions():
                local = self.assigned(func)
                names = self.local_names.setdefault(func, set())
                self.scope, self.path = func, path
                before = len(names)
                self.function_params(func, names)
                self.bind_scope(scope_nodes_of(func, BINDING), names, local)
                if len(names) != before:
                    changed = True
                if func.name not in self.b.returning:
                    for n in scope_names(func):
                        if isinstance(n, (ast.Return, ast.Yield)) and self.is_text(
                                n.value, names, local):
                            self.b.returning.add(func.name)
                            changed = True
                            break
                taint = self.tainted(func)
                hits = self.b.asserting.setdefault(func, set())
                for operand, _ in self.operands(func):
                    for name in text_names(operand):
                        if name in taint:
                            new = taint[name] - hits
                            if new:
                                hits |= new
                                changed = True

    # ---- where an operand is tested ---------------------------------------------------
    def operands(self, func):
        """(operand, node) pairs in the function's own statements that a test holds as text."""
        for node in scope_nodes_of(func, TESTING):
            if isinstance(node, ast.Compare):
                for op in [node.left] + node.comparators:
                    yield op, node
            elif isinstance(node, ast.Assert):
                test = node.test
                if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) \
                        and test.func.attr in TEXT_METHODS:
                    for a in test.args:
                        yield a, test
            elif isinstance(node, ast.Call):
                yield from self.call_operands(node)

    def call_operands(self, call):
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr in REGEX_FUNCS:
            if isinstance(f.value, ast.Name) and f.value.id in {"re", "regex"}:
                if call.args:
                    yield call.args[0], call
            else:
                yield f.value, call                      # a compiled pattern
        if (isinstance(f, ast.Attribute) and f.attr in {"raises", "warns"}) \
                or (isinstance(f, ast.Name) and f.id in {"raises", "warns"}):
            for k in call.keywords:
                if k.arg == "match":
                    yield k.value, call
        helper = self.by_name.get(f.id) if isinstance(f, ast.Name) else None
        hits = self.b.asserting.get(helper, set())
        if hits:
            positional, vararg = self.signature(helper)
            for i, a in enumerate(call.args):
                param = positional[i] if i < len(positional) else vararg
                if param in hits:
                    yield a, call
            for k in call.keywords:
                if k.arg in hits:
                    yield k.value, call

    # ---- scan -------------------------------------------------------------------------
    def kept_reason(self, path: Path, line: int, end: int) -> str:
        lines = self.lines[path]
        for i in range(line - 2, end):
            if 0 <= i < len(lines):
                m = KEEP.search(lines[i])
                if m:
                    return m.group(1).strip()
        return ""

    def inputs(self, func) -> set[str]:
        """Names the function passes into the code under test: call arguments (not assertions), values
        set on an object (a widget's box). Remembered: asked again for every file's module constants."""
        if func not in self._inputs:
            self._inputs[func] = self._own_inputs(func)
        return self._inputs[func]

    def _own_inputs(self, func) -> set[str]:
        out = set()
        for node in scope_names(func):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                    and any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets):
                out.add(node.value.id)           # typed into a widget: box.value = typed
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            helper = self.by_name.get(f.id) if isinstance(f, ast.Name) else None
            if name in REGEX_FUNCS or name in NOT_INPUT or self.b.asserting.get(helper):
                continue
            for a in list(node.args) + [k.value for k in node.keywords]:
                out |= names_inside(a)
        changed = True
        while changed:                            # for cell in row for row in rows: rows went in
            changed = False
            for node in scope_names(func):
                if isinstance(node, (ast.For, ast.comprehension)) and names_inside(node.iter) & out:
                    new = names_inside(node.target) - out
                    if new:
                        out |= new
                        changed = True
        return out

    def file_inputs(self, path) -> set[str]:
        """Module constants this file passes in somewhere (a fixture builds with them): an echo."""
        if path not in self._file_inputs:
            fed = set()
            for other, func in self.functions():
                if other == path:
                    fed |= self.inputs(func)
            self._file_inputs[path] = fed & self.module_names.get(path, set())
        return self._file_inputs[path]

    def scan(self) -> list[Finding]:
        self.resolve()
        found = []
        seen = set()
        for path, func in self.functions():
            names = self.local_names.get(func, set())
            local = self.assigned(func)
            self.scope, self.path = func, path
            fed = self.inputs(func) | self.file_inputs(path)
            params = {a.arg for a in func.args.args}
            for operand, node in self.operands(func):
                if isinstance(operand, ast.Name) and operand.id in params \
                        and operand.id not in names:
                    continue                    # a helper's parameter: found at its call sites
                if not self.is_text(operand, names, local):
                    continue
                key = (path, operand.lineno, operand.col_offset)
                if key in seen:
                    continue
                seen.add(key)
                self.exclude = fed & (names | self.b.globals)      # Chinese text only through what went in: an echo
                echo = not self.is_text(operand, names, local)
                self.exclude = set()
                end = getattr(node, "end_lineno", node.lineno)
                found.append(Finding(
                    path=str(path.relative_to(self.root)), line=operand.lineno,
                    function=func.name, literal=self.text_of(operand),
                    kept=self.kept_reason(path, operand.lineno, end), echo=echo))
        found.sort(key=lambda f: (f.path, f.line))
        return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="tests")
    parser.add_argument("--limit", type=int, default=15)
    args = parser.parse_args(argv)
    folder = Path(args.folder).resolve()
    files = sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    found = Scanner(files, folder.parent).scan()
    counted = [f for f in found if not f.echo]
    for f in counted:
        mark = "  [kept]" if f.kept else ""
        print(f"{f.path}:{f.line}: {f.function}: {f.literal}{mark}")
    echoes = [f for f in found if f.echo]
    if echoes:
        print(f"\nechoes (the learner's own input comes back; not counted): {len(echoes)}")
        for f in echoes:
            print(f"  {f.path}:{f.line}: {f.function}: {f.literal}")
    kept = [f for f in counted if f.kept]
    print(f"\nkept phrases: {len(kept)}")
    for f in kept:
        print(f"  {f.path}:{f.line}: {f.kept}")
    print(f"total: {len(counted)} phrase assertions (limit {args.limit})")
    return 1 if len(counted) > args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
