"""lesson_lib.costs: the closed form equals the paper-facts table and the counts observed from the kernel's own work."""

from __future__ import annotations

import pytest
from attention_fast import multi_head_attention_fast
from flops_measure import measure
from helpers import assert_chinese_message
from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib import costs
from lesson_lib.attention import multi_head_attention_reference
from lesson_lib.checks import LessonInputTypeError
from lesson_lib.sections import s04_costs as flops


def divisors(d):
    return [h for h in range(1, d + 1) if d % h == 0]


def table(n, d, h):
    """The exact multiply-count table of shared/reference/paper-facts.md, written out again."""
    return {
        "qkv_projections": 3 * n * d**2,
        "scores": n**2 * d,
        "scaling": h * n**2,
        "softmax_exp": h * n**2,
        "softmax_div": h * n**2,
        "weights_v": n**2 * d,
        "output_projection": n * d**2,
        "matmul_total": 4 * n * d**2 + 2 * n**2 * d,
        "softmax_total": 3 * h * n**2,
        "d_k": d // h,
    }


def assert_matches_table(c, n, d, h):
    assert (c.n, c.d_model, c.h) == (n, d, h)
    for key, value in table(n, d, h).items():
        assert getattr(c, key) == value, key


# ---------------------------------------------------------------------------------------------
# Closed form == the table
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", divisors(512))
def test_paper_example_d512_n50(h):
    """paper-facts: d = 512, n = 50 → 54,988,800 matmul multiplies for every h, projections 95 %."""
    c = costs.count(50, 512, h)
    assert_matches_table(c, 50, 512, h)
    assert c.matmul_total == 54_988_800
    assert round(100 * c.projections_share) == 95


@pytest.mark.parametrize(("h", "exps"), [(1, 2_500), (8, 20_000), (32, 80_000)])
def test_paper_example_exps(h, exps):
    c = costs.count(50, 512, h)
    assert c.softmax_exp == exps
    assert c.softmax_div == exps
    assert c.softmax_total == 3 * exps
    assert c.d_k == 512 // h


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 64), st.integers(1, 64))
def test_closed_form_matches_table(n, d_k, h):
    d = d_k * h
    assert_matches_table(costs.count(n, d, h), n, d, h)


def test_counts_over_h_conserve_matmul_work():
    heads = [1, 2, 4, 8, 16, 32, 64]
    counts = [costs.count(1024, 512, h) for h in heads]
    assert {c.matmul_total for c in counts} == {4 * 1024 * 512**2 + 2 * 1024**2 * 512}
    assert [c.softmax_exp for c in counts] == [h * 1024**2 for h in heads]  # grows with h
    assert [c.d_k for c in counts] == [512 // h for h in heads]


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
    assert m["divisions"] == c.scaling + c.softmax_div == 2 * h * n * n  # readable kernel: /√d_k, then normalise
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


def test_time_kernel_names_the_bad_argument():
    with pytest.raises(ValueError) as excinfo:
        flops.time_kernel(n=4, d_model=8, heads=[2], repeat=0)
    assert_chinese(excinfo, "repeat", "0")


def test_time_kernel_repeats_only_short_runs(monkeypatch):
    """A run that fills TIMING_BUDGET is steady and not repeated; short runs are repeated up to ``repeat``."""
    from lesson_lib import attention

    calls = []
    monkeypatch.setattr(attention, "multi_head_attention", lambda x, *ws: calls.append(ws[-1]))
    monkeypatch.setattr(flops, "TIMING_BUDGET", 0.0)  # every run fills it
    flops.time_kernel(n=4, d_model=8, heads=[1, 2], repeat=5)
    assert calls == [1, 1, 2]  # the warm-up, then one run each
    monkeypatch.setattr(flops, "TIMING_BUDGET", 1e9)
    calls.clear()
    flops.time_kernel(n=4, d_model=8, heads=[1, 2], repeat=5)
    assert calls == [1] * 6 + [2] * 5


def test_h_must_divide_d_model():
    for call in (lambda: costs.count(50, 510, 8), lambda: costs.parameters(510, 8), lambda: measure(5, 510, 8)):
        with pytest.raises(ValueError) as excinfo:
            call()
        assert_chinese(excinfo, "d_model=510 不能平均分给 h=8 个头")


def test_scores_text_states_the_lessons_algebra():
    text = flops.scores_text(512, heads=[1, 8])
    assert text.splitlines() == ["h = 1: 每个头打分 512n²，1 个头共 512n²", "h = 8: 每个头打分 64n²，8 个头共 512n²"]


def test_timing_text_has_one_line_per_n_then_the_reading():
    text = flops.timing_text(ns=[4, 8], d_model=16, heads=[1, 4], repeat=1)
    lines = text.splitlines()
    assert len(lines) == 3 and lines[0].startswith("n =   4") and "h = 4:" in lines[1] and "ms" in lines[1]
    assert lines[2].startswith("n = 8 时，以 h = 1 为 1：h = 4 是 ")


def test_timing_reading_is_computed_from_the_times_it_prints(monkeypatch):
    times = {32: {1: 0.001, 8: 0.0011, 64: 0.0015}, 512: {1: 0.012, 8: 0.0318, 64: 0.1285}}
    monkeypatch.setattr(flops, "time_kernel", lambda n, d_model, heads, repeat: times[n])
    lines = flops.timing_text(ns=[32, 512], d_model=512, heads=[1, 8, 64]).splitlines()
    assert lines[1] == "n = 512: h = 1: 12.0 ms，h = 8: 31.8 ms，h = 64: 128.5 ms"
    assert lines[2] == ("n = 512 时，以 h = 1 为 1：h = 8 是 2.6 倍，h = 64 是 10.7 倍。"
                        "在这台电脑上，h = 8 明显比 h = 1 慢：守恒的是乘法次数，不是用时。")


@pytest.mark.parametrize(("ratio", "verdict"), [(1.0, "差不多快"), (1.25, "差不多快"), (1.26, "明显比 h = 1 慢")])
def test_timing_reading_threshold(monkeypatch, ratio, verdict):
    monkeypatch.setattr(flops, "time_kernel", lambda n, d_model, heads, repeat: {1: 0.01, 8: 0.01 * ratio})
    assert verdict in flops.timing_text(ns=[64], d_model=512, heads=[1, 8]).splitlines()[-1]


def test_timing_of_one_head_count_has_no_reading():
    assert len(flops.timing_text(ns=[4], d_model=16, heads=[1], repeat=1).splitlines()) == 1
    assert flops.timing_text(ns=[], d_model=16, heads=[1, 8]) == ""
