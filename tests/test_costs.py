"""lesson_lib.costs: the closed form equals the counts observed from the kernel's own work (tests/flops_measure.py);
§8's K/V sharing against its closed forms. What §4 prints from them is tested in test_s04_costs."""

from __future__ import annotations

import re

import pytest
from attention_fast import multi_head_attention_fast
from attention_reference import multi_head_attention_reference
from flops_measure import measure
from helpers import assert_chinese_message

from lesson_lib import costs
from lesson_lib.checks import AttentionInputError, LessonInputTypeError


def divisors(d):
    return [h for h in range(1, d + 1) if d % h == 0]


# ---------------------------------------------------------------------------------------------
# Closed form == the table
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", divisors(512))
def test_paper_example_d512_n50(h):
    """The paper's example: d = 512, n = 50 → 54,988,800 matmul multiplies for every h, projections 95 %."""
    c = costs.count(50, 512, h)
    assert (c.n, c.d_model, c.h) == (50, 512, h)
    assert c.matmul_total == 54_988_800
    assert round(100 * c.projections_share) == 95


@pytest.mark.parametrize(("h", "exps"), [(1, 2_500), (8, 20_000), (32, 80_000)])
def test_paper_example_exps(h, exps):
    c = costs.count(50, 512, h)
    assert c.softmax_exp == exps
    assert c.softmax_div == exps
    assert c.softmax_total == 3 * exps
    assert c.d_k == 512 // h


def test_counts_over_h_conserve_matmul_work():
    heads = [1, 2, 4, 8, 16, 32, 64]
    counts = [costs.count(1024, 512, h) for h in heads]
    assert len({c.matmul_total for c in counts}) == 1
    assert {c.softmax_exp // h for c, h in zip(counts, heads)} == {counts[0].softmax_exp}  # grows with h
    assert [c.d_k * h for c, h in zip(counts, heads)] == [512] * len(heads)


# ---------------------------------------------------------------------------------------------
# Closed form == what the kernel actually executed
# ---------------------------------------------------------------------------------------------

GRID = [
    (n, d, h) for n in (1, 2, 5, 16) for d in (1, 4, 12, 32) for h in divisors(d) if h in (1, 2, 3, 4, d) or d == 12
]


@pytest.mark.parametrize(("n", "d", "h"), GRID)
def test_measured_counts_equal_closed_form(n, d, h):
    c = costs.count(n, d, h)
    m = measure(n, d, h)
    d_k = d // h
    assert m["matmul_multiplies"] == c.matmul_total
    assert m["exps"] == c.softmax_exp == h * n * n
    assert m["scalings"] == c.scaling  # readable kernel: /√d_k, then normalise
    assert m["divisions"] - m["scalings"] == c.softmax_div
    shapes = m["matmul_shapes"]
    assert shapes == [
        ((n, d), (d, d), n * d * d),  # X W^Q
        ((n, d), (d, d), n * d * d),  # X W^K
        ((n, d), (d, d), n * d * d),  # X W^V
        ((h, n, d_k), (h, d_k, n), n * n * d),  # Q Kᵀ, all heads at once
        ((h, n, n), (h, n, d_k), n * n * d),  # weights × V
        ((n, d), (d, d), n * d * d),  # Concat(head_i) W^O
    ]
    per_stage = [mult for _, _, mult in shapes]
    assert sum(per_stage[:3]) == c.qkv_projections
    assert per_stage[3] == c.scores
    assert per_stage[4] == c.weights_v
    assert per_stage[5] == c.output_projection


@pytest.mark.parametrize(("n", "d", "h"), [(1, 1, 1), (5, 8, 2), (7, 12, 3), (4, 16, 16), (9, 24, 4)])
def test_per_head_reference_does_the_same_work(n, d, h):
    """The loop over heads runs h times as many, h times smaller matmuls: the totals are the same."""
    c = costs.count(n, d, h)
    m = measure(n, d, h, kernel=multi_head_attention_reference)
    assert m["matmul_multiplies"] == c.matmul_total
    assert m["exps"] == c.softmax_exp
    assert m["divisions"] == c.scaling + c.softmax_div
    assert len(m["matmul_shapes"]) == 5 * h + 1


@pytest.mark.parametrize(("n", "d", "h"), [(1, 1, 1), (5, 8, 2), (7, 12, 3), (4, 16, 16), (40, 8, 2)])
def test_fast_path_counted_with_its_in_place_matmuls(n, d, h, monkeypatch):
    """The fast path writes its matmuls and exps into preallocated blocks (out=): they count all the same."""
    import attention_fast

    monkeypatch.setattr(attention_fast, "_MIN_BLOCK_ROWS", 3)
    monkeypatch.setattr(attention_fast, "_BLOCK_BYTES", 1)  # several row blocks when n > 3
    c = costs.count(n, d, h)
    m = measure(n, d, h, kernel=multi_head_attention_fast)
    assert m["matmul_multiplies"] == c.matmul_total  # 1,680 for n = 5, d = 8, like the other kernels
    assert m["exps"] == c.softmax_exp
    assert m["divisions"] == h * n  # 1/√d_k is folded into Q; one reciprocal per row replaces h·n² divisions
    blocks = -(-n // 3)
    assert len(m["matmul_shapes"]) == 2 + 2 * h * blocks  # fused X W^{QKV}, W^O, and 2 per block per head


def test_the_issue_example_counts_1680_for_every_kernel():
    from lesson_lib.attention import multi_head_attention

    kernels = (multi_head_attention, multi_head_attention_reference, multi_head_attention_fast)
    assert [measure(5, 8, 2, kernel=k)["matmul_multiplies"] for k in kernels] == [1680] * 3


def test_measure_does_not_depend_on_seed():
    assert measure(6, 8, 2, seed=0) == measure(6, 8, 2, seed=123)


# ---------------------------------------------------------------------------------------------
# Parameters: 4·d_model² for any h
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 6, 12, 64, 512, 768])
def test_parameters_are_four_d_squared_for_every_divisor(d):
    for h in divisors(d):
        assert costs.parameters(d, h) == 4 * d * d


def test_parameters_table3_rows_a_are_the_same():
    assert {costs.parameters(512, h) for h in (1, 4, 8, 16, 32)} == {4 * 512**2}


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def assert_chinese(excinfo, *fragments):
    assert isinstance(excinfo.value, ValueError)
    assert_chinese_message(str(excinfo.value), *fragments)


@pytest.mark.parametrize("n", [0, -3, 2.5, True, "50", None], ids=repr)
def test_bad_n(n):
    with pytest.raises(ValueError) as excinfo:
        costs.count(n, 512, 8)
    assert_chinese(excinfo, "n", repr(n))


@pytest.mark.parametrize("d", [0, -512, 512.0, "512"], ids=repr)
def test_bad_d_model(d):
    with pytest.raises(ValueError) as excinfo:
        costs.count(50, d, 8)
    assert_chinese(excinfo, "d_model", repr(d))


@pytest.mark.parametrize("h", [0, -1, 2.5, True, "8"], ids=repr)
def test_bad_h(h):
    for call in (lambda: costs.count(50, 512, h), lambda: costs.parameters(512, h)):
        with pytest.raises(ValueError) as excinfo:
            call()
        assert_chinese(excinfo, str(h))


@pytest.mark.parametrize(("args", "cls", "fragments"), [
    ((-512, 8), ValueError, ["d_model", "-512", "≥ 1"]),
    (("512", 8), LessonInputTypeError, ["d_model", "'512'", "str"]),
    ((512.0, 8), LessonInputTypeError, ["d_model", "512.0"]),
    ((512, "8"), LessonInputTypeError, ["h", "'8'"]),
    ((0, 8), ValueError, ["d_model", "0"]),
], ids=repr)
def test_parameters_names_the_bad_argument(args, cls, fragments):
    with pytest.raises(cls) as excinfo:
        costs.parameters(*args)
    assert_chinese(excinfo, *fragments)


@pytest.mark.parametrize(("kwargs", "fragment"), [({"n": 0}, "n"), ({"d_model": -8}, "d_model"), ({"seed": -1}, "seed"),
                                                  ({"kernel": "fast"}, "kernel")], ids=repr)
def test_measure_names_the_bad_argument(kwargs, fragment):
    args = {"n": 5, "d_model": 8, "h": 2, **kwargs}
    with pytest.raises(ValueError) as excinfo:
        measure(**args)
    assert_chinese(excinfo, fragment)


def test_h_must_divide_d_model():
    for call in (lambda: costs.count(50, 510, 8), lambda: costs.parameters(510, 8), lambda: measure(5, 510, 8)):
        with pytest.raises(ValueError) as excinfo:
            call()
        assert isinstance(excinfo.value, AttentionInputError)
        assert_chinese(excinfo, "d_model=510", "h=8")


# ---------------------------------------------------------------------------------------------
# §8's K/V sharing (kv_sharing, variants): parameters and cache of MHA, GQA and MQA, against closed forms written
# out here independently (weights of W^Q, W^K, W^V, W^O; g keys and g values of width d_k per token)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "h", "g"), [(512, 8, 8), (512, 8, 2), (512, 8, 1), (12, 6, 3), (8192, 64, 8), (7, 1, 1)])
def test_closed_forms(d, h, g):
    d_k = d // h
    r = costs.kv_sharing(d, h, g)
    w_q = w_o = d * d  # queries keep h heads; W^O reads h·d_v = d columns
    w_k = w_v = d * g * d_k  # g key and g value heads
    assert r.projection_params == w_q + w_k + w_v + w_o
    assert r.cache_per_token == g * d_k + g * d_k  # keys + values
    assert (r.kv_heads, r.d_k) == (g, d_k)


@pytest.mark.parametrize("h", [1, 2, 8, 16, 64])
def test_multi_head_is_the_lesson_count(h):
    """g = h is plain multi-head attention: 4·d_model² weights, whatever h (costs.parameters)."""
    assert costs.kv_sharing(512, h, h).projection_params == costs.parameters(512, h) == 4 * 512**2


def test_variants_order_and_names():
    mha, gqa, mqa = costs.variants(512, 8, 2)
    assert [v.kv_heads for v in (mha, gqa, mqa)] == [8, 2, 1]
    assert "MHA" in mha.name and "GQA" in gqa.name and "MQA" in mqa.name
    assert re.findall(r"\d+", gqa.name) == ["2"]  # its number of key/value groups
    assert mha.cache_per_token == 4 * gqa.cache_per_token == 8 * mqa.cache_per_token


@pytest.mark.parametrize(("args", "fragments"), [
    ((512, 8, 3), ["groups", "[1, 2, 4, 8]", "3"]),  # the name §8's cell passes, the divisors of h
    ((512, 8, 16), ["groups", "[1, 2, 4, 8]", "16"]),
    ((512, 8, 0), ["groups", "0"]),
    ((512, 3, 1), ["3"]),
    ((512, 8, True), ["groups"]),
])
def test_bad_arguments_get_a_chinese_error(raises_chinese, args, fragments):
    raises_chinese(lambda: costs.kv_sharing(*args), *fragments)
