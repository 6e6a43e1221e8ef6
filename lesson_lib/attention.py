"""Scaled dot-product and multi-head attention, written as the paper's formulas.

Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V                      (eq. 1, §3.2.1)
MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)                 (§3.2.2)

Shape letters: n = tokens, d_model = model width, h = heads, d_k = d_v = d_model / h.
The paper's convention is row vectors times weights (``X W``); head i owns column block i of
each (d_model, d_model) projection matrix.

Every function returns ``(output, weights)`` so plots and widgets read the weights from the same
call that computed the output. Bad input raises ``AttentionInputError`` (a ``ValueError``) whose
message is in Chinese, because learners call these functions from the notebook.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .blas import one_blas_thread
from .cpus import usable_cpus

__all__ = [
    "AttentionInputError",
    "softmax",
    "scaled_dot_product_attention",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "multi_head_attention_reference",
    "multi_head_attention_fast",
    "head_width",
]


class AttentionInputError(ValueError):
    """Input that the attention functions cannot use; the message says what to change."""


# ---------------------------------------------------------------------------------------------
# The formulas
# ---------------------------------------------------------------------------------------------


def softmax(x, axis=-1):
    """Numerically stable softmax: subtracting the row maximum keeps exp() from overflowing."""
    x = np.asanyarray(x)
    if x.ndim and x.shape[axis] <= _SHORT_ROW:
        return _softmax_short_rows(x, axis)  # same numbers, faster for many short rows (see below)
    shifted = x - x.max(axis=axis, keepdims=True)  # (..., n) each row's largest logit becomes 0
    e = np.exp(shifted)  # (..., n) every entry in (0, 1]
    return e / e.sum(axis=axis, keepdims=True)  # (..., n) rows sum to 1


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ / √d_k) V.  [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v] -> (out, weights).

    ``mask`` is a boolean "may attend" array broadcastable to the scores ``(..., n_q, n_k)``.
    Returns ``out`` of shape ``(..., n_q, d_v)`` and ``weights`` of shape ``(..., n_q, n_k)``.
    """
    q, k, v = _check_qkv(q, k, v)
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        mask = _check_mask(mask, scores.shape)
        scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k) forbidden keys get weight 0
    weights = softmax(scores, axis=-1)  # (..., n_q, n_k) each row sums to 1
    return weights @ v, weights  # (..., n_q, d_v), (..., n_q, n_k)


def split_heads(x, h):
    """Cut the feature axis into h heads: (..., n, d_model) -> (..., h, n, d_k)."""
    x = np.asanyarray(x)
    if x.ndim < 2:
        raise AttentionInputError(f"split_heads 需要形如 (..., n, d_model) 的至少 2 维数组，收到的形状是 {x.shape}。")
    h = _check_heads(x.shape[-1], h)
    *lead, n, d_model = x.shape
    x = x.reshape(*lead, n, h, d_model // h)  # (..., n, h, d_k) column block i -> head i
    return np.swapaxes(x, -2, -3)  # (..., h, n, d_k) heads first, so each is one matrix


def merge_heads(x):
    """Concat(head_1, …, head_h): (..., h, n, d_k) -> (..., n, h·d_k), the inverse of split_heads."""
    x = np.asanyarray(x)
    if x.ndim < 3:
        raise AttentionInputError(
            f"merge_heads 需要形如 (..., h, n, d_k) 的至少 3 维数组，收到的是 {x.ndim} 维 {x.shape}。"
        )
    *lead, h, n, d_k = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., n, h, d_k) tokens first again
    return x.reshape(*lead, n, h * d_k)  # (..., n, d_model) heads side by side


def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """Self-attention with h heads: (..., n, d_model) -> (out (..., n, d_model), weights (..., h, n, n))."""
    x, w_q, w_k, w_v, w_o, h = _check_mha(x, w_q, w_k, w_v, w_o, h)
    q = split_heads(x @ w_q, h)  # (..., h, n, d_k)   Q W_i^Q for every i at once
    k = split_heads(x @ w_k, h)  # (..., h, n, d_k)   K W_i^K
    v = split_heads(x @ w_v, h)  # (..., h, n, d_v)   V W_i^V
    heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (..., h, n, d_v), (..., h, n, n)
    return merge_heads(heads) @ w_o, weights  # (..., n, d_model)  Concat(head_i) W^O


def multi_head_attention_reference(x, w_q, w_k, w_v, w_o, h, mask=None):
    """The paper's definition, one head at a time: a plain loop kept beside the batched version."""
    x, w_q, w_k, w_v, w_o, h = _check_mha(x, w_q, w_k, w_v, w_o, h)
    d_k = x.shape[-1] // h
    n = x.shape[-2]
    full_mask = None if mask is None else _check_mask(mask, x.shape[:-2] + (h, n, n))
    heads, weights = [], []
    for i in range(h):
        block = slice(i * d_k, (i + 1) * d_k)  # head i owns columns [i·d_k, (i+1)·d_k)
        mask_i = None if full_mask is None else full_mask[..., i, :, :]  # (..., n, n)
        head_i, weights_i = scaled_dot_product_attention(
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
    return d_model // _check_heads(d_model, h)


# ---------------------------------------------------------------------------------------------
# A faster path with the same results (parity is tested against the two functions above)
# ---------------------------------------------------------------------------------------------

_SHORT_ROW = 16  # rows this short take the column-loop softmax below


def _softmax_short_rows(x, axis):
    """softmax for rows of ≤ 16 entries: the row max and sum as a loop over the columns.

    NumPy spends ~70 ns per row reducing a short last axis; with thousands of 12-token rows
    (section 7's training) that dominates. Putting the row axis first makes every column one
    contiguous array, so the few column-wise maxima and sums run at full SIMD speed. Parity with
    the plain formula is tested.
    """
    e = np.array(np.moveaxis(x, axis, 0), dtype=np.result_type(x.dtype, np.float32), subok=True)  # (n, ...)
    top = np.array(e[0], subok=True)  # (...,) running row maximum (0-d for a single row)
    for j in range(1, e.shape[0]):
        np.maximum(top, e[j], out=top)
    e -= top
    np.exp(e, out=e)  # (n, ...) every entry in (0, 1]
    np.copyto(e, 0, where=e < np.finfo(e.dtype).tiny)  # subnormals make every later product several
    total = np.array(e[0], subok=True)  # (...,) running row sum  # times slower, and are 0 to rounding
    for j in range(1, e.shape[0]):
        total += e[j]
    e /= total
    return np.moveaxis(e, 0, axis)  # (..., n) rows sum to 1


_BLOCK_BYTES = 512 * 1024  # one block of scores (rows × n) sized to stay in the L2 cache
_PARALLEL_MIN_TOKENS = 256  # below this, starting threads costs more than the blocks take


def multi_head_attention_fast(x, w_q, w_k, w_v, w_o, h, mask=None):
    """Same contract as ``multi_head_attention``, faster on long sequences.

    None of the changes alter the maths: Q, K, V come from one fused matmul; 1/√d_k is folded into
    Q (n·d multiplies instead of h·n²); and the scores are processed one head and one block of
    query rows at a time, so each block is exponentiated, normalised and multiplied by V in place
    while it is still in cache, and written straight into the returned weights array.
    """
    x, w_q, w_k, w_v, w_o, h = _check_mha(x, w_q, w_k, w_v, w_o, h)
    *lead, n, d_model = x.shape
    d_k = d_model // h
    full_mask = None if mask is None else _check_mask(mask, (*lead, h, n, n))
    qkv = x @ np.concatenate([w_q, w_k, w_v], axis=1)  # (..., n, 3·d_model)
    q, k, v = np.split(qkv, 3, axis=-1)  # 3 × (..., n, d_model)
    q = np.ascontiguousarray(split_heads(q * (1.0 / math.sqrt(d_k)), h))  # (..., h, n, d_k) pre-scaled
    k_t = np.ascontiguousarray(np.swapaxes(split_heads(k, h), -1, -2))  # (..., h, d_k, n)
    v = np.ascontiguousarray(split_heads(v, h))  # (..., h, n, d_v)
    weights = np.empty((*lead, h, n, n), dtype=qkv.dtype)  # (..., h, n, n)
    heads = np.empty((*lead, h, n, d_k), dtype=qkv.dtype)  # (..., h, n, d_v)
    rows_per_block = max(16, _BLOCK_BYTES // (n * qkv.dtype.itemsize))
    with one_blas_thread():  # the blocks are small: a second BLAS thread costs more in waiting than it saves
        _blocked_softmax_attention(q, k_t, v, full_mask, weights, heads, rows_per_block)
    return merge_heads(heads) @ w_o, weights  # (..., n, d_model), (..., h, n, n)


def _blocked_softmax_attention(q, k_t, v, full_mask, weights, heads, rows_per_block):
    """Fill ``weights`` (..., h, n, n) and ``heads`` (..., h, n, d_v) block by block, in place.

    Heads are independent, so they are shared out over the cores (NumPy releases the GIL inside
    matmul and exp); each thread runs single-threaded BLAS on its own cache-sized blocks.
    """
    n = q.shape[-2]

    def one_head(index):
        for start in range(0, n, rows_per_block):
            rows = slice(start, min(start + rows_per_block, n))
            block = weights[index][rows]  # (b, n) a view into the output
            np.matmul(q[index][rows], k_t[index], out=block)  # scores of this block
            if full_mask is not None:
                np.copyto(block, -np.inf, where=~full_mask[index][rows])
            block -= block.max(axis=-1, keepdims=True)  # stable softmax, in place
            np.exp(block, out=block)
            block *= 1.0 / block.sum(axis=-1, keepdims=True)
            np.matmul(block, v[index], out=heads[index][rows])  # (b, d_v)

    indices = list(np.ndindex(*q.shape[:-2]))  # one task per head (of each batch item)
    # The CPUs this kernel may use (a hub student's quota), not the node's core count.
    workers = min(len(indices), usable_cpus()) if n >= _PARALLEL_MIN_TOKENS else 1
    if workers < 2:
        for index in indices:
            one_head(index)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one_head, indices))


# ---------------------------------------------------------------------------------------------
# Input checks: every message says what was wrong and what to do, with the numbers involved
# ---------------------------------------------------------------------------------------------


def _as_finite_array(a, name):
    try:
        arr = np.asanyarray(a)
    except Exception as exc:  # ragged lists and the like
        raise AttentionInputError(f"{name} 无法转换成数值数组（{exc}）：请传入形状整齐的 numpy 数组。") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise AttentionInputError(f"{name} 的元素类型是 {arr.dtype}，不是数值：请传入浮点数数组。")
    if np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool:
        arr = arr.astype(np.float64)
    if np.iscomplexobj(arr):
        raise AttentionInputError(f"{name} 是复数数组：注意力只定义在实数上，请传入实数数组。")
    if arr.ndim == 0:
        raise AttentionInputError(f"{name} 是一个标量：请传入至少 2 维的数组（n 个词 × 特征维度）。")
    if not np.isfinite(arr).all():
        bad = int(arr.size - np.isfinite(arr).sum())
        raise AttentionInputError(
            f"{name} 里有 {bad} 个 NaN 或 inf：注意力会把它们传播到每个输出。请先检查上一步的计算。"
        )
    return arr


def _check_heads(d_model, h):
    if isinstance(h, bool) or not isinstance(h, (int, np.integer)):
        raise AttentionInputError(f"头数 h 必须是正整数，收到的是 {h!r}（类型 {type(h).__name__}）。")
    h = int(h)
    if h <= 0:
        raise AttentionInputError(f"头数 h 必须是正整数，收到的是 h={h}。")
    if d_model % h != 0:
        divisors = [c for c in range(1, min(d_model, 64) + 1) if d_model % c == 0]
        raise AttentionInputError(
            f"d_model={d_model} 不能平均分给 h={h} 个头（{d_model} / {h} 不是整数）。"
            f"请选一个能整除 {d_model} 的头数，例如 {divisors}。"
        )
    return h


def _check_qkv(q, k, v):
    q, k, v = (_as_finite_array(a, name) for a, name in ((q, "Q"), (k, "K"), (v, "V")))
    for arr, name in ((q, "Q"), (k, "K"), (v, "V")):
        if arr.ndim < 2:
            raise AttentionInputError(f"{name} 需要至少 2 维 (n, d)，收到的形状是 {arr.shape}。")
        if 0 in arr.shape[-2:]:
            raise AttentionInputError(
                f"{name} 的形状是 {arr.shape}：至少要有 1 个词、每个词至少 1 维，注意力才有东西可算。"
            )
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise AttentionInputError(
            f"Q、K、V 前面的批量维度 {q.shape[:-2]}、{k.shape[:-2]}、{v.shape[:-2]} 对不上："
            "它们要么相同，要么是 1（可以广播）。"
        ) from None
    if q.shape[-1] != k.shape[-1]:
        raise AttentionInputError(
            f"Q 的最后一维 d_k={q.shape[-1]} 与 K 的最后一维 {k.shape[-1]} 不同：Q Kᵀ 要求两者相同。"
        )
    if k.shape[-2] != v.shape[-2]:
        raise AttentionInputError(
            f"K 有 {k.shape[-2]} 个位置而 V 有 {v.shape[-2]} 个：每个键必须对应一个值，请让两者的 n 相同。"
        )
    return q, k, v


def _check_mask(mask, scores_shape):
    mask = np.asanyarray(mask)
    if mask.dtype != bool:
        raise AttentionInputError(
            f"mask 应是布尔数组（True = 可以关注），收到的类型是 {mask.dtype}："
            "请用 mask.astype(bool) 或比较运算得到它。"
        )
    try:
        full = np.broadcast_to(mask, scores_shape)
    except ValueError:
        raise AttentionInputError(
            f"mask 的形状 {mask.shape} 无法广播到注意力分数的形状 {tuple(scores_shape)}：最后两维应是 (n_q, n_k)。"
        ) from None
    empty_rows = ~full.any(axis=-1)
    if empty_rows.any():
        where = tuple(int(i) for i in np.argwhere(empty_rows)[0])
        raise AttentionInputError(
            f"mask 在位置 {where} 的这一行不允许关注任何键：softmax 会得到 0/0 = NaN。"
            "每个查询至少要能看到一个位置（例如它自己）。"
        )
    return full


def _check_mha(x, w_q, w_k, w_v, w_o, h):
    x = _as_finite_array(x, "X")
    if x.ndim < 2:
        raise AttentionInputError(f"X 需要至少 2 维 (n, d_model)，收到的形状是 {x.shape}。")
    if 0 in x.shape[-2:]:
        raise AttentionInputError(f"X 的形状是 {x.shape}：至少要有 1 个词、每个词至少 1 维。")
    d_model = x.shape[-1]
    h = _check_heads(d_model, h)
    weights = []
    for w, name in ((w_q, "W_Q"), (w_k, "W_K"), (w_v, "W_V"), (w_o, "W_O")):
        w = _as_finite_array(w, name)
        if w.shape != (d_model, d_model):
            raise AttentionInputError(
                f"{name} 的形状是 {w.shape}，应为 (d_model, d_model) = ({d_model}, {d_model})："
                f"它把 {h} 个头各自的投影矩阵并排放在一起。"
            )
        weights.append(w)
    return (x, *weights, h)
