"""lesson_lib.sections.s09_paper (§9): every formula term is tied to a line that really is in the kernel."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest
from helpers import CJK

from lesson_lib import attention
from lesson_lib.sections.s09_paper import KERNELS, MHA_TERMS, SDPA_TERMS, SOFTMAX_TERMS, formula_view, line_map

ROOT = Path(__file__).resolve().parents[1]
SECTION_9 = (ROOT / "notebooks" / "src" / "09_paper.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(("fns", "terms"), KERNELS, ids=["softmax", "sdpa", "mha"])
def test_line_map_finds_every_fragment_in_current_source(fns, terms):
    lines = [line for fn in fns for line in inspect.getsource(fn).splitlines()]  # the door, then its formula
    rows = line_map(fns, terms)
    assert len(rows) == len(terms)
    for (lineno, code, term), (fragment, want_term) in zip(rows, terms):
        assert fragment in lines[lineno - 1]  # 1-based line within the function
        assert fragment in code and "#" not in code  # the code without its comment
        assert code == lines[lineno - 1].split("#")[0].strip()
        assert term == want_term
    assert CJK.search(" ".join(t for _, _, t in rows))  # explained in Chinese
    # the terms follow the order the kernel computes them in
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)


def test_terms_name_the_formula_parts():
    soft = " ".join(t for _, t in SOFTMAX_TERMS)
    assert "exp" in soft and "Σ" in soft and any(".max(" in code for code, _ in SOFTMAX_TERMS)  # the max taken off
    sdpa = " ".join(t for _, t in SDPA_TERMS)
    assert "√d_k" in sdpa and "softmax" in sdpa and "V" in sdpa
    mha = " ".join(t for _, t in MHA_TERMS)
    for part in ("W_i^Q", "W_i^K", "W_i^V", "W^O", "Concat"):
        assert part in mha


def test_missing_fragment_raises_lookup_error_in_chinese():
    def fake_kernel(q, k, v):
        scores = q @ k.T  # no scaling, no softmax
        return scores @ v

    with pytest.raises(LookupError, match="fake_kernel") as exc:
        line_map((fake_kernel,), SDPA_TERMS)
    msg = str(exc.value)
    assert SDPA_TERMS[0][0] in msg  # names the fragment it looked for
    assert CJK.search(msg)


def test_fragment_only_in_a_comment_is_not_found():
    def kernel_with_comment(x):
        y = x + 1  # weights @ v
        return y

    with pytest.raises(LookupError):
        line_map((kernel_with_comment,), [("weights @ v", "· V")])
        raise AssertionError("found 'weights @ v' in a comment")


def test_formula_table_lists_every_kernel_function():
    table = str(formula_view())
    heads = ["softmax：", "scaled_dot_product_attention：", "multi_head_attention："]
    assert [table.index(h) for h in heads] == sorted(table.index(h) for h in heads)
    for _, terms in KERNELS:
        for fragment, term in terms:
            assert fragment in table and term in table
    assert table.count("代码") == 3  # one header per function


# ---------------------------------------------------------------------------------------------
# attention.py holds what §9 says it holds, and nothing else
# ---------------------------------------------------------------------------------------------


def _module_defs():
    tree = ast.parse(inspect.getsource(attention))
    return [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]


DOORS = {"softmax": "check_logits", "scaled_dot_product_attention": "check_qkv", "split_heads": "check_split",
         "merge_heads": "check_merge", "multi_head_attention": "check_mha"}


def test_kernel_file_defines_only_the_formulas_section_9_names():
    """Each public function, then the formula function it hands over to; and head_width."""
    names = [node.name for node in _module_defs()]
    assert names == [name for door in DOORS for name in (door, "_" + door)] + ["head_width"]


def test_each_public_function_checks_once_at_the_door_and_its_formula_checks_nothing():
    """The door: its check, then its formula. A formula calls only formulas, so a nested call checks nothing again;
    every door runs under @translated (numpy's overflow and MemoryError said in Chinese)."""
    public = set(DOORS) | {"head_width"}
    for node in _module_defs():
        calls = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
        if node.name in DOORS:
            check, formula = node.body[1:]  # after the docstring
            assert DOORS[node.name] in ast.unparse(check), node.name
            assert ast.unparse(formula.value.func) == "_" + node.name, node.name
            assert [ast.unparse(d) for d in node.decorator_list] == ["translated"], node.name
        elif node.name.startswith("_"):
            assert not {c for c in calls if c.startswith("check_")} and not calls & public, (node.name, calls)
    for fns, terms in KERNELS:
        assert terms[0][0].startswith(DOORS[fns[0].__name__]) and terms[0][1].startswith("（公式之外）")
        assert fns[1] is getattr(attention, "_" + fns[0].__name__)


_TENSOR = re.compile(r"@|np\.|reshape|append|check_\w+\(|softmax\(|split_heads\(|merge_heads\("
                     r"|scaled_dot_product_attention\(")


def test_every_tensor_line_of_the_kernel_has_a_shape_note():
    missing, seen = [], 0
    for node in _module_defs():
        lines = inspect.getsource(getattr(attention, node.name)).splitlines()
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])  # getsource starts at @translated
        doc_end = node.body[0].end_lineno - first  # skip the decorator, the def line and the docstring
        for line in lines[doc_end + 1:]:
            code, _, note = line.partition("#")
            if _TENSOR.search(code):
                seen += 1
                if "(" not in note:
                    missing.append(line.strip())
    assert missing == [] and seen >= 24  # every function's tensor lines were looked at


def test_the_notebook_runs_the_readable_kernel_not_the_fast_path():
    """What the learner reads is what runs: no lesson module or notebook cell imports the fast path."""
    imports = re.compile(r"^\s*(from|import) \S*attention_fast", re.MULTILINE)
    users = [p.name for p in (ROOT / "lesson_lib").glob("*.py") if imports.search(p.read_text(encoding="utf-8"))]
    cells = [p.name for p in (ROOT / "notebooks" / "src").glob("*.md")
             if imports.search(p.read_text(encoding="utf-8"))]
    assert users == [] and cells == []

