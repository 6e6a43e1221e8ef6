"""The explorer's logic: one head, one query token (the widget in pretrained_views only wires controls to these).

Everything a learner reads counts from 1: layers, heads and token positions.
"""

from __future__ import annotations

import numpy as np

from lesson_lib.checks import check_int
from lesson_lib.models.pretrained.head_finder import find_token

__all__ = ["check_layer_head", "describe_row", "head_label", "query_index", "token_options", "top_keys"]

def head_label(layer, head):
    """'第 4 层 · 头 2' for 1-based layer and head."""
    return f"第 {layer} 层 · 头 {head}"


def check_layer_head(attentions, layer, head):
    """1-based (layer, head) -> 0-based indices into ``attentions`` (L, H, T, T), with a Chinese error."""
    n_layers, n_heads = np.shape(attentions)[:2]
    layer = check_int(layer, "层号 layer（从 1 数起）", minimum=1, maximum=n_layers)
    head = check_int(head, "头号 head（从 1 数起）", minimum=1, maximum=n_heads)
    return layer - 1, head - 1


def query_index(tokens, query):
    """A query given as a 1-based position (int) or a token (str, first occurrence) -> its 0-based index."""
    if isinstance(query, str):
        return find_token(tokens, query)
    if isinstance(query, bool) or not isinstance(query, (int, np.integer)) or not 1 <= query <= len(tokens):
        raise ValueError(
            f"查询词元应是 1 到 {len(tokens)} 之间的位置（从 1 数起），或这句话里的一个词元（如「its」），"
            f"收到的是 {query!r}。"
        )
    return int(query) - 1


def token_options(tokens):
    """Dropdown entries [('10 · its', 10), ...], 1-based: the position tells repeated tokens (be, ',') apart."""
    return [(f"{i} · {t}", i) for i, t in enumerate(tokens, start=1)]


def top_keys(tokens, row, k=3):
    """The k most-attended tokens of one attention row: [(0-based index, token, weight)], heaviest first."""
    row = np.asarray(row)
    order = np.argsort(-row, kind="stable")[:k]
    return [(int(j), tokens[j], float(row[j])) for j in order]


def describe_row(tokens, attentions, layer, head, query, k=3):
    """One Chinese line: where one head sends one token's attention (1-based layer/head, rounded weights)."""
    li, hi = check_layer_head(attentions, layer, head)
    qi = query_index(tokens, query)
    row = np.asarray(attentions)[li, hi, qi]  # (T,) sums to 1
    best = "、".join(f"{tok}（位置 {j + 1}）{w:.2f}" for j, tok, w in top_keys(tokens, row, k))
    return (
        f"{head_label(layer, head)}：查询词元「{tokens[qi]}」（位置 {qi + 1}）的注意力最多给了 {best}；"
        f"平均分配的话每个词元只有 {1 / len(tokens):.2f}。"
    )
