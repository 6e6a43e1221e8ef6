"""lesson_lib.checks: every bad input, run through every kernel variant, gives one Chinese error.

The tables below hold the input and the expected error (class and words) or result. Each multi-head
row runs through the readable kernel, the per-head reference and the fast path, and the three must
raise the same class with the same message (or return the same dtype and numbers).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from attention_fast import multi_head_attention_fast
from helpers import assert_chinese_message
from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib import checks as validation
from lesson_lib.attention import (
    multi_head_attention,
    multi_head_attention_reference,
    scaled_dot_product_attention,
    softmax,
)
from lesson_lib.checks import (
    AttentionInputError,
    AttentionInputTypeError,
    LessonInputError,
    LessonInputTypeError,
    check_choice,
    check_int,
    check_number,
)
from lesson_lib.runtime import memory

KERNELS = [multi_head_attention, multi_head_attention_reference, multi_head_attention_fast]
N, D, H = 5, 8, 2


def inputs(dtype=np.float64, x_scale=1.0, w_scale=1.0, n=N, d=D, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) * x_scale).astype(dtype)  # (n, d)
    ws = [(rng.standard_normal((d, d)) / np.sqrt(d) * w_scale).astype(dtype) for _ in range(4)]
    return x, ws


def outcome(call):
    """('ok', result) or (error class, message)."""
    try:
        return "ok", call()
    except Exception as exc:  # the test compares what every variant raised
        return type(exc), str(exc)


def _score_bound(x, ws, h):
    """An upper bound on |score| = |q·k| / √d_k over all heads, from the inputs in float64."""
    x = np.asarray(np.ma.getdata(x), dtype=np.float64)
    w_q, w_k = (np.asarray(np.ma.getdata(w), dtype=np.float64) for w in ws[:2])
    d_k = w_q.shape[1] // h
    with np.errstate(over="ignore", invalid="ignore"):  # huge scales: the bound is inf, the cap below applies
        q, k = (np.linalg.norm((x @ w).reshape(len(x), h, d_k), axis=-1).max() for w in (w_q, w_k))
        return q * k / np.sqrt(d_k)


def _variant_tolerance(dtype, x, ws, h):
    """Variants sum in different orders: a score of size S carries about S·eps of round-off into softmax's exp,
    so the honest tolerance grows with the scores (sharp float32 heads at S ≈ 10³ differ by ~2e-5), up to a cap
    that still fails any real difference between the variants."""
    base, cap = {np.float16: (1e-2, 5e-2), np.float32: (1e-5, 1e-3)}.get(dtype.type, (1e-9, 1e-7))
    if not np.issubdtype(dtype, np.floating):
        return base
    return min(max(base, 16 * float(np.finfo(dtype).eps) * _score_bound(x, ws, h)), cap)


def run_all(x, ws, h=H, mask=None):
    """The outcome of every kernel variant; asserts they agree and returns the common one."""
    results = [outcome(lambda k=k: k(x, *ws, h, mask=mask)) for k in KERNELS]
    first = results[0]
    for kernel, result in zip(KERNELS[1:], results[1:]):
        if first[0] == "ok":
            assert result[0] == "ok", (kernel.__name__, result)
            for a, b in zip(result[1], first[1]):
                assert a.dtype == b.dtype, kernel.__name__
                tol = _variant_tolerance(a.dtype, x, ws, h)
                np.testing.assert_allclose(a, b, rtol=tol, atol=tol * float(np.abs(b).max()), err_msg=kernel.__name__)
        else:
            assert result == first, kernel.__name__  # same class, same words
    return first


def assert_chinese(result, cls, *fragments):
    kind, message = result
    assert kind is not str and kind != "ok", f"expected {cls.__name__}, got a result"
    assert issubclass(kind, cls), (kind, message)
    assert issubclass(kind, ValueError)  # every learner-facing error is a ValueError subclass
    assert_chinese_message(message, *fragments)


def _with(where, value):
    """X and the weights with the array at ``where`` (0 = X, 1..4 = W_Q..W_O) replaced by ``value``."""
    x, ws = inputs()
    arrays = [x, *ws]
    arrays[where] = value(arrays[where]) if callable(value) else value
    return arrays[0], arrays[1:]


def _matrix(a):
    """np.matrix(a); numpy warns that the class is discouraged, which is the learner's business."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.asmatrix(a)


def _masked(a, hide):
    m = np.ma.masked_array(a, mask=np.zeros(a.shape, bool))
    if hide:
        m[0, 0] = np.ma.masked
    return m


# (id, (x, ws), error class, words the message must contain)
BAD_MHA = [
    ("X=[]", _with(0, []), AttentionInputError, ["X", "(0,)"]),
    ("X (3,0)", _with(0, np.zeros((3, 0))), AttentionInputError, ["X", "(3, 0)"]),
    ("X (0,5,8)", _with(0, np.zeros((0, 5, 8))), AttentionInputError, ["X", "(0, 5, 8)", "没有数"]),
    ("X None", _with(0, None), AttentionInputTypeError, ["X", "None"]),
    ("X str", _with(0, "小明把苹果递给了小红"), AttentionInputTypeError, ["X", "文字"]),
    ("X object", _with(0, np.array([[1.0, None]] * 4, dtype=object)), AttentionInputTypeError, ["X", "object"]),
    ("W_K None", _with(2, None), AttentionInputTypeError, ["W_K", "None"]),
    ("W_V str", _with(3, "abc"), AttentionInputTypeError, ["W_V"]),
    ("X masked", _with(0, lambda a: _masked(a, True)), AttentionInputError, ["X", "遮罩", "1 个位置"]),
    ("W_O masked", _with(4, lambda a: _masked(a, True)), AttentionInputError, ["W_O", "遮罩"]),
    ("X longdouble", _with(0, lambda a: a.astype(np.longdouble)), AttentionInputError, ["X", "float64"]),
    ("X complex", _with(0, lambda a: a * 1j), AttentionInputError, ["X", "复数"]),
    ("X NaN", _with(0, lambda a: np.where(np.eye(*a.shape, dtype=bool), np.nan, a)), AttentionInputError,
     ["X", "NaN"]),
    ("W_Q -inf", _with(1, lambda a: np.where(np.eye(*a.shape, dtype=bool), -np.inf, a)), AttentionInputError,
     ["W_Q", "inf"]),
    # finite inputs whose intermediates overflow: the magnitude, before anything is computed
    ("float64 X×1e154", inputs(x_scale=1e154), AttentionInputError, ["有限", "float64", "打分 Q Kᵀ", "e+30", "X 约"]),
    ("float64 W×1e160", inputs(w_scale=1e160), AttentionInputError, ["float64", "e+3", "W_Q 约"]),
    ("float32 X×1e19", inputs(np.float32, x_scale=1e19), AttentionInputError, ["float32", "e+38", "float64"]),
    ("float32 X×1e38", inputs(np.float32, x_scale=1e38), AttentionInputError, ["超过 float32", "X 约 2.3e+38"]),
    ("float16 X×1e4", inputs(np.float16, x_scale=1e4), AttentionInputError, ["float16", "6.55e+04"]),
    ("float16 values 200", (np.full((N, D), 200, np.float16), [np.full((D, D), 0.5, np.float16)] * 4),
     AttentionInputError, ["float16", "打分 Q Kᵀ", "e+6"]),
]


@pytest.mark.parametrize(("xw", "cls", "fragments"), [row[1:] for row in BAD_MHA], ids=[row[0] for row in BAD_MHA])
def test_bad_multi_head_input_same_chinese_error_from_every_variant(xw, cls, fragments):
    x, ws = xw
    result = run_all(x, ws)
    assert_chinese(result, cls, *fragments)
    assert "Q 里有 NaN" not in result[1]  # never blames an input that was finite


def test_overflow_is_translated_without_a_warning_and_leaves_numpy_settings_alone():
    """numpy reports the overflow (errstate inside the call); the learner sees only the Chinese error, no
    RuntimeWarning and no NaN, and their own np.seterr settings are the same afterwards."""
    import warnings

    x, ws = inputs(x_scale=1e154)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        with pytest.raises(AttentionInputError, match="超过 float64"):
            multi_head_attention(x, *ws, H)
    assert np.geterr() == before


# (id, (x, ws), dtype every variant must return)
GOOD_MHA = [
    ("float16", inputs(np.float16), np.float16),
    ("float32", inputs(np.float32), np.float32),
    ("float64", inputs(), np.float64),
    ("uint8 X", _with(0, lambda a: (np.abs(a) * 40).astype(np.uint8)), np.float64),
    ("int8 X", _with(0, lambda a: (a * 40).astype(np.int8)), np.float64),
    ("bool X", _with(0, lambda a: a > 0), np.float64),
    ("float32 X, float64 W", (inputs(np.float32)[0], inputs()[1]), np.float64),
    ("float16 X, float32 W", (inputs(np.float16)[0], inputs(np.float32)[1]), np.float32),
    ("np.matrix X", _with(0, _matrix), np.float64),
    ("np.matrix W_Q", _with(1, _matrix), np.float64),
    ("masked X, nothing hidden", _with(0, lambda a: _masked(a, False)), np.float64),
    ("float64 X×1e150: large but fits", inputs(x_scale=1e150), np.float64),
    ("float32 X×1e-30: tiny", inputs(np.float32, x_scale=1e-30), np.float32),
]


@pytest.mark.parametrize(("xw", "dtype"), [row[1:] for row in GOOD_MHA], ids=[row[0] for row in GOOD_MHA])
def test_accepted_inputs_same_dtype_and_numbers_from_every_variant(xw, dtype):
    x, ws = xw
    kind, (out, weights) = run_all(x, ws)
    assert kind == "ok"
    assert out.dtype == weights.dtype == dtype
    assert type(out) is np.ndarray and type(weights) is np.ndarray  # no np.matrix or masked array comes back
    assert np.isfinite(out).all() and np.isfinite(weights).all()
    plain = [np.asarray(np.ma.getdata(a), dtype=np.float64) for a in (x, *ws)]
    ref_out, ref_weights = multi_head_attention(plain[0], *plain[1:], H)
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(weights, ref_weights, rtol=tol, atol=tol)
    np.testing.assert_allclose(out, ref_out, rtol=tol, atol=tol * np.abs(ref_out).max())


def test_uint8_rows_do_not_wrap_around():
    x = np.arange(20, dtype=np.uint8)[None].repeat(3, axis=0)  # (3, 20) rows longer than 16
    expected = softmax(x.astype(np.float64))
    np.testing.assert_array_equal(softmax(x), expected)
    assert softmax(x).dtype == np.float64
    assert softmax(np.array([200, 10], np.uint8))[0] > 0.99  # 10 − 200 must not wrap to 66


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64]), st.floats(-1, 0.99), st.floats(-1, 0.99),
       st.integers(0, 2**32 - 1))
def test_no_silent_nan_at_any_scale(dtype, x_exp, w_exp, seed):
    """Over the whole range of the dtype: every variant returns finite numbers, or all raise the overflow error."""
    top = np.log10(float(np.finfo(dtype).max))
    with np.errstate(over="ignore"):  # a scale beyond the dtype gives inf inputs: skipped below
        x, ws = inputs(dtype, x_scale=10.0 ** (x_exp * top), w_scale=10.0 ** (w_exp * top / 2), seed=seed)
    if not (np.isfinite(x).all() and all(np.isfinite(w).all() for w in ws)):
        return  # the scaling itself overflowed the dtype: that is the NaN/inf check, tested above
    result = run_all(x, ws)
    if result[0] == "ok":
        out, weights = result[1]
        assert np.isfinite(out).all() and np.isfinite(weights).all()
    else:
        assert_chinese(result, AttentionInputError, "超过", np.dtype(dtype).name)


# ---------------------------------------------------------------------------------------------
# Size guard
# ---------------------------------------------------------------------------------------------


def test_two_hundred_thousand_tokens_are_refused_in_chinese_with_the_memory_needed():
    x = np.zeros((200_000, D))  # 12.8 MB: the input fits, its (h, n, n) weights (640 GB) do not
    ws = [np.eye(D)] * 4
    result = run_all(x, ws)
    assert_chinese(result, AttentionInputError, "(2, 200000, 200000)", "200,000", "内存", "GB", "TB")
    with pytest.raises(AttentionInputError, match="内存"):
        scaled_dot_product_attention(x, x, x)


def test_size_guard_compares_with_the_free_memory(monkeypatch):
    x, ws = inputs(n=64)
    weights_bytes = 2 * 64 * 64 * 8  # (h, n, n) float64
    monkeypatch.setattr(validation, "_ALWAYS_FITS", 0)  # look at the free memory even for small sizes
    monkeypatch.setattr(validation, "available_memory", lambda: weights_bytes)  # room for the weights only
    assert_chinese(run_all(x, ws), AttentionInputError, "64", "64.0 KB", "内存")
    monkeypatch.setattr(validation, "available_memory", lambda: 100 * weights_bytes)
    assert run_all(x, ws)[0] == "ok"
    monkeypatch.setattr(validation, "available_memory", lambda: None)  # unknown: no guard
    assert run_all(x, ws)[0] == "ok"


def test_available_memory_reads_the_cgroup_limit(tmp_path, monkeypatch):
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("73741824\n")
    monkeypatch.setattr(memory, "_CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(memory, "_meminfo_available", lambda: 8 << 30)
    assert memory.available_memory() == 1_000_000_000
    (tmp_path / "memory.max").write_text("max\n")
    assert memory.available_memory() == 8 << 30


# ---------------------------------------------------------------------------------------------
# softmax and scaled_dot_product_attention
# ---------------------------------------------------------------------------------------------

BAD_SOFTMAX = [
    ("[]", [], {}, AttentionInputError, ["(0,)", "没有数"]),
    ("(3,0)", np.zeros((3, 0)), {}, AttentionInputError, ["(3, 0)"]),
    ("scalar", 3.0, {}, AttentionInputError, ["标量"]),
    ("None", None, {}, AttentionInputTypeError, ["None"]),
    ("str", "abc", {}, AttentionInputTypeError, ["文字"]),
    ("object", np.array([1, "a", None], dtype=object), {}, AttentionInputTypeError, ["object"]),
    ("masked", _masked(np.ones((2, 3)), True), {}, AttentionInputError, ["遮罩"]),
    ("NaN", [1.0, np.nan, 2.0], {}, AttentionInputError, ["1 个 NaN"]),
    ("+inf", [[1.0, np.inf], [np.inf, 0.0]], {}, AttentionInputError, ["2 个 +inf"]),
    ("all -inf row", [[0.0, -np.inf], [-np.inf, -np.inf]], {}, AttentionInputError, ["(1,)", "−inf"]),
    ("axis 2 of 2-D", np.ones((2, 3)), {"axis": 2}, AttentionInputError, ["axis", "-2 到 1", "2"]),
    ("axis -3 of 2-D", np.ones((2, 3)), {"axis": -3}, AttentionInputError, ["axis", "-3"]),
    ("axis 1.5", np.ones((2, 3)), {"axis": 1.5}, AttentionInputTypeError, ["axis", "1.5"]),
    ("axis None", np.ones((2, 3)), {"axis": None}, AttentionInputTypeError, ["axis", "None"]),
]


@pytest.mark.parametrize(("x", "kwargs", "cls", "fragments"), [r[1:] for r in BAD_SOFTMAX],
                         ids=[r[0] for r in BAD_SOFTMAX])
def test_bad_softmax_input(x, kwargs, cls, fragments):
    assert_chinese(outcome(lambda: softmax(x, **kwargs)), cls, *fragments)


@pytest.mark.parametrize("n", [2, 16, 17, 40])
@pytest.mark.parametrize(("dtype", "out"), [(np.float16, np.float16), (np.float32, np.float32),
                                            (np.float64, np.float64), (np.int8, np.float64), (np.uint8, np.float64),
                                            (bool, np.float64)])
def test_softmax_output_dtype_does_not_depend_on_row_length(n, dtype, out):
    x = (np.arange(2 * n).reshape(2, n) % 7).astype(dtype)
    p = softmax(x)
    assert p.dtype == out
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol={np.float16: 1e-3, np.float32: 1e-6}.get(out, 1e-12))


def test_softmax_keeps_partly_masked_rows_and_accepts_lists_and_matrices():
    np.testing.assert_array_equal(softmax([[0.0, -np.inf], [-np.inf, 5.0]]), [[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(softmax([1, 2, 3]), softmax(np.array([1.0, 2.0, 3.0])), rtol=0, atol=0)
    p = softmax(_matrix([[1.0, 2.0]]))
    assert type(p) is np.ndarray
    np.testing.assert_allclose(p, softmax(np.array([[1.0, 2.0]])), rtol=0, atol=0)


@pytest.mark.parametrize("which", [0, 1, 2], ids=["Q", "K", "V"])
@pytest.mark.parametrize(("bad", "cls", "fragment"), [
    (None, AttentionInputTypeError, "None"),
    ("abc", AttentionInputTypeError, "文字"),
    (np.zeros((3, 0)), AttentionInputError, "(3, 0)"),
    ([], AttentionInputError, "(0,)"),
], ids=["None", "str", "(3,0)", "[]"])
def test_bad_q_k_v(which, bad, cls, fragment):
    arrays = [np.ones((3, 4)) for _ in range(3)]
    arrays[which] = bad
    assert_chinese(outcome(lambda: scaled_dot_product_attention(*arrays)), cls, "QKV"[which], fragment)


def test_sdpa_scores_overflow_is_named_not_blamed_on_nan():
    q = np.full((3, 4), 1e154)
    result = outcome(lambda: scaled_dot_product_attention(q, q, np.ones((3, 2))))
    assert_chinese(result, AttentionInputError, "打分 Q Kᵀ", "float64", "Q 约 1.0e+154")
    q16 = np.full((3, 4), 200, np.float16)
    assert_chinese(outcome(lambda: scaled_dot_product_attention(q16, q16, q16)), AttentionInputError, "float16")
    out, weights = scaled_dot_product_attention(q16 / 10, q16 / 10, q16)  # 4 · 20 · 20 = 1600: fits
    assert out.dtype == weights.dtype == np.float16 and np.isfinite(out).all()


# ---------------------------------------------------------------------------------------------
# The shared argument helpers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "cls", "fragments"), [
    (0, LessonInputError, ["n", "≥ 1", "0"]),
    (-3, LessonInputError, ["-3"]),
    (2.5, LessonInputTypeError, ["2.5", "float"]),
    (True, LessonInputTypeError, ["True", "bool"]),
    ("6", LessonInputTypeError, ["'6'", "str"]),
    (None, LessonInputTypeError, ["None"]),
], ids=repr)
def test_check_int(value, cls, fragments):
    assert_chinese(outcome(lambda: check_int(value, "n", minimum=1)), cls, *fragments)


def test_check_int_accepts_numpy_integers_and_bounds():
    assert check_int(np.int64(4), "n", minimum=1) == 4 and type(check_int(np.int64(4), "n")) is int
    assert check_int(5, "n", minimum=1, maximum=5) == 5
    assert_chinese(outcome(lambda: check_int(6, "n", minimum=1, maximum=5)), LessonInputError, "1 到 5 之间", "6")
    assert_chinese(outcome(lambda: check_int(2, "h", error=AttentionInputError, minimum=3)), AttentionInputError)
    assert_chinese(outcome(lambda: check_int("2", "h", error=AttentionInputError)), AttentionInputTypeError)


def test_check_number_and_check_choice():
    assert check_number(3, "锐度", minimum=0, maximum=10) == 3.0
    for bad, cls in ((11, LessonInputError), (float("nan"), LessonInputError), ("4", LessonInputTypeError),
                     (True, LessonInputTypeError)):
        assert_chinese(outcome(lambda b=bad: check_number(b, "锐度", minimum=0, maximum=10)), cls, "锐度")
    assert check_choice(2, "heads", [1, 2]) == 2
    for bad in (3, 2.0, "2", True):
        assert_chinese(outcome(lambda b=bad: check_choice(b, "heads", [1, 2])), LessonInputError, "heads", "[1, 2]",
                       repr(bad))


# ---------------------------------------------------------------------------------------------
# Every argument of every public kernel function: the lesson's Chinese error, never numpy's English
# ---------------------------------------------------------------------------------------------

BAD_MASKS = [
    ("ragged list", [[True] * 4, [True]], AttentionInputError, ["mask", "[4, 1]"]),
    ("text", "abc", AttentionInputTypeError, ["mask", "文字"]),
    ("objects", np.array([[None] * 4] * 4, dtype=object), AttentionInputTypeError, ["mask", "object"]),
    ("floats", np.ones((4, 4)), AttentionInputError, ["mask", "布尔"]),
    ("wrong shape", np.ones((3, 3), bool), AttentionInputError, ["mask", "(3, 3)", "4, 4)"]),
    ("masked entries", np.ma.masked_array(np.ones((4, 4), bool), mask=np.eye(4, dtype=bool)), AttentionInputError,
     ["mask", "遮罩"]),
]


@pytest.mark.parametrize(("mask", "cls", "fragments"), [r[1:] for r in BAD_MASKS], ids=[r[0] for r in BAD_MASKS])
def test_bad_mask_gets_the_lessons_error(mask, cls, fragments):
    q = np.ones((4, 3))
    assert_chinese(outcome(lambda: scaled_dot_product_attention(q, q, q, mask=mask)), cls, *fragments)
    x, ws = inputs(n=4)
    assert_chinese(run_all(x, ws, mask=mask), cls, *fragments)


@pytest.mark.parametrize("fn", ["split_heads", "merge_heads"])
@pytest.mark.parametrize(("bad", "fragments"), [
    (lambda s: np.full(s, np.nan), ["x", "NaN"]),
    (lambda s: np.full(s, -np.inf), ["x", "inf"]),
    (lambda s: np.ones(s) * 1j, ["x", "复数"]),
    (lambda s: np.ones((*s[:-2], 0, s[-1])), ["x", "没有数"]),
], ids=["nan", "-inf", "complex", "empty"])
def test_split_and_merge_refuse_what_the_attention_functions_refuse(fn, bad, fragments):
    from lesson_lib import attention

    shape, args = ((3, 8), (2,)) if fn == "split_heads" else ((2, 3, 4), ())
    assert_chinese(outcome(lambda: getattr(attention, fn)(bad(shape), *args)), AttentionInputError, *fragments)


def test_split_heads_keeps_integer_arrays_integer():
    from lesson_lib.attention import merge_heads, split_heads

    x = np.arange(24).reshape(3, 8)
    assert split_heads(x, 2).dtype == x.dtype
    np.testing.assert_array_equal(merge_heads(split_heads(x, 2)), x)


def test_float16_softmax_rows_never_silently_sum_to_zero():
    """70,000 float16 exps sum past float16's largest value (65,504): refused with the reason, not rows of 0."""
    result = outcome(lambda: softmax(np.zeros(70_000, np.float16)))
    assert_chinese(result, AttentionInputError, "float16", "70,000", "float32")
    p = softmax(np.zeros((2, 65_000), np.float16))  # the longest rows whose sum fits: computed, each sums to 1
    assert p.dtype == np.float16
    np.testing.assert_allclose(p.astype(np.float64).sum(axis=-1), 1.0, atol=2e-2)


# ---------------------------------------------------------------------------------------------
# Checks at the door: each check once per learner call
# ---------------------------------------------------------------------------------------------


def _checks_run(call):
    """{check name: times it ran} while ``call()`` runs (a check called from inside another lesson function
    returns at once and is not counted)."""
    import sys

    ran = {}

    def hook(frame, event, _arg):
        code = frame.f_code
        if event == "call" and code.co_filename == validation.__file__ and code.co_name.startswith("check_") \
                and not validation._nested():
            ran[code.co_name] = ran.get(code.co_name, 0) + 1

    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return ran


def test_a_kernel_call_runs_its_own_check_once_and_no_callees_checks():
    x, ws = inputs()
    ran = _checks_run(lambda: multi_head_attention(x, *ws, H))
    assert ran.get("check_mha") == 1 and ran.get("check_heads") == 1
    assert not {"check_qkv", "check_split", "check_merge", "check_logits"} & set(ran)  # its callees re-check nothing
    q = np.ones((3, 4))
    assert _checks_run(lambda: scaled_dot_product_attention(q, q, q)) == {"check_qkv": 1}  # softmax inside: no check


def test_a_section_5_redraw_checks_each_argument_once():
    from lesson_lib.sections import s05_head_lab as head_lab

    ran = _checks_run(lambda: head_lab.lab_state(8))
    assert ran.get("check_heads") == 1  # was 8: the kernel, the counts and the parameter count each re-checked h
    assert sum(ran.values()) <= 5  # h (with d_model), seed, the token count: was 38 checks per redraw
    with pytest.raises(AttentionInputError, match="不能平均分给"):
        head_lab.lab_state(7)  # the one check at the door still refuses


def test_nested_calls_still_check_after_an_error_inside():
    """The door's depth is restored when a call raises, so the learner's next call is checked again."""
    x, ws = inputs()
    with pytest.raises(AttentionInputError):
        multi_head_attention(x, *ws, 3)
    assert not validation._nested()
    assert_chinese(outcome(lambda: softmax([1.0, np.nan])), AttentionInputError, "NaN")


# ---------------------------------------------------------------------------------------------
# Memory: the guard reads every limit the OS enforces by killing; a MemoryError is translated
# ---------------------------------------------------------------------------------------------


def test_available_memory_reads_a_cgroup_v1_limit(tmp_path, monkeypatch):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("1073741824\n")
    (tmp_path / "memory" / "memory.usage_in_bytes").write_text("73741824\n")
    monkeypatch.setattr(memory, "_CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(memory, "_meminfo_available", lambda: 8 << 30)
    monkeypatch.setattr(memory, "_address_space_room", lambda: None)
    assert memory.available_memory() == 1_000_000_000
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    assert memory.available_memory() == 8 << 30


def test_available_memory_reads_ulimit_v(monkeypatch):
    import resource

    monkeypatch.setattr(memory, "_meminfo_available", lambda: 64 << 30)
    monkeypatch.setattr(memory, "_cgroup_room", lambda root: None)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (1 << 40, resource.RLIM_INFINITY))
    room = memory.available_memory()
    assert 0 < room < 1 << 40  # the limit minus what this process has already mapped
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY,) * 2)
    assert memory.available_memory() == 64 << 30


def test_ulimit_v_refuses_n_12000_in_chinese_instead_of_crashing(tmp_path):
    """The issue's case: n = 12,000 under a 1 GB limit; a fresh process under `ulimit -v` gets the lesson's error."""
    import subprocess
    import sys

    code = (
        "import resource, numpy as np\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))\n"
        "from lesson_lib.attention import multi_head_attention\n"
        "x = np.zeros((12000, 8)); w = np.eye(8)\n"
        "try:\n    multi_head_attention(x, w, w, w, w, 2)\nexcept ValueError as e:\n    print(e)\n"
    )
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert_chinese_message(done.stdout, "(2, 12000, 12000)", "内存")


class _NoRoom(np.ndarray):
    """An array whose every operation fails the way numpy does when it cannot allocate."""

    def __array_ufunc__(self, *args, **kwargs):
        raise MemoryError


def test_memory_error_becomes_the_lessons_message(monkeypatch):
    monkeypatch.setattr(validation, "available_memory", lambda: None)  # no guard: numpy's own refusal is what counts
    x, ws = inputs(n=6)
    result = outcome(lambda: multi_head_attention(x.view(_NoRoom), *ws, H))
    assert_chinese(result, AttentionInputError, "(2, 6, 6)", "内存", "n")
    q = np.ones((5, 4)).view(_NoRoom)
    assert_chinese(outcome(lambda: scaled_dot_product_attention(q, q, q)), AttentionInputError, "(5, 5)", "内存")
