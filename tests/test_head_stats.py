"""lesson_lib.head_stats: row entropy and the JS divergence between heads, on maps whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import assert_chinese_message

from lesson_lib.head_stats import mean_pairwise_js, row_entropy


def one_hot(n, columns):
    """(len(columns), n) rows with all weight on one key each."""
    w = np.zeros((len(columns), n))
    w[np.arange(len(columns)), columns] = 1.0
    return w


@pytest.mark.parametrize("n", [2, 5, 16])
def test_entropy_is_zero_for_one_key_and_log2_n_for_uniform(n):
    np.testing.assert_allclose(row_entropy(one_hot(n, range(n))), 0.0, atol=1e-12)
    np.testing.assert_allclose(row_entropy(np.full((3, n), 1 / n)), math.log2(n), rtol=1e-12)


def test_entropy_of_half_and_half_is_one_bit_per_row_and_keeps_leading_axes():
    w = np.zeros((2, 3, 4, 4))
    w[..., :2] = 0.5  # every row splits its weight over two keys
    e = row_entropy(w)
    assert e.shape == (2, 3, 4)
    np.testing.assert_allclose(e, 1.0, rtol=1e-12)


def test_js_is_zero_for_identical_heads_and_one_for_disjoint_keys():
    n = 4
    same = np.stack([one_hot(n, [0, 1, 2, 3])] * 3)  # (3, n, n) three identical heads
    assert mean_pairwise_js(same) == pytest.approx(0.0, abs=1e-12)
    apart = np.stack([one_hot(n, [0, 0, 0, 0]), one_hot(n, [1, 1, 1, 1])])  # each head on its own key
    assert mean_pairwise_js(apart) == pytest.approx(1.0, rel=1e-12)


def test_js_averages_over_every_pair_of_heads():
    n = 3
    a, b = one_hot(n, [0, 0, 0]), one_hot(n, [1, 1, 1])
    heads = np.stack([a, a, b])  # pairs: (a, a) 0, (a, b) 1, (a, b) 1 → mean 2/3
    assert mean_pairwise_js(heads) == pytest.approx(2 / 3, rel=1e-12)


def test_js_is_symmetric_and_between_zero_and_one():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((2, 5, 5))
    w = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)  # (2, 5, 5) rows sum to 1
    forward, backward = mean_pairwise_js(w), mean_pairwise_js(w[::-1])
    assert forward == pytest.approx(backward, rel=1e-12) and 0.0 < forward < 1.0


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: mean_pairwise_js(np.full((1, 3, 3), 1 / 3)), "(1, 3, 3)"),  # the shape it got: one head
        (lambda: row_entropy(np.array([[0.5, 0.6]])), "softmax"),  # scores, not weights: pass softmax's output
        (lambda: row_entropy(np.array([[1.5, -0.5]])), "(1, 2)"),
        (lambda: row_entropy(np.array([[np.nan, 1.0]])), "(1, 2)"),
        (lambda: row_entropy(np.array([0.5, 0.5])), "(2,)"),
    ],
    ids=["one-head", "scores-not-weights", "negative", "nan", "1-d"],
)
def test_bad_weights_are_refused_in_chinese(call, fragment):
    with pytest.raises(ValueError) as excinfo:
        call()
    assert_chinese_message(str(excinfo.value), fragment)
