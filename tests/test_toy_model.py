"""The 3-lookup task, the toy model's hand-written backward pass, Adam's schedule and training."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lesson_lib.attention import _scaled_dot_product_attention, _split_heads
from lesson_lib.models.toy import model
from lesson_lib.models.toy.config import Task, TrainConfig
from lesson_lib.models.toy.model import attention_maps, init_params, loss_and_grads
from lesson_lib.models.toy.task import held_out_data, make_batch
from lesson_lib.models.toy.training import accuracy, example_heads, learning_rate, train

TINY_TASK = Task(T=7, V=4, K=16)


def test_task_sequences_follow_the_definition():
    task = Task()
    batch = make_batch([np.random.default_rng(0), np.random.default_rng(1)], 200, task)
    S, B, T = batch.values.shape
    assert (S, B, T) == (2, 200, task.T)
    i = np.arange(T)
    # keys are distinct within a sequence; the pointer is never i-1, i or i+1
    assert all(len(set(row)) == T for row in batch.keys.reshape(-1, T))
    distance = (batch.pointers - i) % T
    assert distance.min() == 2 and distance.max() == T - 2
    # the query tag is the key at the pointer, and the three targets read the right positions
    np.testing.assert_array_equal(batch.queries, np.take_along_axis(batch.keys, batch.pointers, axis=-1))
    np.testing.assert_array_equal(batch.targets[:, :, 1:, 0], batch.values[:, :, :-1])
    np.testing.assert_array_equal(batch.targets[:, :, :-1, 1], batch.values[:, :, 1:])
    np.testing.assert_array_equal(batch.targets[..., 2], np.take_along_axis(batch.values, batch.pointers, -1))
    # prev does not exist at position 0, next not at T-1; everything else counts
    assert batch.mask[:, :, 0, 0].sum() == 0 and batch.mask[:, :, T - 1, 1].sum() == 0
    assert batch.mask.sum() == S * B * (3 * T - 2)


def test_shared_data_cannot_be_changed_by_a_caller():
    data = held_out_data(TINY_TASK, TrainConfig(n_test=5))
    with pytest.raises(ValueError, match="read-only"):
        data.values[0, 0, 0] = 1


def test_learning_rate_warms_up_then_decays_to_the_floor():
    cfg = TrainConfig(steps=300, warmup=100, lr=0.03)
    rates = [learning_rate(step, cfg) for step in range(cfg.steps + 1)]
    assert rates[0] == pytest.approx(0.03 / 100)
    assert rates[99] == pytest.approx(0.03)
    assert all(a >= b for a, b in itertools.pairwise(rates[100:]))  # never increases after warm-up
    assert rates[-1] == pytest.approx(0.003)


# ---------------------------------------------------------------------------------------------
# The backward pass against central differences: random directions through all entries at once,
# and a sample of single entries (every entry would take 20 s and find nothing more)
# ---------------------------------------------------------------------------------------------


def _loss(params, batch, h):
    return loss_and_grads(params, batch, h, TINY_TASK)[0].sum()


def _central_difference(params, name, direction, batch, h, eps=1e-5):
    p = params[name]
    old = p.copy()
    p += eps * direction
    up = _loss(params, batch, h)
    p[...] = old - eps * direction
    down = _loss(params, batch, h)
    p[...] = old
    return (up - down) / (2 * eps)


@pytest.fixture(scope="module")
def tiny_problem():
    cfg = TrainConfig(d_model=8, dtype="float64")
    batch = make_batch([np.random.default_rng(5), np.random.default_rng(6)], 4, TINY_TASK)
    return cfg, batch


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_backward_matches_central_differences_along_random_directions(tiny_problem, h):
    cfg, batch = tiny_problem
    params = init_params([0, 1], TINY_TASK, cfg)  # two models: gradients must not leak between them
    _, grads = loss_and_grads(params, batch, h, TINY_TASK)
    rng = np.random.default_rng(h)
    for name, p in params.items():
        assert grads[name].shape == p.shape
        for _ in range(3):
            u = rng.standard_normal(p.shape)  # every entry moves, so any wrong entry shows
            numeric = _central_difference(params, name, u, batch, h)
            analytic = float((grads[name] * u).sum())
            assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-9), name


@pytest.mark.parametrize("h", [1, 4])
def test_backward_matches_central_differences_entry_by_entry(tiny_problem, h):
    cfg, batch = tiny_problem
    params = init_params([0, 1], TINY_TASK, cfg)
    _, grads = loss_and_grads(params, batch, h, TINY_TASK)
    rng = np.random.default_rng(10 + h)
    for name, p in params.items():
        for flat_index in rng.choice(p.size, size=min(6, p.size), replace=False):
            index = np.unravel_index(flat_index, p.shape)
            one_hot = np.zeros(p.shape)
            one_hot[index] = 1.0
            numeric = _central_difference(params, name, one_hot, batch, h)
            assert grads[name][index] == pytest.approx(numeric, rel=1e-4, abs=1e-8), (name, index)


def test_a_wrong_gradient_fails_the_direction_check(tiny_problem):
    """The check above can fail: a gradient with one entry off by 1 % is caught."""
    cfg, batch = tiny_problem
    params = init_params([0, 1], TINY_TASK, cfg)
    _, grads = loss_and_grads(params, batch, 2, TINY_TASK)
    index = np.unravel_index(np.abs(grads["W_Q"]).argmax(), grads["W_Q"].shape)
    grads["W_Q"][index] *= 1.01
    u = np.zeros(params["W_Q"].shape)
    u[index] = 1.0
    u += 0.01 * np.random.default_rng(0).standard_normal(u.shape)
    numeric = _central_difference(params, "W_Q", u, batch, 2)
    assert float((grads["W_Q"] * u).sum()) != pytest.approx(numeric, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("T", [7, 12])  # 7: numpy sums the rows itself; 12: the sweep's rows, summed by column
@pytest.mark.parametrize("h", [1, 4, 32])
def test_attention_gives_the_kernel_formulas_numbers_bit_for_bit(T, h):
    rng = np.random.default_rng(h)
    x = (3 * rng.standard_normal((2, 5, T, 32))).astype(np.float32)  # (S, B, T, D) wide scores: exp matters
    q, k, v = (_split_heads(x @ rng.standard_normal((32, 32)).astype(np.float32), h) for _ in range(3))
    for ours, kernels in zip(model._attention(q, k, v), _scaled_dot_product_attention(q, k, v)):
        assert ours.dtype == kernels.dtype and np.array_equal(ours, kernels)


@pytest.mark.parametrize("n", [1, 2, 4, 7, 8, 12, 15, 16])
def test_row_max_and_row_sum_equal_numpys_bit_for_bit(n):
    signed = (4 * np.random.default_rng(n).standard_normal((3, 32, 12, n))).astype(np.float32)
    for x in (signed, np.exp(signed)):  # both signs (a gradient's products), positive (a softmax's exps)
        assert np.array_equal(model._row_max(x), x.max(axis=-1))
        assert np.array_equal(model._row_sum(x), x.sum(axis=-1))


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------


def test_seeds_trained_together_equal_seeds_trained_alone():
    cfg = TrainConfig(d_model=8, steps=30, warmup=5)
    together = train(2, [3, 4], TINY_TASK, cfg)
    alone = train(2, [4], TINY_TASK, cfg)
    for name in together:
        np.testing.assert_allclose(together[name][1], alone[name][0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(together["W_Q"][0], together["W_Q"][1])  # different seeds, different models


def test_training_lowers_the_loss_and_a_trained_model_beats_chance():
    cfg = TrainConfig(d_model=8, steps=150, warmup=20, n_test=100)
    batch = make_batch([np.random.default_rng(99)], 64, TINY_TASK)
    start = init_params([0], TINY_TASK, cfg)
    trained = train(4, [0], TINY_TASK, cfg)
    assert loss_and_grads(trained, batch, 4, TINY_TASK)[0][0] < 0.7 * loss_and_grads(start, batch, 4, TINY_TASK)[0][0]
    acc = accuracy(trained, 4, held_out_data(TINY_TASK, cfg), TINY_TASK)
    assert acc[0, :2].min() > 2 / TINY_TASK.V  # prev and next: at least twice chance (1/V)


def test_accuracy_counts_only_existing_targets():
    """A model that always answers value 0 scores exactly the share of 0s among the targets that exist."""
    cfg = TrainConfig(d_model=8, n_test=40)
    params = init_params([0], TINY_TASK, cfg)
    params["R"][...] = 0.0
    params["b"][...] = 0.0
    params["b"][0, 0 :: TINY_TASK.V] = 1.0  # logit of value 0 highest for all three read-outs
    data = held_out_data(TINY_TASK, cfg)
    acc = accuracy(params, 2, data, TINY_TASK)
    expected = ((data.targets == 0) * data.mask).sum(axis=(1, 2)) / data.mask.sum(axis=(1, 2))
    np.testing.assert_allclose(acc, expected)


def test_attention_maps_are_rows_of_probabilities():
    cfg = TrainConfig(d_model=8)
    params = init_params([0, 1], TINY_TASK, cfg)
    one = held_out_data(TINY_TASK, cfg).rows(slice(0, 2))
    maps = attention_maps(params, 4, one, seed_index=1, task=TINY_TASK)
    assert maps.shape == (2, 4, TINY_TASK.T, TINY_TASK.T)
    np.testing.assert_allclose(maps.sum(axis=-1), 1.0, rtol=1e-5)


def test_example_heads_for_section_6_are_trained_maps():
    cfg = TrainConfig(d_model=8, steps=5, warmup=2, n_test=4)
    maps = example_heads(h=2, seed=0, task=TINY_TASK, cfg=cfg)
    assert maps.shape == (2, TINY_TASK.T, TINY_TASK.T)
    np.testing.assert_allclose(maps.sum(axis=-1), 1.0, rtol=1e-5)
    maps[:] = 0  # the caller gets a copy: the cached maps stay intact
    assert example_heads(h=2, seed=0, task=TINY_TASK, cfg=cfg).sum() == pytest.approx(TINY_TASK.T * 2)
