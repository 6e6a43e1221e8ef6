"""lesson_lib says one idea per line: no tuple-packed assignment (`a, b = 1, 2`) and no chained conditional
expression (`x if a else y if b else z`). Line length is ruff's (lesson_lib/ruff.toml: 100)."""

from __future__ import annotations

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lesson_lib"
# Being rewritten with the questions' move to data (issue 38); drop each name as its rewrite lands.
NOT_YET = {"questions.py", "checkers.py"}


def dense(tree: ast.AST) -> list[int]:
    """Line numbers of packed assignments and chained conditional expressions."""
    found = []
    for node in ast.walk(tree):
        packed = isinstance(node, ast.Assign) and all(
            isinstance(part, ast.Tuple) for part in (node.targets[0], node.value)
        )
        chained = isinstance(node, ast.IfExp) and ast.IfExp in (type(node.body), type(node.orelse))
        if packed or chained:
            found.append(node.lineno)
    return found


def test_no_packed_assignment_or_chained_conditional():
    found = {}
    for path in sorted(LIB.rglob("*.py")):
        lines = dense(ast.parse(path.read_text(encoding="utf-8")))
        if lines and path.name not in NOT_YET:
            found[str(path.relative_to(LIB))] = lines
    assert found == {}


def test_the_scan_sees_both_kinds():
    source = "a, b = 1, 2\nc = 1 if a else 2 if b else 3\nd, e = f()\ng = 1 if a else 2\n"
    assert dense(ast.parse(source)) == [1, 2]
