"""paper.TABLE3 is the one home of Table 3's numbers: check it against the paper's own statements."""

from __future__ import annotations

from lesson_lib.paper import TABLE3


def _rows(kind):
    return [r for r in TABLE3 if r["row"] == kind]


def test_row_a_keeps_computation_constant():
    # "we vary the number of attention heads and the attention key and value dimensions,
    # keeping the amount of computation constant": h · d_k = d_model = 512 in base and (A).
    for r in [*_rows("base"), *_rows("A")]:
        assert r["h"] * r["d_k"] == 512 and r["d_v"] == r["d_k"]
    assert sorted(r["h"] for r in _rows("A")) == [1, 4, 16, 32]


def test_row_b_changes_only_d_k():
    for r in _rows("B"):
        assert (r["h"], r["d_v"]) == (8, 64) and r["d_k"] < 64
        assert r["params_m"] < _rows("base")[0]["params_m"]  # narrower W^Q, W^K: fewer weights


def test_the_lessons_claims_follow_from_the_table():
    base = _rows("base")[0]
    single = next(r for r in _rows("A") if r["h"] == 1)
    assert round(base["bleu"] - single["bleu"], 1) == 0.9  # "单头暴跌 0.9 BLEU", as the paper says
    h32 = next(r for r in _rows("A") if r["h"] == 32)
    b16 = next(r for r in _rows("B") if r["d_k"] == 16)
    assert h32["d_k"] == b16["d_k"] == 16  # the caveat: h = 32 also means d_k = 16 ...
    assert b16["bleu"] < h32["bleu"] < base["bleu"]  # ... and d_k = 16 with h = 8 is worse still
