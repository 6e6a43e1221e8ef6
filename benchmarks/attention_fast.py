"""A faster multi-head attention with the same contract and results as ``attention.multi_head_attention``.

The lesson runs the readable kernel in ``lesson_lib.attention`` everywhere and never imports this
file: it lives beside the benchmark that times it (``bench_attention.py``), to show what a fast
path changes (and what it must not). Parity with the readable formula is tested on the public
functions (tests/test_attention_fast.py; tests/conftest.py puts benchmarks/ on the import path).

None of the changes alter the maths: Q, K, V come from one fused matmul; 1/√d_k is folded into Q
(n·d multiplies instead of h·n²); and the scores are processed one head and one block of query
rows at a time, so each block is exponentiated, normalised and multiplied by V in place while it
is still in cache, and written straight into the returned weights array.
"""

from __future__ import annotations

import importlib.util
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from lesson_lib.attention import merge_heads, split_heads
from lesson_lib.checks import check_mha, translated
from lesson_lib.runtime.blas import one_blas_thread

__all__ = ["multi_head_attention_fast"]

# scripts/cpus.py is a deployment script, not part of lesson_lib: loaded from its file, like build_notebook.py.
_spec = importlib.util.spec_from_file_location("cpus", Path(__file__).resolve().parents[1] / "scripts" / "cpus.py")
_cpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cpus)
usable_cpus = _cpus.usable_cpus  # a module attribute: the tests replace it to force a pool

_BLOCK_BYTES = 512 * 1024  # one block of scores (rows × n) sized to stay in the L2 cache
_MIN_BLOCK_ROWS = 16
_PARALLEL_MIN_TOKENS = 256  # below this, starting threads costs more than the blocks take


@translated  # the same checks, and the same translated overflow and memory errors
def multi_head_attention_fast(x, w_q, w_k, w_v, w_o, h, mask=None):
    """Same arguments, checks, errors and ``(output, weights)`` as ``multi_head_attention``, faster on long inputs."""
    x, w_q, w_k, w_v, w_o, h, mask = check_mha(x, w_q, w_k, w_v, w_o, h, mask)
    *lead, n, d_model = x.shape
    d_k = d_model // h
    qkv = x @ np.concatenate([w_q, w_k, w_v], axis=1)  # (..., n, 3·d_model)
    q, k, v = np.split(qkv, 3, axis=-1)  # 3 × (..., n, d_model)
    # np.require keeps ndarray subclasses (tests/flops_measure.py counts the work through one)
    q = np.require(split_heads(q * (1.0 / math.sqrt(d_k)), h), requirements="C")  # (..., h, n, d_k) pre-scaled
    k_t = np.require(np.swapaxes(split_heads(k, h), -1, -2), requirements="C")  # (..., h, d_k, n)
    v = np.require(split_heads(v, h), requirements="C")  # (..., h, n, d_v)
    weights = np.empty_like(qkv, shape=(*lead, h, n, n))  # (..., h, n, n)
    heads = np.empty_like(qkv, shape=(*lead, h, n, d_k))  # (..., h, n, d_v)
    rows_per_block = max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // (n * qkv.dtype.itemsize))
    # The heads run in parallel threads; BLAS threads inside each would only fight them for the cores.
    with one_blas_thread():
        _blocked_softmax_attention(q, k_t, v, mask, weights, heads, rows_per_block)
    return merge_heads(heads) @ w_o, weights  # (..., n, d_model), (..., h, n, n)


def _blocked_softmax_attention(q, k_t, v, mask, weights, heads, rows_per_block):
    """Fill ``weights`` (..., h, n, n) and ``heads`` (..., h, n, d_v) block by block, in place.

    Heads are independent, so they are shared out over the usable cores (NumPy releases the GIL
    inside matmul and exp); each thread runs single-threaded BLAS on its own cache-sized blocks.
    """
    n = q.shape[-2]
    errors = np.geterr()  # the caller's overflow handling: pool threads start with numpy's defaults

    def one_head(index):
        with np.errstate(**errors):
            _one_head(index)

    def _one_head(index):
        for start in range(0, n, rows_per_block):
            rows = slice(start, min(start + rows_per_block, n))
            block = weights[index][rows]  # (b, n) a view into the output
            np.matmul(q[index][rows], k_t[index], out=block)  # scores of this block
            if mask is not None:
                np.copyto(block, -np.inf, where=~mask[index][rows])
            block -= block.max(axis=-1, keepdims=True)  # stable softmax, in place
            np.exp(block, out=block)
            block *= 1.0 / block.sum(axis=-1, keepdims=True)  # one reciprocal per row
            np.matmul(block, v[index], out=heads[index][rows])  # (b, d_v)

    indices = list(np.ndindex(*q.shape[:-2]))  # one task per head (of each batch item)
    workers = min(len(indices), usable_cpus())
    if workers < 2 or n < _PARALLEL_MIN_TOKENS:
        for index in indices:
            one_head(index)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one_head, indices))
