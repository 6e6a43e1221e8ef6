"""lesson_lib.formula_map (§9): every formula term is tied to a line that really is in the kernel."""

from __future__ import annotations

import inspect
import re

import pytest

from lesson_lib.attention import multi_head_attention, scaled_dot_product_attention
from lesson_lib.formula_map import MHA_TERMS, SDPA_TERMS, formula_table, line_map

CJK = re.compile(r"[\u4e00-\u9fff]")
KERNELS = [(scaled_dot_product_attention, SDPA_TERMS), (multi_head_attention, MHA_TERMS)]


@pytest.mark.parametrize(("fn", "terms"), KERNELS, ids=["sdpa", "mha"])
def test_line_map_finds_every_fragment_in_current_source(fn, terms):
    lines = inspect.getsource(fn).splitlines()
    rows = line_map(fn, terms)
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
        line_map(fake_kernel, SDPA_TERMS)
    msg = str(exc.value)
    assert "q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)" in msg  # names the fragment it looked for
    assert "找不到" in msg and CJK.search(msg)


def test_fragment_only_in_a_comment_is_not_found():
    def kernel_with_comment(x):
        y = x + 1  # weights @ v
        return y

    with pytest.raises(LookupError):
        line_map(kernel_with_comment, [("weights @ v", "· V")])
        raise AssertionError("found 'weights @ v' in a comment")


def test_formula_table_lists_both_kernels():
    table = formula_table()
    assert "scaled_dot_product_attention：" in table
    assert "multi_head_attention：" in table
    assert table.index("scaled_dot_product_attention：") < table.index("multi_head_attention：")
    for _, terms in KERNELS:
        for fragment, term in terms:
            assert fragment in table and term in table
    assert table.count("代码") == 2  # one header per kernel

