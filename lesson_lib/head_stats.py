"""How spread out one head's attention is (row entropy), how different the heads are (JS
divergence), and how little a narrow head's winner keeps when many keys share its dimensions; §5,
§7."""

import numpy as np

from lesson_lib.attention import softmax
from lesson_lib.checks import LessonInputError


def row_entropy(weights) -> np.ndarray:
    """Entropy in bits of every attention row: 0 = all weight on one key, log2(n) = uniform."""
    w = _check_weights(weights)
    return -(w * np.log2(np.clip(w, 1e-300, None))).sum(axis=-1)  # (..., n)


def mean_pairwise_js(weights) -> float:
    """Mean Jensen–Shannon divergence (bits) between every pair of heads of ``weights`` (..., h, n,
    n), query row by query row: 0 = the heads attend identically, 1 = to disjoint keys."""
    w = _check_weights(weights)
    if w.ndim < 3 or w.shape[-3] < 2:
        raise LessonInputError(f"比较头与头之间的差异至少需要 2 个头，收到的权重形状是 {w.shape}："
                               "请传入 (h, n, n) 且 h ≥ 2。")
    h = w.shape[-3]
    pairs = []
    for i in range(h - 1):  # head i against every later head at once: h − 1 steps, not h²/2
        p = w[..., i : i + 1, :, :]  # (..., 1, n, n)
        q = w[..., i + 1 :, :, :]  # (..., h−i−1, n, n)
        mid = 0.5 * (p + q)
        pairs.append(0.5 * (_kl_bits(p, mid) + _kl_bits(q, mid)).ravel())  # (..., h−i−1, n) flat
    return float(np.concatenate(pairs).mean())


def _kl_bits(p, q):
    """KL(p ‖ q) in bits per row; terms with p = 0 contribute 0."""
    ratio = np.where(p > 0, p / np.where(q > 0, q, 1.0), 1.0)
    return (p * np.log2(ratio)).sum(axis=-1)


def _check_weights(weights):
    w = np.asarray(weights, dtype=float)
    if w.ndim < 2 or not np.isfinite(w).all() or (w < 0).any():
        raise LessonInputError("注意力权重应是非负有限数、至少 2 维 (…, n, n)，"
                               f"收到的形状是 {w.shape}：请传入 softmax 的输出。")
    if not np.allclose(w.sum(axis=-1), 1.0, atol=1e-4):
        raise LessonInputError("注意力权重的每一行加起来应为 1：请传入 softmax 之后的权重，"
                               "而不是打分。")
    return w


def circle_keys(n: int) -> np.ndarray:
    angles = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)  # (n, 2) unit keys on a circle


def crowded_keys(counts=(9, 64), sharpness: float = 4.0) -> dict:
    """{n: the winner's softmax weight} when n unit keys share a circle (d_k = 2) and the query
    points at key 1, ``sharpness`` = query length × key length: more keys, less margin."""
    return {n: float(softmax(sharpness * circle_keys(n) @ circle_keys(n)[0]).max()) for n in counts}
