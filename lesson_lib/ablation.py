"""§7 evidence: tiny one-layer multi-head models, trained in NumPy, reproduce the SHAPE of Table 3 (A).

Task "3-lookup": every position i of a sequence must output three values at once: the value of
its left neighbour (prev), of its right neighbour (next) and of the position whose key equals its
query tag (match). One attention distribution can sit on one of those positions, or average
them (§2); h heads can each take one. With the width d_model fixed, more heads means narrower
heads, and a head of width d_k = 1 scores keys with a scalar product, which cannot single out a
key in the middle of the range: too many heads hurts again.

The model is one multi-head self-attention layer (the kernel's ``split_heads``,
``scaled_dot_product_attention`` and ``merge_heads``) between learned embeddings and a linear
read-out, with the same parameter count for every h. The backward pass is written by hand and
checked against finite differences in the tests.

Speed: every parameter array has a leading seed axis S, so the seeds of one head count train as
one batch of arrays (one NumPy call per operation for all of them); all parameters of all seeds
live in one flat buffer, so an Adam step is a handful of whole-array operations; the head counts
of a sweep train in two worker processes (threads would contend for the interpreter lock between
NumPy calls). Each model still sees
only its own numbers: a model is the same whether trained alone or in a sweep.

Run ``python -m lesson_lib.ablation --heads 1,2,4,8,16,32 --seeds 3 [--json]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, fields, replace

import numpy as np

from .attention import merge_heads, scaled_dot_product_attention, split_heads
from .attention_stats import mean_pairwise_js, row_entropy

__all__ = [
    "TARGETS",
    "Task",
    "TrainConfig",
    "Batch",
    "make_batch",
    "init_params",
    "loss_and_grads",
    "learning_rate",
    "train",
    "accuracy",
    "attention_maps",
    "example_heads",
    "held_out_data",
    "weight_on_targets",
    "specialisation_report",
    "main_roles",
    "diversity_table",
    "monotone_score_demo",
    "ROLE_NAMES",
    "row_entropy",
    "mean_pairwise_js",
    "SweepResult",
    "sweep",
    "format_table",
    "main",
]

TARGETS = ("prev", "next", "match")


@dataclass(frozen=True)
class Task:
    """Sizes of the 3-lookup task: T positions, V values, K key symbols.

    K ≫ h matters: with few key symbols a d_k = 1 head can survive by serving a single key.
    """

    T: int = 12
    V: int = 8
    K: int = 64


@dataclass(frozen=True)
class TrainConfig:
    """Model width and the optimiser schedule (Adam, linear warm-up, cosine decay to final_lr_frac·lr)."""

    d_model: int = 32
    steps: int = 700
    batch: int = 32
    lr: float = 3e-2
    warmup: int = 100
    final_lr_frac: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.98
    eps: float = 1e-9
    emb_std: float = 0.5  # 1.0 stalled some seeds in the prototype
    n_test: int = 2000
    test_seed: int = 20170612  # one fixed test set for every model (the paper's arXiv date)
    dtype: str = "float32"  # half the memory traffic of float64; the gradient check runs in float64


@dataclass(frozen=True)
class Batch:
    """3-lookup sequences; arrays have leading axes (S, B) = (seeds, sequences); S may be 1 (shared)."""

    values: np.ndarray  # (S, B, T) int  value v_i in [0, V)
    keys: np.ndarray  # (S, B, T) int  key k_i in [0, K), distinct within a sequence
    queries: np.ndarray  # (S, B, T) int  query tag q_i = k_ptr(i)
    pointers: np.ndarray  # (S, B, T) int  ptr(i): never i−1, i or i+1
    targets: np.ndarray  # (S, B, T, 3) int  (prev, next, match) values
    mask: np.ndarray  # (S, B, T, 3) float  0 where a target does not exist (prev at 0, next at T−1)

    def rows(self, index) -> Batch:
        """The same fields, sequences ``index`` only (a slice along B)."""
        return Batch(*(getattr(self, f.name)[:, index] for f in fields(self)))


# ---------------------------------------------------------------------------------------------
# The task
# ---------------------------------------------------------------------------------------------


def make_batch(rngs, batch: int, task: Task = Task()) -> Batch:
    """``batch`` fresh sequences per generator in ``rngs`` (one generator per seed, so S = len(rngs))."""
    parts = [_sequences(rng, batch, task) for rng in rngs]
    return Batch(*(np.stack(arrays) for arrays in zip(*parts)))


def _sequences(rng, n, task):
    T, V, K = task.T, task.V, task.K
    values = rng.integers(0, V, size=(n, T))  # (n, T)
    keys = np.argsort(rng.random((n, K)), axis=1)[:, :T]  # (n, T) T distinct keys out of K
    offsets = rng.integers(0, T - 3, size=(n, T))  # (n, T) U{0..T−4}
    pointers = (np.arange(T) + 2 + offsets) % T  # (n, T) i+2 … i+T−2 (mod T)
    queries = np.take_along_axis(keys, pointers, axis=1)  # (n, T)
    targets = np.stack(
        [np.roll(values, 1, axis=1), np.roll(values, -1, axis=1), np.take_along_axis(values, pointers, axis=1)],
        axis=-1,
    )  # (n, T, 3) the rolled-around ends are masked out below
    mask = np.ones((n, T, 3))
    mask[:, 0, 0] = 0.0  # position 0 has no left neighbour
    mask[:, T - 1, 1] = 0.0  # position T−1 has no right neighbour
    return values, keys, queries, pointers, targets, mask


# ---------------------------------------------------------------------------------------------
# The model: embeddings -> one multi-head self-attention layer -> linear read-out
# ---------------------------------------------------------------------------------------------


def param_shapes(task: Task, d_model: int) -> dict:
    """Shape of each parameter of one model. None depends on h: every h has the same parameters.

    ``E`` stacks four embedding tables (values V, keys K, query tags K, positions T): a token's
    embedding is the sum of four of its rows.
    """
    D = d_model
    return {
        "E": (task.V + 2 * task.K + task.T, D),
        "W_Q": (D, D),  # head i owns column block i, as in the kernel
        "W_K": (D, D),
        "W_V": (D, D),
        "W_O": (D, D),
        "R": (D, 3 * task.V),  # read-out: three V-way classifiers side by side
        "b": (3 * task.V,),
    }


def init_params(seeds, task: Task = Task(), cfg: TrainConfig = TrainConfig()):
    """Initial parameters of one model per seed, as one flat buffer and named views into it.

    Returns ``(flat, params)``: ``flat`` is (S, P) and ``params[name]`` an (S, *shape) view into it,
    so Adam updates every parameter of every model with a few whole-array operations. A seed gives
    the same starting weights for every h, so runs with different head counts differ only in h.
    """
    shapes = param_shapes(task, cfg.d_model)
    std = {"E": cfg.emb_std, "b": 0.0}  # the rest N(0, 1/D), which keeps x W at x's scale
    per_seed = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 0])  # stream 0: weights (stream 1 is the training data)
        per_seed.append(
            np.concatenate(
                [rng.normal(0.0, std.get(name, 1.0 / math.sqrt(cfg.d_model)), shape).ravel()
                 for name, shape in shapes.items()]
            )
        )
    flat = np.stack(per_seed).astype(cfg.dtype)  # (S, P)
    return flat, views(flat, shapes)


def views(flat, shapes) -> dict:
    """Named (S, *shape) views into an (S, P) buffer, in ``shapes`` order."""
    out, offset = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        out[name] = flat[:, offset : offset + size].reshape(flat.shape[0], *shape)
        offset += size
    if offset != flat.shape[-1]:
        raise ValueError(f"参数缓冲区的长度 {flat.shape[-1]} 与各参数大小之和 {offset} 不符。")
    return out


# OpenBLAS splits one matrix product over threads once m·n·k reaches 2·4·65536. On a busy 2-core
# machine a split product waits for a free core and can take 100× longer, so every product here
# stays below that size (the embedding and its gradient go in token chunks, the test set in small batches).
_SINGLE_THREAD_MNK = 2 * 4 * 65536


def _embedding_rows(batch: Batch, task: Task) -> np.ndarray:
    """(S, B·T, 4): the rows of E holding each token's value, key, query tag and position."""
    S, B, T = batch.values.shape
    columns = np.stack(
        [
            batch.values,
            batch.keys + task.V,
            batch.queries + task.V + task.K,
            np.broadcast_to(np.arange(T) + task.V + 2 * task.K, (S, B, T)),
        ],
        axis=-1,
    )  # (S, B, T, 4)
    return columns.reshape(S, B * T, 4)


def _multi_hot(rows, n_rows, dtype):
    """(S, N, R) 0/1 matrix with four ones per token (its rows of E), so x = hot @ E."""
    hot = np.zeros(rows.shape[:2] + (n_rows,), dtype=dtype)
    np.put_along_axis(hot, rows, 1.0, axis=-1)
    return hot


def _token_chunks(n_tokens, n_rows, D):
    """Slices of tokens small enough that hot @ E and hotᵀ @ d_x stay single-threaded products."""
    chunk = max(1, (_SINGLE_THREAD_MNK - 1) // (n_rows * D))
    return [slice(start, start + chunk) for start in range(0, n_tokens, chunk)]


def _embed(E, hot):
    """x_i = Ev[v_i] + Ek[k_i] + Eq[q_i] + P[i] as hot @ E: (S, R, D), (S or 1, N, R) -> (S, N, D)."""
    S, n_rows, D = E.shape
    x = np.empty((S, hot.shape[1], D), dtype=E.dtype)
    for part in _token_chunks(hot.shape[1], n_rows, D):
        np.matmul(hot[:, part], E, out=x[:, part])  # (S, c, R) @ (S, R, D)
    return x


def _embed_grad(d_x, hot):
    """d loss / d E = hotᵀ @ d_x, summed over token chunks (a matmul, not a scatter-add)."""
    S, N, D = d_x.shape
    grad = np.zeros((S, hot.shape[-1], D), dtype=d_x.dtype)
    for part in _token_chunks(N, hot.shape[-1], D):
        grad += _t(hot[:, part]) @ d_x[:, part]  # (S, R, c) @ (S, c, D) -> (S, R, D)
    return grad


def _forward(params, batch: Batch, h: int, task: Task):
    """Logits (S, B, T, 3, V) and what the backward pass needs. S models, B sequences, T tokens."""
    S = params["W_Q"].shape[0]
    B, T = batch.values.shape[1:]
    D = params["W_Q"].shape[-1]
    hot = _multi_hot(_embedding_rows(batch, task), params["E"].shape[1], params["E"].dtype)  # (S, B·T, R)
    x = _embed(params["E"], hot)  # (S, B·T, D)
    q = split_heads((x @ params["W_Q"]).reshape(S, B, T, D), h)  # (S, B, h, T, d_k)  X W_i^Q, every i
    k = split_heads((x @ params["W_K"]).reshape(S, B, T, D), h)  # (S, B, h, T, d_k)
    v = split_heads((x @ params["W_V"]).reshape(S, B, T, D), h)  # (S, B, h, T, d_k)
    heads, weights = scaled_dot_product_attention(q, k, v)  # (S, B, h, T, d_k), (S, B, h, T, T)
    o = merge_heads(heads).reshape(S, B * T, D)  # (S, B·T, D)  Concat(head_i)
    y = o @ params["W_O"]  # (S, B·T, D)
    logits = y @ params["R"] + params["b"][:, None, :]  # (S, B·T, 3·V)
    logits = logits.reshape(S, B, T, 3, task.V)  # (S, B, T, 3, V) three V-way read-outs
    return logits, dict(hot=hot, x=x, q=q, k=k, v=v, weights=weights, o=o, y=y)


def loss_and_grads(params, batch: Batch, h: int, task: Task = Task()):
    """Masked mean cross-entropy of every model, shape (S,), and its gradient for every parameter.

    Each model's loss depends only on its own parameters, so the gradient of the sum over models
    gives every model its own gradient at once.
    """
    logits, c = _forward(params, batch, h, task)
    S, B, T = logits.shape[:3]
    D = params["W_Q"].shape[-1]
    log_p, p = _log_softmax(logits)  # (S, B, T, 3, V) each
    mask = batch.mask.astype(logits.dtype, copy=False)  # (S, B, T, 3)
    weight = (mask / mask.sum(axis=(1, 2, 3), keepdims=True))[..., None]  # (S, B, T, 3, 1) 1/count or 0
    target_weight = (batch.targets[..., None] == np.arange(task.V)) * weight  # (S, B, T, 3, V)
    loss = -(log_p * target_weight).sum(axis=(1, 2, 3, 4))  # (S,)

    # Read-out: d loss / d logits = (softmax − one-hot) · mask / count.
    d_logits = (p * weight - target_weight).reshape(S, B * T, 3 * task.V)  # (S, B·T, 3V)
    grads = {"R": _t(c["y"]) @ d_logits, "b": d_logits.sum(axis=1)}  # (S, D, 3V), (S, 3V)
    d_y = d_logits @ _t(params["R"])  # (S, B·T, D)
    grads["W_O"] = _t(c["o"]) @ d_y  # (S, D, D)
    d_o = d_y @ _t(params["W_O"])  # (S, B·T, D)  d loss / d Concat(head_i)
    d_heads = split_heads(d_o.reshape(S, B, T, D), h)  # (S, B, h, T, d_k)

    # Attention: out = A V with A = softmax(Q Kᵀ / √d_k). Trained heads are so sharp that about a
    # tenth of the float32 weights are subnormal (below 1.2e-38), and so are products with them;
    # arithmetic on subnormals is many times slower on x86. Weights below eps² (1.4e-14 in float32)
    # are below the rounding error of every sum they enter, so the backward pass treats them as 0.
    a = c["weights"]  # (S, B, h, T, T)  our own array: the kernel returned it to this call only
    negligible = np.finfo(a.dtype).eps ** 2
    if a.min() < negligible:  # one fast pass; the flush only runs once heads have become sharp
        np.copyto(a, 0, where=a < negligible)
    d_v = _t(a) @ d_heads  # (S, B, h, T, d_k)
    if D == h:  # d_k = 1: the product is an outer product, and broadcasting beats 10⁴ tiny matmuls
        d_scores = d_heads * _t(c["v"])  # (S, B, h, T, 1) * (S, B, h, 1, T) -> (S, B, h, T, T)
    else:
        d_scores = d_heads @ _t(c["v"])  # (S, B, h, T, T)  d loss / d A for now
    # Softmax backward: dS = A ∘ (dA − Σ_j A_ij dA_ij). The row sum equals dOut_i · Out_i (the
    # identity FlashAttention uses): a sum over each head's d_k columns, one matmul for all heads.
    row_dot = (d_o * c["o"]) @ _head_sums(h, D, d_o.dtype.str)  # (S, B·T, h)
    d_scores -= np.moveaxis(row_dot.reshape(S, B, T, h), 3, 2)[..., None]  # minus (S, B, h, T, 1)
    d_scores *= a  # (S, B, h, T, T)  d loss / d (Q Kᵀ / √d_k)
    scale = 1.0 / math.sqrt(D // h)  # applied to the small (T, d_k) results, not to the (T, T) one
    d_q = (d_scores @ c["k"]) * scale  # (S, B, h, T, d_k)
    d_k = (_t(d_scores) @ c["q"]) * scale  # (S, B, h, T, d_k)

    x = c["x"]  # (S, B·T, D)
    d_x = np.zeros_like(x)
    for name, d_part in (("W_Q", d_q), ("W_K", d_k), ("W_V", d_v)):
        d_part = merge_heads(d_part).reshape(S, B * T, D)  # (S, B·T, D)
        grads[name] = _t(x) @ d_part  # (S, D, D)
        d_x += d_part @ _t(params[name])  # (S, B·T, D)
    grads["E"] = _embed_grad(d_x, c["hot"])  # (S, R, D)
    return loss, grads


def _t(a):
    """Swap the last two axes (a batched transpose)."""
    return np.swapaxes(a, -1, -2)


@functools.lru_cache(maxsize=32)
def _head_sums(h, D, dtype):
    """(D, h) 0/1 matrix: multiplying by it sums each head's d_k columns (a matmul, not a short-axis sum)."""
    sums = np.kron(np.eye(h, dtype=dtype), np.ones((D // h, 1), dtype=dtype))
    sums.flags.writeable = False  # shared between calls (and threads): nobody may change it
    return sums


def _log_softmax(z):
    """(log softmax, softmax) of z over its short last axis, with the per-row maximum subtracted.

    NumPy's reductions are slow over a contiguous axis of 8 entries (one call per row), so the row
    maximum is a loop of element-wise maxima over the columns and the row sum one matrix-vector
    product.
    """
    row_max = z[..., 0].copy()  # (...,)
    for j in range(1, z.shape[-1]):
        np.maximum(row_max, z[..., j], out=row_max)
    shifted = z - row_max[..., None]  # (..., V) largest entry 0, so exp never overflows
    e = np.exp(shifted)
    total = (e.reshape(-1, z.shape[-1]) @ np.ones(z.shape[-1], dtype=z.dtype)).reshape(z.shape[:-1])
    return shifted - np.log(total)[..., None], e / total[..., None]


# ---------------------------------------------------------------------------------------------
# Training and evaluation
# ---------------------------------------------------------------------------------------------


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay from lr to final_lr_frac·lr."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.final_lr_frac + (1 - cfg.final_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def training_data(seeds, task: Task = Task(), cfg: TrainConfig = TrainConfig()) -> Batch:
    """All training sequences of every seed, (S, steps·batch, T): the same stream for every h."""
    return make_batch([np.random.default_rng([seed, 1]) for seed in seeds], cfg.steps * cfg.batch, task)


def held_out_data(task: Task = Task(), cfg: TrainConfig = TrainConfig()) -> Batch:
    """The fixed test set: ``cfg.n_test`` sequences from ``cfg.test_seed``, shape (1, n_test, T)."""
    return make_batch([np.random.default_rng(cfg.test_seed)], cfg.n_test, task)


def train(h: int, seeds, task: Task = Task(), cfg: TrainConfig = TrainConfig(), data: Batch | None = None,
          progress=None, progress_every: int = 25) -> dict:
    """Train one model per seed with h heads, all seeds in the same arrays; returns (S, …) params.

    ``data`` defaults to ``training_data(seeds)``; pass it to share one copy between head counts.
    ``progress(steps_done)`` is called every ``progress_every`` steps, for a progress bar.
    """
    h = _check_config(h, task, cfg)
    seeds = _seed_list(seeds)
    flat, params = init_params(seeds, task, cfg)  # (S, P) and its named views
    grad_flat = np.zeros_like(flat)
    grad_views = views(grad_flat, param_shapes(task, cfg.d_model))
    m, s, tmp = np.zeros_like(flat), np.zeros_like(flat), np.empty_like(flat)
    data = training_data(seeds, task, cfg) if data is None else data
    for step in range(cfg.steps):
        batch = data.rows(slice(step * cfg.batch, (step + 1) * cfg.batch))
        _, grads = loss_and_grads(params, batch, h, task)
        for name, g in grads.items():
            grad_views[name][...] = g
        _adam(flat, grad_flat, m, s, tmp, step, cfg)
        if progress is not None and ((step + 1) % progress_every == 0 or step + 1 == cfg.steps):
            progress(step + 1)
    return params


def _adam(flat, grad, m, s, tmp, step, cfg):
    """One Adam step on the whole (S, P) buffer, in place (β₂ = 0.98 and ε = 1e-9, as in the paper)."""
    np.multiply(grad, 1 - cfg.beta1, out=tmp)
    m *= cfg.beta1
    m += tmp  # first moment
    np.multiply(grad, grad, out=tmp)
    tmp *= 1 - cfg.beta2
    s *= cfg.beta2
    s += tmp  # second moment
    c1, c2 = 1 - cfg.beta1 ** (step + 1), 1 - cfg.beta2 ** (step + 1)  # bias corrections
    np.sqrt(s, out=tmp)
    tmp *= 1 / math.sqrt(c2)
    tmp += cfg.eps
    np.divide(m, tmp, out=tmp)
    tmp *= learning_rate(step, cfg) / c1
    flat -= tmp


def accuracy(params, h: int, data: Batch, task: Task = Task()) -> np.ndarray:
    """Fraction of existing targets predicted right: (S, 3) for prev, next, match."""
    S, D = params["W_Q"].shape[0], params["W_Q"].shape[-1]
    chunk = max(1, (_SINGLE_THREAD_MNK - 1) // (task.T * D * max(D, 3 * task.V)))  # sequences per batch
    correct = np.zeros((S, 3))
    for start in range(0, data.values.shape[1], chunk):
        part = data.rows(slice(start, start + chunk))
        logits, _ = _forward(params, part, h, task)  # (S, b, T, 3, V)
        hit = logits.argmax(axis=-1) == part.targets  # (S, b, T, 3)
        correct += (hit * part.mask).sum(axis=(1, 2))
    return correct / data.mask.sum(axis=(1, 2))


# ---------------------------------------------------------------------------------------------
# What the heads do: maps, entropy, divergence between heads
# ---------------------------------------------------------------------------------------------


def attention_maps(params, h: int, batch: Batch, seed_index: int = 0, task: Task = Task()):
    """Attention weights (B, h, T, T) of model ``seed_index`` of trained (S, …) params on ``batch``.

    ``batch`` has one leading axis of size 1, e.g. ``held_out_data().rows(slice(0, 1))``.
    """
    single = {name: p[seed_index : seed_index + 1] for name, p in params.items()}
    _, cache = _forward(single, batch, h, task)
    return cache["weights"][0]  # (B, h, T, T)


def example_heads(h: int = 4, seed: int = 0, task: Task = Task(), cfg: TrainConfig = TrainConfig()) -> np.ndarray:
    """Attention maps (h, T, T) of a model trained with h heads (one seed) on held-out sequence 0.

    §6 shows these when the pretrained weights are missing. Trains on first use (about a second
    for small h), then reuses the result.
    """
    return _example_heads(_check_config(h, task, cfg), int(seed), task, cfg).copy()


@functools.lru_cache(maxsize=8)
def _example_heads(h, seed, task, cfg):
    params = train(h, [seed], task, cfg)
    return attention_maps(params, h, held_out_data(task, cfg).rows(slice(0, 1)), 0, task)[0]  # (h, T, T)


def weight_on_targets(maps, batch: Batch) -> np.ndarray:
    """Mean attention each head puts on the three target positions: (h, 3) for prev, next, match.

    ``maps`` (B, h, T, T) are one model's weights on ``batch`` (leading axis 1); positions where
    a target does not exist (prev at 0, next at T−1) are left out of its mean.
    """
    maps = np.asarray(maps, dtype=float)  # (B, h, T, T)
    B, h, T, _ = maps.shape
    i = np.arange(T)
    where = [np.broadcast_to((i - 1) % T, (B, T)), np.broadcast_to((i + 1) % T, (B, T)), batch.pointers[0]]
    out = np.zeros((h, 3))
    for t, keys in enumerate(where):  # keys (B, T): the position query i should read for target t
        picked = np.take_along_axis(maps, keys[:, None, :, None], axis=-1)[..., 0]  # (B, h, T)
        exists = batch.mask[0, :, :, t]  # (B, T)
        out[:, t] = (picked * exists[:, None, :]).sum(axis=(0, 2)) / exists.sum()
    return out


# ---------------------------------------------------------------------------------------------
# The sweep over head counts
# ---------------------------------------------------------------------------------------------


@dataclass
class SweepResult:
    """One row per head count (JSON-ready) and the trained parameters, keyed by h, for the plots."""

    results: list
    total_seconds: float
    params: dict
    task: Task
    config: TrainConfig

    def as_json(self) -> dict:
        return {"results": self.results, "total_seconds": round(self.total_seconds, 3)}

    def row(self, h: int) -> dict:
        for r in self.results:
            if r["h"] == h:
                return r
        raise ValueError(f"这次扫描没有训练 h={h}：训练过的头数是 {[r['h'] for r in self.results]}。")


def _train_and_test(h, seed_list, task, cfg, data=None, progress=None):
    """Train every seed for one h and score it on the fixed test set: (params, (S, 3) accuracy, seconds)."""
    t0 = time.perf_counter()
    params = train(h, seed_list, task, cfg, data=data, progress=progress)
    acc = accuracy(params, h, held_out_data(task, cfg), task)  # (S, 3)
    return params, acc, time.perf_counter() - t0


_STEPS_DONE = None  # in a worker process: shared array of steps finished, one slot per head count


def _start_worker(steps_done):
    global _STEPS_DONE
    _STEPS_DONE = steps_done


def _train_in_worker(slot, h, seed_list, task, cfg):
    def report(steps):
        _STEPS_DONE[slot] = steps

    return _train_and_test(h, seed_list, task, cfg, progress=report)


def _train_in_processes(order, seed_list, task, cfg, workers, progress, total_steps):
    """Head counts in separate processes: threads would share one interpreter lock, which cost a fifth
    of the sweep's time in Python overhead between NumPy calls. "spawn" works the same on every OS
    and is safe inside a Jupyter kernel; each worker rebuilds the (seeded) data itself."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    steps_done = ctx.Array("i", len(order), lock=False)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_start_worker,
                             initargs=(steps_done,)) as pool:
        futures = {h: pool.submit(_train_in_worker, i, h, seed_list, task, cfg) for i, h in enumerate(order)}
        pending = set(futures.values())
        while pending:
            _, pending = wait(pending, timeout=0.1)
            if progress is not None:
                progress(sum(steps_done), total_steps)
        return {h: f.result() for h, f in futures.items()}  # re-raises a worker's error here


def sweep(heads=(1, 2, 4, 8, 16, 32), seeds=3, task: Task = Task(), cfg: TrainConfig = TrainConfig(),
          progress=None, workers: int = 2) -> SweepResult:
    """Train ``seeds`` models for every h in ``heads`` and measure them on the fixed test set.

    ``seeds`` is a count (seeds 0 … seeds−1) or a list. Head counts train in ``workers`` processes,
    largest h first (it costs the most: h·T² attention weights per sequence); the results do not
    depend on ``workers``. ``progress(steps_done, steps_total)`` is called from the calling thread.
    Each row: ``accuracy_mean`` (over seeds of the mean over the three targets), ``accuracy_sd``
    (sample standard deviation over seeds, 0 for one seed), ``per_target`` (means over seeds),
    ``accuracy_per_seed`` and ``seconds``, the wall time of that h's own training and test (these
    overlap across processes, so they add up to more than ``total_seconds``).
    """
    heads = [_check_config(h, task, cfg) for h in heads]
    if len(set(heads)) != len(heads):
        raise ValueError(f"头数列表里有重复：{heads}。每个头数只需出现一次。")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers（并行进程数）必须是正整数，收到的是 {workers!r}。")
    seed_list = _seed_list(seeds)
    start = time.perf_counter()
    order = sorted(heads, reverse=True)  # largest h first: it costs the most (h·T² weights per sequence)
    total_steps = len(heads) * cfg.steps
    if workers == 1 or len(heads) == 1:
        outcomes, data = {}, training_data(seed_list, task, cfg)
        for i, h in enumerate(order):
            def report(steps, before=i * cfg.steps):
                if progress is not None:
                    progress(before + steps, total_steps)
            outcomes[h] = _train_and_test(h, seed_list, task, cfg, data, report)
    else:
        outcomes = _train_in_processes(order, seed_list, task, cfg, min(workers, len(heads)), progress, total_steps)

    rows, trained = [], {}
    for h in heads:
        trained[h], acc, seconds = outcomes[h]
        per_seed = acc.mean(axis=1)  # (S,) mean over the three targets
        rows.append(
            {
                "h": h,
                "d_k": cfg.d_model // h,
                "accuracy_mean": round(float(per_seed.mean()), 4),
                "accuracy_sd": round(float(per_seed.std(ddof=1)) if len(seed_list) > 1 else 0.0, 4),
                "per_target": {t: round(float(acc[:, i].mean()), 4) for i, t in enumerate(TARGETS)},
                "accuracy_per_seed": [round(float(a), 4) for a in per_seed],
                "seconds": round(seconds, 3),
            }
        )
    return SweepResult(rows, time.perf_counter() - start, trained, task, cfg)


def format_table(results) -> str:
    """A plain-text table of sweep rows, accuracies to 3 places (deterministic for given seeds)."""
    lines = [f"{'h':>3} {'d_k':>4} {'平均准确率':>8} {'标准差':>6} {'prev':>6} {'next':>6} {'match':>6}"]
    for r in results:
        p = r["per_target"]
        lines.append(
            f"{r['h']:>3} {r['d_k']:>4} {r['accuracy_mean']:>13.3f} {r['accuracy_sd']:>9.3f}"
            f" {p['prev']:>6.3f} {p['next']:>6.3f} {p['match']:>6.3f}"
        )
    return "\n".join(lines)


def _seed_list(seeds):
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"种子个数 seeds 至少为 1，收到的是 {seeds}。")
        return list(range(int(seeds)))
    seed_list = [int(s) for s in seeds]
    if not seed_list:
        raise ValueError("种子列表为空：请至少给一个种子，例如 seeds=3 或 seeds=[0, 1, 2]。")
    return seed_list


def _check_config(h, task: Task, cfg: TrainConfig) -> int:
    if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h < 1:
        raise ValueError(f"头数 h 必须是正整数，收到的是 {h!r}。")
    if cfg.d_model % h:
        raise ValueError(
            f"d_model={cfg.d_model} 不能平均分给 h={h} 个头：请选能整除 {cfg.d_model} 的头数，"
            f"例如 {[c for c in range(1, cfg.d_model + 1) if cfg.d_model % c == 0]}。"
        )
    if task.T < 5 or task.K < task.T:
        raise ValueError(f"任务太小：需要 T ≥ 5 个位置、K ≥ T 个键符号，收到 T={task.T}、K={task.K}。")
    return int(h)


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lesson_lib.ablation",
        description="训练一层多头注意力的小模型（3-lookup 任务），比较不同头数的准确率（论文表 3 (A) 行的玩具版）。",
    )
    parser.add_argument("--heads", default="1,2,4,8,16,32", help="逗号分隔的头数，例如 1,2,4,8,16,32")
    parser.add_argument("--seeds", type=int, default=3, help="每个头数训练几个种子（默认 3）")
    parser.add_argument("--steps", type=int, default=TrainConfig.steps, help="训练步数（默认 700）")
    parser.add_argument("--workers", type=int, default=2, help="同时训练几个头数（进程数，默认 2）")
    parser.add_argument("--json", action="store_true", help="输出一个 JSON 对象而不是表格")
    args = parser.parse_args(argv)
    try:
        heads = [int(part) for part in args.heads.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--heads 应是逗号分隔的整数，例如 1,2,4,8，收到的是 {args.heads!r}")
    if args.steps < 1:
        parser.error(f"--steps 至少为 1，收到的是 {args.steps}")
    try:
        result = sweep(heads, args.seeds, cfg=replace(TrainConfig(), steps=args.steps), workers=args.workers)
    except ValueError as exc:
        parser.error(str(exc))
    if args.json:
        out = result.as_json()
        out["config"] = {"task": asdict(result.task), "train": asdict(result.config), "seeds": args.seeds}
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(format_table(result.results))
        print(f"共 {result.total_seconds:.1f} 秒（{len(heads)} 个头数 × {args.seeds} 个种子）")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------------------------------------
# What section 7 prints about the trained models
# ---------------------------------------------------------------------------------------------

ROLE_NAMES = {0: "前一个", 1: "后一个", 2: "按键查找"}


def specialisation_report(result, batch: Batch, heads=(1, 4)) -> tuple[str, dict]:
    """Per head: mean weight on the prev / next / match positions over ``batch``, and its main role.

    Returns the Chinese text and {h: (h, 3) array} for the figures.
    """
    lines, on_targets = [], {}
    for h in heads:
        maps = attention_maps(result.params[h], h, batch)  # (B, h, T, T)
        on_targets[h] = weight_on_targets(maps, batch)  # (h, 3)
        lines.append(f"h = {h}：每个头放在 prev / next / match 位置上的平均权重")
        for i, row in enumerate(on_targets[h]):
            lines.append(f"  头 {i + 1}：{row[0]:.2f} / {row[1]:.2f} / {row[2]:.2f}"
                         f"  → 主要看「{ROLE_NAMES[int(row.argmax())]}」")
    return "\n".join(lines), on_targets


def main_roles(on_targets_h) -> list[str]:
    """The role each head mainly serves, from a (h, 3) weight_on_targets array."""
    return [ROLE_NAMES[int(row.argmax())] for row in on_targets_h]


def diversity_table(result, batch: Batch, d_model: int = TrainConfig().d_model) -> str:
    """Row entropy and mean pairwise JS divergence of every trained head count, as a text table."""
    from .tables import text_table

    rows = []
    for h in sorted(result.params):
        maps = attention_maps(result.params[h], h, batch)  # (B, h, T, T)
        js = f"{mean_pairwise_js(maps):.2f}" if h > 1 else "-"
        rows.append([h, d_model // h, f"{row_entropy(maps).mean():.2f}", js])
    return text_table(["h", "每头宽度", "行熵（比特）", "头间 JS（比特）"], rows)


def monotone_score_demo(points: int = 9, sharpness: float = 4.0) -> str:
    """Why a 1-dimensional head can only pick an end: q·k is monotone in k, unlike a 2-D dot product.

    Keys in 1-D are spread on a line; in 2-D on a circle. For each query, report which key wins the
    kernel's softmax.
    """
    from .attention import softmax

    lines = []
    keys_1d = np.linspace(-1.0, 1.0, points)  # (points,) smallest first
    for q in (-sharpness, -1.0, 1.0, sharpness):
        weights = softmax(q * keys_1d)  # in 1-D the score is just q × k
        lines.append(f"一维：查询 q = {q:+.0f} 时，权重最大的是第 {int(weights.argmax())} 个键")
    angles = np.linspace(0.0, 2 * np.pi, points, endpoint=False)
    keys_2d = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (points, 2) keys on a circle
    winners = [int(softmax(sharpness * keys_2d @ keys_2d[j]).argmax()) for j in range(points)]
    lines.append(f"二维：让查询指向第 j 个键，得分最高的键依次是 {winners}")
    return "\n".join(lines)
