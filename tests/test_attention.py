"""lesson_lib.attention: parity of the three kernels, the paper's identities as properties, Chinese input errors."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from attention_fast import multi_head_attention_fast
from attention_reference import multi_head_attention_reference
from helpers import assert_chinese_message, causal, make_inputs
from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib import attention as att
from lesson_lib.attention import (
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from lesson_lib.checks import AttentionInputError

KERNELS = [multi_head_attention, multi_head_attention_reference, multi_head_attention_fast]
KERNEL_IDS = ["readable", "reference", "fast"]
PROPS = settings(max_examples=25, deadline=None)


def assert_chinese_error(excinfo, *fragments):
    """The error is an AttentionInputError (a ValueError), in Chinese, and names the numbers involved."""
    err = excinfo.value
    assert isinstance(err, AttentionInputError) and isinstance(err, ValueError)
    assert_chinese_message(str(err), *fragments)


# ---------------------------------------------------------------------------------------------
# Parity: readable kernel == per-head reference == fast path
# ---------------------------------------------------------------------------------------------

SIZES = [(1, 1, 1), (1, 4, 2), (4, 8, 1), (4, 8, 8), (5, 12, 3), (7, 16, 4), (6, 6, 6), (10, 64, 8), (9, 32, 32)]


@pytest.mark.parametrize("use_mask", [False, True], ids=["no-mask", "causal"])
@pytest.mark.parametrize("lead", [(), (3,), (2, 2)], ids=["unbatched", "batch3", "batch2x2"])
@pytest.mark.parametrize(("n", "d_model", "h"), SIZES)
def test_kernels_agree_float64(n, d_model, h, lead, use_mask):
    x, ws = make_inputs(n, d_model, lead, seed=n * 100 + d_model + h)
    mask = causal(n) if use_mask else None
    out, weights = multi_head_attention(x, *ws, h, mask=mask)
    assert out.shape == (*lead, n, d_model)
    assert weights.shape == (*lead, h, n, n)
    assert out.dtype == weights.dtype == np.float64
    for kernel in (multi_head_attention_reference, multi_head_attention_fast):
        out_k, weights_k = kernel(x, *ws, h, mask=mask)
        assert out_k.shape == out.shape and weights_k.shape == weights.shape
        np.testing.assert_allclose(out_k, out, rtol=0, atol=1e-12, err_msg=kernel.__name__)
        np.testing.assert_allclose(weights_k, weights, rtol=0, atol=1e-12, err_msg=kernel.__name__)
    if use_mask:
        assert np.all(weights[..., ~causal(n)] == 0.0)  # forbidden keys get exactly zero weight


@pytest.mark.parametrize("mask_kind", ["per-head", "per-batch", "full"])
def test_kernels_agree_with_broadcast_masks(mask_kind):
    n, d_model, h, b = 6, 12, 3, 2
    x, ws = make_inputs(n, d_model, (b,), seed=7)
    rng = np.random.default_rng(1)
    shape = {"per-head": (h, n, n), "per-batch": (b, 1, n, n), "full": (b, h, n, n)}[mask_kind]
    mask = rng.random(shape) < 0.5
    mask |= np.eye(n, dtype=bool)  # every query may at least see itself
    results = [kernel(x, *ws, h, mask=mask) for kernel in KERNELS]
    for out_k, weights_k in results[1:]:
        np.testing.assert_allclose(out_k, results[0][0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights_k, results[0][1], rtol=0, atol=1e-12)
    assert np.all(results[0][1][np.broadcast_to(~mask, (b, h, n, n))] == 0.0)


@pytest.mark.parametrize("use_mask", [False, True], ids=["no-mask", "causal"])
@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_float32_stays_float32(kernel, use_mask):
    n, d_model, h = 5, 8, 2
    x, ws = make_inputs(n, d_model, (2,), dtype=np.float32)
    out, weights = kernel(x, *ws, h, mask=causal(n) if use_mask else None)
    assert out.dtype == np.float32
    assert weights.dtype == np.float32
    ref_out, ref_weights = multi_head_attention_reference(
        x.astype(np.float64), *(w.astype(np.float64) for w in ws), h, mask=causal(n) if use_mask else None
    )
    np.testing.assert_allclose(out, ref_out, atol=1e-5)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-5)


def test_scaled_dot_product_attention_float32_and_batched():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, n, 4)).astype(np.float32) for n in (5, 6, 6))
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 5, 4) and weights.shape == (2, 3, 5, 6)
    assert out.dtype == weights.dtype == np.float32
    expected = softmax(q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) / 2.0)
    np.testing.assert_allclose(weights, expected, atol=1e-6)
    np.testing.assert_allclose(out, expected @ v.astype(np.float64), atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Properties (hypothesis draws sizes and seeds; arrays come from a seeded generator)
# ---------------------------------------------------------------------------------------------

sizes = st.tuples(st.integers(1, 8), st.integers(1, 4), st.integers(1, 6))  # n, d_k, h
seeds = st.integers(0, 2**32 - 1)


@PROPS
@given(sizes, seeds, st.booleans())
def test_weight_rows_are_distributions(size, seed, use_mask):
    n, d_k, h = size
    x, ws = make_inputs(n, d_k * h, (2,), seed=seed, scale=3.0)
    for kernel in KERNELS:
        _, weights = kernel(x, *ws, h, mask=causal(n) if use_mask else None)
        assert np.all(weights >= 0.0)
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@PROPS
@given(sizes, seeds, st.data())
def test_permutation_equivariance_without_mask(size, seed, data):
    n, d_k, h = size
    perm = np.array(data.draw(st.permutations(range(n))))
    x, ws = make_inputs(n, d_k * h, seed=seed)
    for kernel in KERNELS:
        out, weights = kernel(x, *ws, h)
        out_p, weights_p = kernel(x[perm], *ws, h)
        np.testing.assert_allclose(out_p, out[perm], rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights_p, weights[:, perm][:, :, perm], rtol=0, atol=1e-12)


@PROPS
@given(st.integers(1, 8), st.integers(1, 12), seeds, st.booleans())
def test_one_head_is_single_head_attention(n, d_model, seed, use_mask):
    x, (w_q, w_k, w_v, w_o) = make_inputs(n, d_model, seed=seed)
    mask = causal(n) if use_mask else None
    head, head_weights = scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask=mask)
    for kernel in KERNELS:
        out, weights = kernel(x, w_q, w_k, w_v, w_o, 1, mask=mask)
        assert weights.shape == (1, n, n)
        np.testing.assert_allclose(out, head @ w_o, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights[0], head_weights, rtol=0, atol=1e-12)


@PROPS
@given(sizes, seeds)
def test_concat_then_w_o_is_sum_of_per_head_blocks(size, seed):
    """Concat(head_1..h) W^O == Σ_i head_i W^O_i with W^O_i the i-th block of d_v rows: heads meet only in W^O."""
    n, d_k, h = size
    d_model = d_k * h
    x, (w_q, w_k, w_v, w_o) = make_inputs(n, d_model, seed=seed)
    heads, _ = scaled_dot_product_attention(split_heads(x @ w_q, h), split_heads(x @ w_k, h), split_heads(x @ w_v, h))
    assert heads.shape == (h, n, d_k)
    concat = merge_heads(heads) @ w_o
    blocks = sum(heads[i] @ w_o[i * d_k : (i + 1) * d_k] for i in range(h))
    np.testing.assert_allclose(concat, blocks, rtol=0, atol=1e-12)
    np.testing.assert_allclose(multi_head_attention(x, w_q, w_k, w_v, w_o, h)[0], blocks, rtol=0, atol=1e-12)


@PROPS
@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 6), st.integers(1, 5), st.integers(1, 5), seeds)
def test_split_and_merge_heads_are_inverses(lead, n, d_k, h, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((*lead, n, d_k * h))
    split = split_heads(x, h)
    assert split.shape == (*lead, h, n, d_k)
    for i in range(h):  # head i owns column block i
        np.testing.assert_array_equal(split[..., i, :, :], x[..., i * d_k : (i + 1) * d_k])
    np.testing.assert_array_equal(merge_heads(split), x)
    y = rng.standard_normal((*lead, h, n, d_k))
    np.testing.assert_array_equal(split_heads(merge_heads(y), h), y)


@PROPS
@given(st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=8), st.floats(-1e4, 1e4))
def test_softmax_is_finite_normalised_and_shift_invariant(logits, shift):
    x = np.array(logits)
    p = softmax(x)
    assert np.all(np.isfinite(p)) and np.all(p >= 0.0)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(softmax(x + shift), p, rtol=0, atol=1e-9)
    assert p[int(np.argmax(x))] == p.max()


def test_softmax_extreme_logits_are_exact():
    np.testing.assert_array_equal(softmax(np.array([1e4, 0.0])), [1.0, 0.0])
    np.testing.assert_array_equal(softmax(np.array([-1e4, 0.0])), [0.0, 1.0])
    np.testing.assert_array_equal(softmax(np.array([1e4, -1e4, 1e4])), [0.5, 0.0, 0.5])
    np.testing.assert_allclose(softmax(np.array([1e4, 1e4 + np.log(3.0)])), [0.25, 0.75], rtol=1e-9)
    p32 = softmax(np.array([[1e4, 0.0], [0.0, -1e4]], dtype=np.float32))
    assert p32.dtype == np.float32
    np.testing.assert_array_equal(p32, [[1.0, 0.0], [1.0, 0.0]])
    m = np.array([[1.0, 2.0], [3.0, 3.0]])
    np.testing.assert_allclose(softmax(m, axis=0), softmax(m.T).T, rtol=0, atol=1e-15)
    np.testing.assert_allclose(softmax(m)[0], [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-14)


@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_no_runtime_warning_for_valid_extreme_inputs(kernel, dtype):
    """Huge scores (one-hot weights), tiny inputs, masks that leave one key per row: no warning, no NaN."""
    n, d_model, h = 6, 8, 2
    cases = [
        make_inputs(n, d_model, seed=1, dtype=dtype, scale=1e3),  # scores ~1e6: softmax saturates
        make_inputs(n, d_model, seed=2, dtype=dtype, scale=1e-30),  # scores underflow to ~0: uniform weights
    ]
    masks = [None, causal(n), np.eye(n, dtype=bool)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, ws in cases:
            for mask in masks:
                out, weights = kernel(x, *ws, h, mask=mask)
                assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
                np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
        x, ws = make_inputs(n, d_model, dtype=dtype)
        _, weights = kernel(x, *ws, h, mask=np.eye(n, dtype=bool))
        np.testing.assert_array_equal(weights, np.broadcast_to(np.eye(n), (h, n, n)))
        p = softmax(np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=dtype))
        assert np.all(np.isfinite(p))


# ---------------------------------------------------------------------------------------------
# Bad input: AttentionInputError (a ValueError) with a Chinese message that names the numbers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_d_model_not_divisible_by_h(kernel):
    x, ws = make_inputs(3, 510)
    with pytest.raises(ValueError) as excinfo:
        kernel(x, *ws, 8)
    assert_chinese_error(excinfo, "d_model=510", "h=8")


def test_split_heads_and_head_width_not_divisible():
    with pytest.raises(ValueError) as excinfo:
        split_heads(np.zeros((3, 510)), 8)
    assert_chinese_error(excinfo, "d_model=510", "h=8")
    with pytest.raises(ValueError) as excinfo:
        att.head_width(12, 5)
    assert_chinese_error(excinfo, "d_model=12", "h=5")
    assert att.head_width(512, 8) == 64


@pytest.mark.parametrize("h", [0, -1, 2.5, True, "8", None, 2.0], ids=repr)
@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_h_must_be_a_positive_integer(kernel, h):
    x, ws = make_inputs(3, 8)
    with pytest.raises(ValueError) as excinfo:
        kernel(x, *ws, h)
    assert_chinese_error(excinfo, str(h))
    with pytest.raises(ValueError) as excinfo:
        split_heads(x, h)
    assert_chinese_error(excinfo, str(h))


def test_numpy_integer_h_is_accepted():
    x, ws = make_inputs(3, 8)
    _, weights = multi_head_attention(x, *ws, np.int64(4))
    assert weights.shape == (4, 3, 3)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("where", [0, 1, 2, 3, 4], ids=["X", "W_Q", "W_K", "W_V", "W_O"])
@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_nan_or_inf_in_input_or_weights(kernel, where, bad):
    x, ws = make_inputs(4, 8)
    arrays = [x, *ws]
    arrays[where] = arrays[where].copy()
    arrays[where][1, 2] = bad
    arrays[where][0, 0] = bad
    name = ["X", "W_Q", "W_K", "W_V", "W_O"][where]
    with pytest.raises(ValueError) as excinfo:
        kernel(*arrays, 2)
    assert_chinese_error(excinfo, name, "NaN", "inf")
    assert re.search(r"\b2\D+NaN", str(excinfo.value))  # how many bad numbers it found


@pytest.mark.parametrize("which", [0, 1, 2], ids=["Q", "K", "V"])
def test_nan_in_q_k_v(which):
    arrays = [np.ones((3, 4)) for _ in range(3)]
    arrays[which][2, 1] = np.nan
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(*arrays)
    assert_chinese_error(excinfo, "QKV"[which], "NaN", "inf")
    assert re.search(r"\b1\D+NaN", str(excinfo.value))


def test_q_k_width_mismatch():
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(np.ones((3, 4)), np.ones((5, 6)), np.ones((5, 2)))
    assert_chinese_error(excinfo, "d_k=4", "6")


def test_k_v_length_mismatch():
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(np.ones((3, 4)), np.ones((5, 4)), np.ones((7, 2)))
    assert_chinese_error(excinfo, "5", "7")


@pytest.mark.parametrize(
    "shapes", [((2, 4, 3), (3, 4, 3), (3, 4, 3)), ((2, 4, 3), (2, 4, 3), (3, 4, 3))], ids=["q-vs-k", "k-vs-v"]
)
def test_q_k_v_batch_dims_that_do_not_broadcast(shapes):
    q, k, v = (np.ones(s) for s in shapes)
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(q, k, v)
    assert_chinese_error(excinfo, "2", "3")


@pytest.mark.parametrize("value", [3.0, np.float64(2.0)], ids=["float", "np-scalar"])
def test_scalar_input(value):
    x, ws = make_inputs(3, 4)
    for kernel in KERNELS:
        with pytest.raises(ValueError) as excinfo:
            kernel(value, *ws, 2)
        assert_chinese_error(excinfo, "X", str(value))  # the scalar it got
        with pytest.raises(ValueError) as excinfo:
            kernel(x, value, *ws[1:], 2)
        assert_chinese_error(excinfo, "W_Q")
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(value, np.ones((3, 4)), np.ones((3, 4)))
    assert_chinese_error(excinfo, "Q", str(value))


def test_one_dimensional_input():
    _, ws = make_inputs(3, 4)
    for kernel in KERNELS:
        with pytest.raises(ValueError) as excinfo:
            kernel(np.ones(4), *ws, 2)
        assert_chinese_error(excinfo, "X", "(4,)")
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(np.ones((3, 4)), np.ones(4), np.ones((3, 4)))
    assert_chinese_error(excinfo, "K", "(4,)")
    with pytest.raises(ValueError) as excinfo:
        merge_heads(np.ones((2, 3)))
    assert_chinese_error(excinfo, "(2, 3)")


@pytest.mark.parametrize("x", [np.ones(4), np.float64(4.0)], ids=["1-D", "scalar"])
def test_split_heads_rejects_scalar_and_1d(x):
    with pytest.raises(ValueError) as excinfo:
        split_heads(x, 2)
    assert_chinese_error(excinfo, str(np.shape(x)))


@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_non_numeric_and_ragged_input(kernel):
    _, ws = make_inputs(2, 2)
    with pytest.raises(ValueError) as excinfo:
        kernel(np.array([["a", "b"], ["c", "d"]]), *ws, 1)
    assert_chinese_error(excinfo, "X", "<U1")
    text = str(excinfo.value)
    with pytest.raises(ValueError) as excinfo:
        kernel([[1.0, 2.0], [3.0]], *ws, 1)
    assert_chinese_error(excinfo, "X")
    ragged = str(excinfo.value)
    with pytest.raises(ValueError) as excinfo:
        kernel(np.ones((2, 2)) * 1j, *ws, 1)
    assert_chinese_error(excinfo, "X")
    assert len({text, ragged, str(excinfo.value)}) == 3  # complex numbers get their own diagnosis


@pytest.mark.parametrize(
    ("where", "shape"),
    [(0, (8, 4)), (1, (4, 8)), (2, (8,)), (3, (8, 8, 1))],
    ids=["W_Q", "W_K", "W_V", "W_O"],
)
@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_wrong_weight_shape(kernel, where, shape):
    x, ws = make_inputs(3, 8)
    ws[where] = np.ones(shape)
    with pytest.raises(ValueError) as excinfo:
        kernel(x, *ws, 2)
    assert_chinese_error(excinfo, ["W_Q", "W_K", "W_V", "W_O"][where], str(shape), "(8, 8)")


@pytest.mark.parametrize("mask_shape", [(4, 5), (5, 4), (3, 4, 4), (3, 1, 4), (2, 2, 4, 4)], ids=str)
@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_mask_of_wrong_shape(kernel, mask_shape):
    x, ws = make_inputs(4, 8)  # n = 4, h = 2
    with pytest.raises(ValueError) as excinfo:
        kernel(x, *ws, 2, mask=np.ones(mask_shape, dtype=bool))
    assert_chinese_error(excinfo, "mask", str(mask_shape))


def test_sdpa_mask_of_wrong_shape():
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(np.ones((3, 2)), np.ones((5, 2)), np.ones((5, 2)), mask=np.ones((3, 3), bool))
    assert_chinese_error(excinfo, "(3, 3)", "(3, 5)")


@pytest.mark.parametrize(
    "mask", [np.ones((4, 4), dtype=int), np.ones((4, 4)), np.tril(np.ones((4, 4)))], ids=["int", "float", "tril-float"]
)
@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_mask_not_boolean(kernel, mask):
    x, ws = make_inputs(4, 8)
    with pytest.raises(ValueError) as excinfo:
        kernel(x, *ws, 2, mask=mask)
    assert_chinese_error(excinfo, "mask", str(mask.dtype))


@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_mask_row_with_no_key_is_an_error_not_nan(kernel):
    x, ws = make_inputs(4, 8, (2,))
    mask = causal(4)
    mask[2] = False  # query 2 may attend to nothing: softmax would be 0/0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as excinfo:
            kernel(x, *ws, 2, mask=mask)
    assert_chinese_error(excinfo, "(0, 0, 2)")


def test_sdpa_mask_row_with_no_key_is_an_error_not_nan():
    mask = np.array([[True, False], [False, False]])
    with pytest.raises(ValueError) as excinfo:
        scaled_dot_product_attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), mask=mask)
    assert_chinese_error(excinfo, "(1,)", "NaN")


@pytest.mark.parametrize(("n", "d_model"), [(0, 4), (3, 0)], ids=["n=0", "d_model=0"])
@pytest.mark.parametrize("kernel", KERNELS, ids=KERNEL_IDS)
def test_empty_input(kernel, n, d_model):
    x = np.zeros((n, d_model))
    ws = [np.eye(d_model) for _ in range(4)]
    with pytest.raises(ValueError) as excinfo:
        kernel(x, *ws, 1 if d_model == 0 else 2)
    assert_chinese_error(excinfo, str(x.shape))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_properties_hold_on_every_axis(dtype, axis):
    """On any axis, with −inf entries (masked keys): the dtype kept, masked weights exactly 0, each slice sums
    to 1, adding a constant to a slice changes nothing, order kept, and the same as softmax on the last axis."""
    rng = np.random.default_rng(3)
    atol = 1e-5 if dtype == np.float32 else 1e-12
    for n in (1, 2, 12, 16, 40):
        shape = [5, 7, 4]
        shape[axis] = n
        x = (rng.standard_normal(shape) * 30).astype(dtype)
        if n > 1:
            np.moveaxis(x, axis, -1)[..., 0] = -np.inf  # masked keys, as the kernel's mask produces
        p = softmax(x, axis=axis)
        assert p.dtype == dtype
        assert np.all(p[np.isneginf(x)] == 0.0) and np.all(p >= 0.0)
        np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=0, atol=atol)
        shift = (rng.standard_normal(p.sum(axis=axis, keepdims=True).shape) * 50).astype(dtype)
        np.testing.assert_allclose(softmax(x + shift, axis=axis), p, rtol=0, atol=atol)
        last = np.moveaxis(softmax(np.moveaxis(x, axis, -1)), -1, axis)
        np.testing.assert_array_equal(p, last)
        finite = np.moveaxis(x, axis, -1)[..., 1:]
        order = np.argsort(finite, axis=-1, kind="stable")
        ranked = np.take_along_axis(np.moveaxis(p, axis, -1)[..., 1:], order, axis=-1)
        assert np.all(np.diff(ranked, axis=-1) >= 0)  # a larger logit never gets a smaller weight
