"""The toy model: embeddings -> one multi-head self-attention layer -> read-out, and its backward
pass by hand (tests check it against finite differences). Every parameter has a leading seed axis
S: the seeds of one head count train as one batch of arrays. The attention is the kernel's formula
functions, unchecked: ``config.check_sweep`` checked the arguments once."""

import functools
import math

import numpy as np

from lesson_lib.attention import _merge_heads, _split_heads
from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK, EMB_STD, Task, TrainConfig
from lesson_lib.models.toy.task import Batch

_t = functools.partial(np.swapaxes, axis1=-1, axis2=-2)  # a batched transpose


def init_params(seeds, task: Task = DEFAULT_TASK, cfg: TrainConfig = DEFAULT_CONFIG) -> dict:
    """Named (S, *shape) parameters, none depending on h: a seed starts every h alike."""
    D = cfg.d_model
    shapes = {"E": (task.V + 2 * task.K + task.T, D),  # values, keys, query tags, positions
              "W_Q": (D, D), "W_K": (D, D), "W_V": (D, D), "W_O": (D, D),
              # read-out: three V-way classifiers side by side
              "R": (D, 3 * task.V), "b": (3 * task.V,)}
    std = {"E": EMB_STD, "b": 0.0}  # the rest N(0, 1/D), which keeps x W at x's scale
    per_seed = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 0])  # stream 0: weights (stream 1 is the training data)
        per_seed.append([rng.normal(0.0, std.get(name, 1.0 / math.sqrt(D)), shape)
                         for name, shape in shapes.items()])
    return {name: np.stack(p).astype(cfg.dtype) for name, p in zip(shapes, zip(*per_seed))}


def forward(params, batch: Batch, h: int, task: Task):
    """Logits (S, B, T, 3, V) and what the backward pass needs. S models, B sequences, T tokens."""
    S, n_rows, D = params["E"].shape
    B, T = batch.values.shape[1:]
    # each token's rows of E: its value, key, query tag and position
    positions = np.broadcast_to(np.arange(T) + task.V + 2 * task.K, batch.values.shape)
    rows = [batch.values, batch.keys + task.V, batch.queries + task.V + task.K, positions]
    rows = np.stack(rows, -1)  # (S or 1, B, T, 4)
    # (S or 1, B·T, R) 0/1: four ones per token
    hot = np.zeros((len(rows), B * T, n_rows), dtype=params["E"].dtype)
    np.put_along_axis(hot, rows.reshape(len(rows), B * T, 4), 1.0, axis=-1)
    x = hot @ params["E"]  # (S, B·T, D)  x_i = Ev[v_i] + Ek[k_i] + Eq[q_i] + P[i]
    q, k, v = (_split_heads((x @ params[w]).reshape(S, B, T, D), h)  # 3 × (S, B, h, T, d_k)
               for w in ("W_Q", "W_K", "W_V"))
    heads, weights = _attention(q, k, v)  # (S, B, h, T, d_k), (S, B, h, T, T)
    o = _merge_heads(heads).reshape(S, B * T, D)  # (S, B·T, D)  Concat(head_i)
    y = o @ params["W_O"]  # (S, B·T, D)
    logits = y @ params["R"] + params["b"][:, None, :]  # (S, B·T, 3·V)
    logits = logits.reshape(S, B, T, 3, task.V)  # (S, B, T, 3, V) three V-way read-outs
    return logits, dict(hot=hot, x=x, q=q, k=k, v=v, heads=heads, weights=weights, o=o, y=y)


def loss_and_grads(params, batch: Batch, h: int, task: Task):
    """Masked mean cross-entropy of every model, (S,), and its gradient for every parameter (a
    model's loss depends only on its own parameters: the sum's gradient gives each its own)."""
    logits, c = forward(params, batch, h, task)
    S, B, T = logits.shape[:3]
    D = params["W_Q"].shape[-1]
    shifted = logits - _row_max(logits)[..., None]  # (S, B, T, 3, V) largest entry 0
    log_p = shifted - np.log(_row_sum(np.exp(shifted)))[..., None]  # (S, B, T, 3, V) log softmax
    p = np.exp(log_p)  # (S, B, T, 3, V)
    mask = batch.mask.astype(logits.dtype, copy=False)  # (S, B, T, 3)
    weight = (mask / mask.sum(axis=(1, 2, 3), keepdims=True))[..., None]  # 1/count or 0
    target_weight = (batch.targets[..., None] == np.arange(task.V)) * weight  # (S, B, T, 3, V)
    loss = -(log_p * target_weight).sum(axis=(1, 2, 3, 4))  # (S,)

    # Read-out: d loss / d logits = (softmax − one-hot) · mask / count.
    d_logits = (p * weight - target_weight).reshape(S, B * T, 3 * task.V)  # (S, B·T, 3V)
    grads = {"R": _t(c["y"]) @ d_logits, "b": d_logits.sum(axis=1)}  # (S, D, 3V), (S, 3V)
    d_y = d_logits @ _t(params["R"])  # (S, B·T, D)
    grads["W_O"] = _t(c["o"]) @ d_y  # (S, D, D)
    d_heads = _split_heads((d_y @ _t(params["W_O"])).reshape(S, B, T, D), h)  # (S, B, h, T, d_k)

    # Attention: out = A V with A = softmax(Q Kᵀ / √d_k).
    a = c["weights"]  # (S, B, h, T, T)
    d_v = _t(a) @ d_heads  # (S, B, h, T, d_k)
    d_a = d_heads @ _t(c["v"])  # (S, B, h, T, T)  d loss / d A
    # Softmax backward: dS = A ∘ (dA − Σ_j A_ij dA_ij), and Σ_j A_ij dA_ij = dOut_i · Out_i.
    d_scores = a * (d_a - _row_sum(d_heads * c["heads"])[..., None])  # d loss / d (Q Kᵀ / √d_k)
    scale = 1.0 / math.sqrt(D // h)
    d_q = (d_scores @ c["k"]) * scale  # (S, B, h, T, d_k)
    d_k = (_t(d_scores) @ c["q"]) * scale  # (S, B, h, T, d_k)

    x = c["x"]  # (S, B·T, D)
    d_x = np.zeros_like(x)
    for name, d_part in (("W_Q", d_q), ("W_K", d_k), ("W_V", d_v)):
        d_part = _merge_heads(d_part).reshape(S, B * T, D)  # (S, B·T, D)
        grads[name] = _t(x) @ d_part  # (S, D, D)
        d_x += d_part @ _t(params[name])  # (S, B·T, D)
    grads["E"] = _t(c["hot"]) @ d_x  # (S, R, D)  each token's d_x added to its four rows
    return loss, grads


def _attention(q, k, v):
    """The kernel's ``_scaled_dot_product_attention(q, k, v)``, bit for bit (a test compares them),
    with the softmax's row max and sum by ``_row_max`` / ``_row_sum``: rows here are T = 12 long."""
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])  # (..., n_q, n_k)
    e = np.exp(scores - _row_max(scores)[..., None])  # (..., n_q, n_k) largest entry 1
    return (weights := e / _row_sum(e)[..., None]) @ v, weights  # (..., n_q, d_v), (..., n_q, n_k)


def _row_max(x):
    """``x.max(axis=-1)``, one column at a time across all rows: numpy reduces each row in its own
    loop, whose start-up is most of the softmax's cost over rows this short (T = 12, V = 8)."""
    return functools.reduce(np.maximum, [x[..., j] for j in range(x.shape[-1])])  # (...)


def _row_sum(x):
    """``x.sum(axis=-1)`` bit for bit, one column at a time (see ``_row_max``): numpy adds up to 7
    entries one by one, and 8–15 the first eight pairwise, then the rest one by one (tests check the
    bits); longer rows ask numpy."""
    n = x.shape[-1]
    if n > 15:
        return x.sum(axis=-1)
    c = [x[..., j] for j in range(n)]  # n × (...)
    if n < 8:
        return sum(c[1:], c[0])  # (...) c[0] + c[1] + …
    return sum(c[8:], ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7])))


def attention_maps(params, h: int, batch: Batch, seed_index: int = 0, task: Task = DEFAULT_TASK):
    """Attention weights (B, h, T, T) of model ``seed_index`` on ``batch`` (leading axis 1)."""
    single = {name: p[seed_index : seed_index + 1] for name, p in params.items()}
    _, cache = forward(single, batch, h, task)
    return cache["weights"][0]  # (B, h, T, T)
