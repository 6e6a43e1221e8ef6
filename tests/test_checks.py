"""lesson_lib.checks: every bad input, run through every kernel variant, gives one Chinese error.

The tables below hold the input and the expected error (its class, and the argument or value it must name)
or result. Each multi-head row runs through the readable kernel, the per-head reference and the fast path,
and they must raise the same class with the same message (or return the same dtype and numbers). Every kernel
function gives the same result or error whoever calls it: a learner, or another lesson function.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from attention_fast import multi_head_attention_fast
from attention_reference import multi_head_attention_reference
from helpers import assert_chinese_message, scaled
from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib import attention, checks
from lesson_lib.attention import (
    multi_head_attention,
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

LESSON_KERNELS = [multi_head_attention, multi_head_attention_reference]
KERNELS = [*LESSON_KERNELS, multi_head_attention_fast]
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


def run_all(x, ws, h=H, mask=None, kernels=KERNELS):
    """The outcome of every kernel variant; asserts they agree and returns the common one."""
    results = [outcome(lambda k=k: k(x, *ws, h, mask=mask)) for k in kernels]
    first = results[0]
    for kernel, result in zip(kernels[1:], results[1:]):
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


# (id, (x, ws), error class, the argument or value the message must name)
BAD_MHA = [
    ("X=[]", _with(0, []), AttentionInputError, ["X", "(0,)"]),
    ("X (3,0)", _with(0, np.zeros((3, 0))), AttentionInputError, ["X", "(3, 0)"]),
    ("X (0,5,8)", _with(0, np.zeros((0, 5, 8))), AttentionInputError, ["X", "(0, 5, 8)"]),
    ("X None", _with(0, None), AttentionInputTypeError, ["X", "None"]),
    ("X str", _with(0, "小明把苹果递给了小红"), AttentionInputTypeError, ["X", "小明把苹果递给了小红"]),
    ("X object", _with(0, np.array([[1.0, None]] * 4, dtype=object)), AttentionInputTypeError, ["X", "object"]),
    ("W_K None", _with(2, None), AttentionInputTypeError, ["W_K", "None"]),
    ("W_V str", _with(3, "abc"), AttentionInputTypeError, ["W_V"]),
    ("W_Q (4, 8)", _with(1, np.ones((4, 8))), AttentionInputError, ["W_Q", "(4, 8)", "(8, 8)"]),
    ("X masked", _with(0, lambda a: _masked(a, True)), AttentionInputError, ["X", "numpy.ma", "1"]),
    ("W_O masked", _with(4, lambda a: _masked(a, True)), AttentionInputError, ["W_O", "numpy.ma"]),
    ("X longdouble", _with(0, lambda a: a.astype(np.longdouble)), AttentionInputTypeError, ["X", "float64"]),
    ("X complex", _with(0, lambda a: a * 1j), AttentionInputError, ["X"]),
    ("X NaN", _with(0, lambda a: np.where(np.eye(*a.shape, dtype=bool), np.nan, a)), AttentionInputError,
     ["X", "NaN"]),
    ("W_Q -inf", _with(1, lambda a: np.where(np.eye(*a.shape, dtype=bool), -np.inf, a)), AttentionInputError,
     ["W_Q", "inf"]),
    ("h=3 of d_model=8", (*inputs(), 3), AttentionInputError, ["d_model=8", "h=3", "[1, 2, 4, 8]"]),
]

# finite inputs whose intermediates overflow the dtype: numpy reports it, the lesson names the dtype
OVERFLOWS = [
    ("float64 X×1e154", inputs(x_scale=1e154), "float64"),
    ("float64 W×1e160", inputs(w_scale=1e160), "float64"),
    ("float32 X×1e19", inputs(np.float32, x_scale=1e19), "float32"),
    ("float32 X×1e38", inputs(np.float32, x_scale=1e38), "float32"),
    ("float16 X×1e4", inputs(np.float16, x_scale=1e4), "float16"),
    ("float16 values 200", (np.full((N, D), 200, np.float16), [np.full((D, D), 0.5, np.float16)] * 4), "float16"),
]


@pytest.mark.parametrize(("xw", "cls", "fragments"), [row[1:] for row in BAD_MHA], ids=[row[0] for row in BAD_MHA])
def test_bad_multi_head_input_same_chinese_error_from_every_variant(xw, cls, fragments):
    x, ws, *h = xw
    assert_chinese(run_all(x, ws, *h), cls, *fragments)


@pytest.mark.parametrize(("xw", "dtype"), [row[1:] for row in OVERFLOWS], ids=[row[0] for row in OVERFLOWS])
def test_overflow_is_an_error_naming_the_dtype_never_a_nan(xw, dtype):
    x, ws = xw
    assert_chinese(run_all(x, ws, kernels=LESSON_KERNELS), AttentionInputError, dtype)


def test_overflow_is_translated_without_a_warning_and_leaves_numpy_settings_alone():
    """numpy reports the overflow (errstate inside the call); the learner sees only the Chinese error, no
    RuntimeWarning and no NaN, and their own np.seterr settings are the same afterwards."""
    import warnings

    x, ws = inputs(x_scale=1e154)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        with pytest.raises(AttentionInputError, match="float64"):
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
    """Over the whole range of the dtype: the lesson's kernels return finite numbers or both raise the overflow
    error; the benchmarks' fast path (it scales Q before the product) may compute where they overflow, never NaN."""
    top = np.log10(float(np.finfo(dtype).max))
    with np.errstate(over="ignore"):  # a scale beyond the dtype gives inf inputs: skipped below
        x, ws = inputs(dtype, x_scale=10.0 ** (x_exp * top), w_scale=10.0 ** (w_exp * top / 2), seed=seed)
    if not (np.isfinite(x).all() and all(np.isfinite(w).all() for w in ws)):
        return  # the scaling itself overflowed the dtype: that is the NaN/inf check, tested above
    for result in (run_all(x, ws, kernels=LESSON_KERNELS), outcome(lambda: multi_head_attention_fast(x, *ws, H))):
        if result[0] == "ok":
            out, weights = result[1]
            assert np.isfinite(out).all() and np.isfinite(weights).all()
        else:
            assert_chinese(result, AttentionInputError, np.dtype(dtype).name)


# ---------------------------------------------------------------------------------------------
# Size guard
# ---------------------------------------------------------------------------------------------


def test_two_hundred_thousand_tokens_are_refused_in_chinese_with_the_memory_needed():
    x = np.zeros((200_000, D))  # 12.8 MB: the input fits, its (h, n, n) weights (640 GB) do not
    ws = [np.eye(D)] * 4
    assert_chinese(run_all(x, ws), AttentionInputError, "(2, 200000, 200000)", "200,000", "GB")
    with pytest.raises(AttentionInputError, match="200000"):
        scaled_dot_product_attention(x, x, x)


def test_size_guard_compares_with_the_free_memory(monkeypatch):
    x, ws = inputs(n=64)
    weights_bytes = 2 * 64 * 64 * 8  # (h, n, n) float64
    monkeypatch.setattr(checks, "_ALWAYS_FITS", 0)  # look at the free memory even for small sizes
    monkeypatch.setattr(checks, "free_memory", lambda: weights_bytes)  # room for the weights only
    assert_chinese(run_all(x, ws), AttentionInputError, "(2, 64, 64)", "64.0 KB")
    monkeypatch.setattr(checks, "free_memory", lambda: 100 * weights_bytes)
    assert run_all(x, ws)[0] == "ok"
    monkeypatch.setattr(checks, "free_memory", lambda: None)  # unknown (not Linux): no guard, MemoryError translated
    assert run_all(x, ws)[0] == "ok"


# ---------------------------------------------------------------------------------------------
# softmax and scaled_dot_product_attention
# ---------------------------------------------------------------------------------------------

BAD_SOFTMAX = [
    ("[]", [], {}, AttentionInputError, ["(0,)"]),
    ("(3,0)", np.zeros((3, 0)), {}, AttentionInputError, ["(3, 0)"]),
    ("scalar", 3.0, {}, AttentionInputError, ["3.0"]),
    ("None", None, {}, AttentionInputTypeError, ["None"]),
    ("str", "abc", {}, AttentionInputTypeError, ["abc"]),
    ("object", np.array([1, "a", None], dtype=object), {}, AttentionInputTypeError, ["object"]),
    ("masked", _masked(np.ones((2, 3)), True), {}, AttentionInputError, ["numpy.ma"]),
    ("NaN", [1.0, np.nan, 2.0], {}, AttentionInputError, ["1 个 NaN"]),
    ("+inf", [[1.0, np.inf], [np.inf, 0.0]], {}, AttentionInputError, ["2 个 +inf"]),
    ("all -inf row", [[0.0, -np.inf], [-np.inf, -np.inf]], {}, AttentionInputError, ["(1,)"]),
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
    ("abc", AttentionInputTypeError, "abc"),
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
    assert_chinese(result, AttentionInputError, "float64")
    finite_q = outcome(lambda: scaled_dot_product_attention(np.full((3, 4), np.inf), q, np.ones((3, 2))))
    assert finite_q[1] != result[1]  # Q was finite: the message is about the product, not an inf in the input
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
    result = outcome(lambda: check_int(6, "n", minimum=1, maximum=5))
    assert_chinese(result, LessonInputError, "6")
    assert re.findall(r"\d+", result[1]) == ["1", "5", "6"]  # the range, then what it got
    assert_chinese(outcome(lambda: check_int(2, "h", error=AttentionInputError, minimum=3)), AttentionInputError)
    assert_chinese(outcome(lambda: check_int("2", "h", error=AttentionInputError)), AttentionInputTypeError)


def test_check_number_and_check_choice():
    name = "锐度"
    assert check_number(3, name, minimum=0, maximum=10) == 3.0
    for bad, cls in ((11, LessonInputError), (float("nan"), LessonInputError), ("4", LessonInputTypeError),
                     (True, LessonInputTypeError)):
        assert_chinese(outcome(lambda b=bad: check_number(b, name, minimum=0, maximum=10)), cls, name)
    assert check_choice(2, "heads", [1, 2]) == 2
    for bad in (3, 2.0, "2", True):
        assert_chinese(outcome(lambda b=bad: check_choice(b, "heads", [1, 2])), LessonInputError, "heads", "[1, 2]",
                       repr(bad))


# ---------------------------------------------------------------------------------------------
# Every argument of every public kernel function: the lesson's Chinese error, never numpy's English
# ---------------------------------------------------------------------------------------------

BAD_MASKS = [
    ("ragged list", [[True] * 4, [True]], AttentionInputError, ["mask", "[4, 1]"]),
    ("text", "abc", AttentionInputTypeError, ["mask", "abc"]),
    ("objects", np.array([[None] * 4] * 4, dtype=object), AttentionInputTypeError, ["mask", "object"]),
    ("floats", np.ones((4, 4)), AttentionInputError, ["mask", "float64"]),
    ("wrong shape", np.ones((3, 3), bool), AttentionInputError, ["mask", "(3, 3)", "4, 4)"]),
    ("masked entries", np.ma.masked_array(np.ones((4, 4), bool), mask=np.eye(4, dtype=bool)), AttentionInputError,
     ["mask", "numpy.ma"]),
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
    (lambda s: np.ones(s) * 1j, ["x"]),
    (lambda s: np.ones((*s[:-2], 0, s[-1])), ["x", "0"]),
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
    assert_chinese(result, AttentionInputError, "float16")
    p = softmax(np.zeros((2, 65_000), np.float16))  # the longest rows whose sum fits: computed, each sums to 1
    assert p.dtype == np.float16
    np.testing.assert_allclose(p.astype(np.float64).sum(axis=-1), 1.0, atol=2e-2)


# ---------------------------------------------------------------------------------------------
# The same result or error whoever calls: a learner, or another lesson function
# ---------------------------------------------------------------------------------------------


@checks.translated
def _lesson_function(fn, *args, **kwargs):
    """Stands for any lesson function (a section, the §7 model) that calls the kernel."""
    return fn(*args, **kwargs)


def _same(a, b):
    if a[0] != "ok" or b[0] != "ok":
        return a == b
    pairs = zip(a[1], b[1]) if isinstance(a[1], tuple) else [(a[1], b[1])]
    return all(np.array_equal(x, y) and np.asarray(x).dtype == np.asarray(y).dtype for x, y in pairs)


_X, _WS = inputs(n=4)
_MASK_2D = np.tril(np.ones((4, 4), bool))  # (n, n): broadcast to every head
CALLS = {
    "softmax list": (attention.softmax, [[1, 2, 3]], {}),
    "softmax NaN": (attention.softmax, [[1.0, np.nan]], {}),
    "sdpa lists, 2-D mask": (attention.scaled_dot_product_attention, [[[1, 0], [0, 1]]] * 3,
                             {"mask": [[True, False], [True, True]]}),
    "sdpa K of another n": (attention.scaled_dot_product_attention, [np.ones((2, 3)), np.ones((4, 3)), np.ones((2, 3))],
                            {}),
    "split_heads list": (attention.split_heads, [[[1.0, 2.0, 3.0, 4.0]], 2], {}),
    "split_heads h=3": (attention.split_heads, [np.ones((2, 4)), 3], {}),
    "merge_heads list": (attention.merge_heads, [[[[1.0, 2.0]], [[3.0, 4.0]]]], {}),
    "merge_heads 2-D": (attention.merge_heads, [np.ones((2, 4))], {}),
    "mha 2-D mask": (multi_head_attention, [_X, *_WS, H], {"mask": _MASK_2D}),
    "reference 2-D mask": (multi_head_attention_reference, [_X, *_WS, H], {"mask": _MASK_2D}),
    "reference list X, 2-D mask list": (multi_head_attention_reference, [_X.tolist(), *_WS, H],
                                        {"mask": _MASK_2D.tolist()}),
    "mha W_O None": (multi_head_attention, [_X, *_WS[:3], None, H], {}),
    "mha overflow": (multi_head_attention, [_X * 1e154, *_WS, H], {}),
    "head_width 8, 3": (attention.head_width, [8, 3], {}),
}


@pytest.mark.parametrize("name", CALLS)
def test_every_kernel_function_gives_the_same_result_whoever_calls_it(name):
    """Called by a learner, or from inside another lesson function: the same numbers, or the same error."""
    fn, args, kwargs = CALLS[name]
    direct = outcome(lambda: fn(*args, **kwargs))
    nested = outcome(lambda: _lesson_function(fn, *args, **kwargs))
    assert _same(direct, nested), (direct, nested)
    if direct[0] != "ok":
        assert issubclass(direct[0], ValueError) and "Error" not in direct[1], direct  # Chinese, not numpy's


def test_a_2d_mask_through_the_reference_gives_the_readable_kernels_numbers():
    """The reviewer's case: the per-head loop given an (n, n) mask, called from inside another lesson function."""
    out, weights = _lesson_function(multi_head_attention_reference, _X, *_WS, H, mask=_MASK_2D)
    ref_out, ref_weights = multi_head_attention(_X, *_WS, H, mask=_MASK_2D)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-12)
    assert (weights[..., ~_MASK_2D] == 0).all()


# ---------------------------------------------------------------------------------------------
# Memory: numpy's MemoryError (here under ulimit -v) is translated
# ---------------------------------------------------------------------------------------------


def test_ulimit_v_refuses_n_12000_in_chinese_instead_of_crashing(tmp_path):
    """n = 12,000 under a 1 GB `ulimit -v`: numpy cannot allocate, and the learner gets the lesson's error."""
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
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=scaled(120), env=env)
    assert done.returncode == 0, done.stderr
    assert_chinese_message(done.stdout, "12000")  # the size that did not fit, n


class _NoRoom(np.ndarray):
    """An array whose every operation fails the way numpy does when it cannot allocate."""

    def __array_ufunc__(self, *args, **kwargs):
        raise MemoryError


def test_memory_error_becomes_the_lessons_message():
    x, ws = inputs(n=6)
    result = outcome(lambda: multi_head_attention(x.view(_NoRoom), *ws, H))
    assert_chinese(result, AttentionInputError, "(6, 8)")
    q = np.ones((5, 4)).view(_NoRoom)
    assert_chinese(outcome(lambda: scaled_dot_product_attention(q, q, q)), AttentionInputError, "(5, 4)")


@pytest.mark.parametrize("h", [0, -4, 8.0])
def test_a_head_count_below_one_or_not_whole_is_offered_the_same_divisors_as_one_that_does_not_divide(h):
    """h = 0 says what to choose, as h = 3 does: the divisors of d_model."""
    with pytest.raises(AttentionInputError) as divides:
        attention.head_width(512, 3)
    with pytest.raises(AttentionInputError) as below:
        attention.head_width(512, h)
    offered = re.findall(r"\[[\d, ]+\]", str(divides.value))  # the list of heads to choose from
    assert offered and re.findall(r"\[[\d, ]+\]", str(below.value)) == offered
