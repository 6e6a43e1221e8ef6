"""benchmarks/attention_fast.py: the blocked, threaded path gives the readable kernel's numbers on every branch.

The contract tests every variant shares (same checks, errors, dtypes, masks) are parametrised over all
three kernels in tests/test_attention.py; these force the fast path's own branches on small inputs.
"""

from __future__ import annotations

import attention_fast
import numpy as np
import pytest
from attention_fast import multi_head_attention_fast
from helpers import causal, make_inputs

from lesson_lib.attention import multi_head_attention


def test_fast_path_agrees_across_row_blocks(monkeypatch):
    """Force the fast path to cut the scores into several row blocks (16 rows each) and a ragged last one."""
    monkeypatch.setattr(attention_fast, "_BLOCK_BYTES", 1)  # raises if the knob is gone: the test cannot go soft
    n, d_model, h = 40, 16, 4
    x, ws = make_inputs(n, d_model, (2,), seed=3)
    for mask in (None, causal(n)):
        out, weights = multi_head_attention(x, *ws, h, mask=mask)
        out_f, weights_f = multi_head_attention_fast(x, *ws, h, mask=mask)
        np.testing.assert_allclose(out_f, out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights_f, weights, rtol=0, atol=1e-12)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_fast_path_threaded_heads_match_the_readable_kernel(monkeypatch, batch):
    """The fast path shares heads out over threads only for long inputs; force it on a small one."""
    monkeypatch.setattr(attention_fast, "_PARALLEL_MIN_TOKENS", 1)
    monkeypatch.setattr(attention_fast, "usable_cpus", lambda: 2)  # a pool even on a 1-CPU runner
    monkeypatch.setattr(attention_fast, "_BLOCK_BYTES", 64)
    monkeypatch.setattr(attention_fast, "_MIN_BLOCK_ROWS", 2)  # several row blocks per head as well
    pools = []
    real_pool = attention_fast.ThreadPoolExecutor

    def counting_pool(*args, **kwargs):
        pools.append(kwargs.get("max_workers"))
        return real_pool(*args, **kwargs)

    monkeypatch.setattr(attention_fast, "ThreadPoolExecutor", counting_pool)
    rng = np.random.default_rng(7)
    n, d, h = 9, 12, 4
    x = rng.standard_normal((*batch, n, d))
    ws = [rng.standard_normal((d, d)) for _ in range(4)]
    for mask in (None, causal(n)):
        out, weights = multi_head_attention_fast(x, *ws, h, mask=mask)
        ref_out, ref_weights = multi_head_attention(x, *ws, h, mask=mask)
        np.testing.assert_allclose(out, ref_out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=1e-12)
    assert pools == [2, 2]  # the threaded branch really ran, once per call
