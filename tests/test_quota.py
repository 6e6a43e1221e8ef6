"""The lesson's threads follow the CPUs a student may use (usable_cpus), not the node's core count."""

import typing

import attention_fast
import numpy as np
import pytest

from lesson_lib import attention
from lesson_lib.runtime import blas

threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture
def restore_blas():
    before = blas.blas_threads()
    yield
    blas.fit_blas_to_cpus(before)


def test_one_blas_thread_restores_the_cap(monkeypatch, restore_blas):
    monkeypatch.delenv("LESSON_CPUS", raising=False)
    blas.fit_blas_to_cpus(2)
    with blas.one_blas_thread():
        assert blas.blas_threads() == 1
    assert blas.blas_threads() == 2


def test_fit_blas_never_goes_below_one(restore_blas):
    blas.fit_blas_to_cpus(0)
    assert blas.blas_threads() == 1


def _long_input(n=attention_fast._PARALLEL_MIN_TOKENS, d_model=16, h=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model))
    w = [rng.standard_normal((d_model, d_model)) / 4 for _ in range(4)]
    return x, w, h


class _CountingPool:
    created: typing.ClassVar[list[int]] = []

    def __init__(self, max_workers):
        _CountingPool.created.append(max_workers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items):
        return map(fn, items)


@pytest.mark.parametrize(("cpus", "want_pool"), [(1, []), (3, [3])])
def test_attention_threads_follow_usable_cpus(monkeypatch, cpus, want_pool):
    monkeypatch.setattr(attention_fast, "usable_cpus", lambda: cpus)
    monkeypatch.setattr(attention_fast, "ThreadPoolExecutor", _CountingPool)
    _CountingPool.created = []
    x, w, h = _long_input()
    out, weights = attention_fast.multi_head_attention_fast(x, *w, h)
    assert _CountingPool.created == want_pool  # one CPU: the heads run in this thread, no pool
    reference, ref_weights = attention.multi_head_attention(x, *w, h)
    np.testing.assert_allclose(out, reference, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-10, atol=1e-12)
