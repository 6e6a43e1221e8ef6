"""The per-head reference: ``lesson_lib.attention``'s multi-head attention written as the paper
defines it, one head at a time. The lesson never calls it; tests compare every kernel variant with
it and ``bench_attention.py`` times it (tests/conftest.py puts benchmarks/ on the import path)."""

from __future__ import annotations

import numpy as np

from lesson_lib.attention import _scaled_dot_product_attention
from lesson_lib.checks import check_mha, translated

__all__ = ["multi_head_attention_reference"]


@translated
def multi_head_attention_reference(x, w_q, w_k, w_v, w_o, h, mask=None):
    """The paper's definition, one head at a time: the naive loop the tests and benchmarks hold the
    batched kernel to (same checks, same ``(output, weights)``)."""
    x, w_q, w_k, w_v, w_o, h, mask = check_mha(x, w_q, w_k, w_v, w_o, h, mask)  # mask (…, h, n, n)
    return _multi_head_attention_reference(x, w_q, w_k, w_v, w_o, h, mask)  # out, weights


def _multi_head_attention_reference(x, w_q, w_k, w_v, w_o, h, mask=None):
    """head_i = Attention(X W_i^Q, X W_i^K, X W_i^V), one i at a time."""
    d_k = x.shape[-1] // h
    heads = []
    weights = []
    for i in range(h):
        block = slice(i * d_k, (i + 1) * d_k)  # head i owns columns [i·d_k, (i+1)·d_k)
        mask_i = None if mask is None else mask[..., i, :, :]  # (..., n, n)
        head_i, weights_i = _scaled_dot_product_attention(  # (..., n, d_v), (..., n, n)
            x @ w_q[:, block],  # (..., n, d_k)  X W_i^Q
            x @ w_k[:, block],  # (..., n, d_k)  X W_i^K
            x @ w_v[:, block],  # (..., n, d_v)  X W_i^V
            mask_i,
        )
        heads.append(head_i)  # (..., n, d_v)
        weights.append(weights_i)  # (..., n, n)
    concat = np.concatenate(heads, axis=-1)  # (..., n, h·d_v)
    return concat @ w_o, np.stack(weights, axis=-3)  # (..., n, d_model), (..., h, n, n)
