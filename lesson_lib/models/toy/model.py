"""The toy model: embeddings -> one multi-head self-attention layer (the kernel) -> read-out, and its backward pass.

The backward pass is written by hand because §7 teaches it (the tests check it against finite differences).
Every parameter has a leading seed axis S: the seeds of one head count train as one batch of arrays, and each
model still sees only its own numbers.
"""

import functools
import math

import numpy as np

from lesson_lib.attention import merge_heads, scaled_dot_product_attention, split_heads
from lesson_lib.models.toy.config import DEFAULT_CONFIG, DEFAULT_TASK, Task, TrainConfig
from lesson_lib.models.toy.task import Batch


def param_shapes(task: Task, d_model: int) -> dict:
    """Shape of each parameter of one model; none depends on h, so every h has the same parameters."""
    D = d_model
    return {"E": (task.V + 2 * task.K + task.T, D),  # four tables (values, keys, query tags, positions): 4 rows a token
            "W_Q": (D, D), "W_K": (D, D), "W_V": (D, D), "W_O": (D, D),  # head i owns column block i, as in the kernel
            "R": (D, 3 * task.V), "b": (3 * task.V,)}  # read-out: three V-way classifiers side by side


def init_params(seeds, task: Task = DEFAULT_TASK, cfg: TrainConfig = DEFAULT_CONFIG):
    """``(flat, params)``: one (S, P) buffer (Adam updates it whole) and named (S, *shape) views into it.

    A seed gives the same starting weights for every h, so runs with different head counts differ only in h.
    """
    shapes = param_shapes(task, cfg.d_model)
    std = {"E": cfg.emb_std, "b": 0.0}  # the rest N(0, 1/D), which keeps x W at x's scale
    per_seed = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 0])  # stream 0: weights (stream 1 is the training data)
        per_seed.append(np.concatenate([rng.normal(0.0, std.get(name, 1.0 / math.sqrt(cfg.d_model)), shape).ravel()
                                        for name, shape in shapes.items()]))
    flat = np.stack(per_seed).astype(cfg.dtype)  # (S, P)
    return flat, views(flat, shapes)


def views(flat, shapes) -> dict:
    """Named (S, *shape) views into an (S, P) buffer, in ``shapes`` order."""
    out, offset = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        out[name] = flat[:, offset : offset + size].reshape(flat.shape[0], *shape)
        offset += size
    return out


# OpenBLAS splits one matrix product over threads once m·n·k reaches 2·4·65536. On a busy 2-core
# machine a split product waits for a free core and can take 100× longer, so every product here
# stays below that size (the embedding and its gradient go in token chunks, the test set in small batches).
SINGLE_THREAD_MNK = 2 * 4 * 65536


def _multi_hot(batch: Batch, task: Task, n_rows, dtype):
    """(S, B·T, R) 0/1 matrix with four ones per token (its value, key, query tag and position rows of E)."""
    S, B, T = batch.values.shape
    positions = np.broadcast_to(np.arange(T) + task.V + 2 * task.K, (S, B, T))
    rows = np.stack([batch.values, batch.keys + task.V, batch.queries + task.V + task.K, positions], -1)  # (S,B,T,4)
    hot = np.zeros((S, B * T, n_rows), dtype=dtype)
    np.put_along_axis(hot, rows.reshape(S, B * T, 4), 1.0, axis=-1)
    return hot


def _token_chunks(n_tokens, n_rows, D):
    """Slices of tokens small enough that hot @ E and hotᵀ @ d_x stay single-threaded products."""
    chunk = max(1, (SINGLE_THREAD_MNK - 1) // (n_rows * D))
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


def forward(params, batch: Batch, h: int, task: Task):
    """Logits (S, B, T, 3, V) and what the backward pass needs. S models, B sequences, T tokens."""
    S = params["W_Q"].shape[0]
    B, T = batch.values.shape[1:]
    D = params["W_Q"].shape[-1]
    hot = _multi_hot(batch, task, params["E"].shape[1], params["E"].dtype)  # (S, B·T, R)
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


def loss_and_grads(params, batch: Batch, h: int, task: Task = DEFAULT_TASK):
    """Masked mean cross-entropy of every model, shape (S,), and its gradient for every parameter.

    Each model's loss depends only on its own parameters, so the gradient of the sum over models
    gives every model its own gradient at once.
    """
    logits, c = forward(params, batch, h, task)
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


def attention_maps(params, h: int, batch: Batch, seed_index: int = 0, task: Task = DEFAULT_TASK):
    """Attention weights (B, h, T, T) of model ``seed_index`` of trained (S, …) params on ``batch``.

    ``batch`` has one leading axis of size 1, e.g. ``held_out_data().rows(slice(0, 1))``.
    """
    single = {name: p[seed_index : seed_index + 1] for name, p in params.items()}
    _, cache = forward(single, batch, h, task)
    return cache["weights"][0]  # (B, h, T, T)
