"""Scaled dot-product and multi-head attention, written as the paper's formulas.

Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V                      (eq. 1, §3.2.1)
MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)                 (§3.2.2)

Shape letters: n = tokens, d_model = model width, h = heads, d_k = d_v = d_model / h.
The paper's convention is row vectors times weights (``X W``); head i owns column block i of
each (d_model, d_model) projection matrix.

This file holds the formulas and nothing else: each function first hands its arguments to
``lesson_lib.kernel.validation`` (the same checks for every variant; bad input raises
``AttentionInputError``, a ``ValueError`` with a Chinese message), then computes the formula line
by line. A faster variant with the same results lives in ``lesson_lib.kernel.attention_fast``.

Every function returns ``(output, weights)`` so plots and widgets read the weights from the same
call that computed the output.
"""

from __future__ import annotations

import math

import numpy as np

from .validation import AttentionInputError, check_heads, check_logits, check_merge, check_mha, check_qkv, check_split

__all__ = [
    "AttentionInputError",
    "softmax",
    "scaled_dot_product_attention",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "multi_head_attention_reference",
    "head_width",
]


def softmax(x, axis=-1):
    """softmax(x)_j = exp(x_j) / Σ_k exp(x_k) along ``axis``.

    Subtracting each row's maximum first gives the same value and keeps exp() from overflowing.
    """
    x, axis = check_logits(x, axis)  # (..., n) a float array; no NaN, no +inf, no row of only −inf
    shifted = x - x.max(axis=axis, keepdims=True)  # (..., n) each row's largest logit becomes 0
    e = np.exp(shifted)  # (..., n) every entry in [0, 1]
    return e / e.sum(axis=axis, keepdims=True)  # (..., n) rows sum to 1


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ / √d_k) V.  [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v] -> (out, weights).

    ``mask`` is a boolean "may attend" array broadcastable to the scores ``(..., n_q, n_k)``.
    Returns ``out`` of shape ``(..., n_q, d_v)`` and ``weights`` of shape ``(..., n_q, n_k)``.
    """
    q, k, v, mask = check_qkv(q, k, v, mask)  # (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v), mask or None
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k) forbidden keys get weight 0
    weights = softmax(scores, axis=-1)  # (..., n_q, n_k) each row sums to 1
    return weights @ v, weights  # (..., n_q, d_v), (..., n_q, n_k)


def split_heads(x, h):
    """Cut the feature axis into h heads: (..., n, d_model) -> (..., h, n, d_k)."""
    x, h = check_split(x, h)  # (..., n, d_model) with h dividing d_model
    *lead, n, d_model = x.shape
    x = x.reshape(*lead, n, h, d_model // h)  # (..., n, h, d_k) column block i -> head i
    return np.swapaxes(x, -2, -3)  # (..., h, n, d_k) heads first, so each is one matrix


def merge_heads(x):
    """Concat(head_1, …, head_h): (..., h, n, d_k) -> (..., n, h·d_k), the inverse of split_heads."""
    x = check_merge(x)  # (..., h, n, d_k)
    *lead, h, n, d_k = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., n, h, d_k) tokens first again
    return x.reshape(*lead, n, h * d_k)  # (..., n, d_model) heads side by side


def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """Self-attention with h heads: (..., n, d_model) -> (out (..., n, d_model), weights (..., h, n, n))."""
    x, w_q, w_k, w_v, w_o, h, mask = check_mha(x, w_q, w_k, w_v, w_o, h, mask)  # X (..., n, d_model); W (d, d)
    q = split_heads(x @ w_q, h)  # (..., h, n, d_k)   Q W_i^Q for every i at once
    k = split_heads(x @ w_k, h)  # (..., h, n, d_k)   K W_i^K
    v = split_heads(x @ w_v, h)  # (..., h, n, d_v)   V W_i^V
    heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (..., h, n, d_v), (..., h, n, n)
    return merge_heads(heads) @ w_o, weights  # (..., n, d_model)  Concat(head_i) W^O


def multi_head_attention_reference(x, w_q, w_k, w_v, w_o, h, mask=None):
    """The paper's definition, one head at a time: a plain loop kept beside the batched version."""
    x, w_q, w_k, w_v, w_o, h, mask = check_mha(x, w_q, w_k, w_v, w_o, h, mask)  # mask (..., h, n, n) or None
    d_k = x.shape[-1] // h
    heads, weights = [], []
    for i in range(h):
        block = slice(i * d_k, (i + 1) * d_k)  # head i owns columns [i·d_k, (i+1)·d_k)
        mask_i = None if mask is None else mask[..., i, :, :]  # (..., n, n)
        head_i, weights_i = scaled_dot_product_attention(  # (..., n, d_v), (..., n, n)
            x @ w_q[:, block],  # (..., n, d_k)  X W_i^Q
            x @ w_k[:, block],  # (..., n, d_k)  X W_i^K
            x @ w_v[:, block],  # (..., n, d_v)  X W_i^V
            mask_i,
        )
        heads.append(head_i)  # (..., n, d_v)
        weights.append(weights_i)  # (..., n, n)
    concat = np.concatenate(heads, axis=-1)  # (..., n, h·d_v)
    return concat @ w_o, np.stack(weights, axis=-3)  # (..., n, d_model), (..., h, n, n)


def head_width(d_model, h):
    """d_k = d_model / h, with the learner-facing error when h does not divide d_model."""
    return d_model // check_heads(d_model, h)  # d_k (an int)
