"""§8's second follow-up: what sharing keys and values across heads (MQA, GQA) saves, in closed form.

Per layer, with model width d, h query heads of width d_k = d / h and g key/value heads
(g = h: multi-head attention; 1 < g < h: grouped-query attention, Ainslie et al. 2023;
g = 1: multi-query attention, Shazeer 2019):

- projection weights: W^Q and W^O stay d × d; W^K and W^V shrink to d × (g·d_k), so
  2·d² + 2·d·g·d_k in all (4·d² when g = h, the count ``flops.parameters`` gives);
- key/value cache per token: the g keys and g values of width d_k a decoder keeps for every
  earlier token while it generates, 2·g·d_k numbers.

Pure functions: they compute and return data; ``table_text`` only formats it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lesson_lib.display.tables import text_table
from lesson_lib.kernel.attention import head_width
from lesson_lib.kernel.validation import LessonInputError, check_int

__all__ = ["KVSharing", "kv_sharing", "variants", "table_text"]


@dataclass(frozen=True)
class KVSharing:
    """One way of sharing keys and values, for one layer."""

    name: str  # what the learner reads: 多头（MHA）…
    kv_heads: int  # g: how many different key/value heads
    d_k: int  # width of every query, key and value head
    projection_params: int  # weights of W^Q, W^K, W^V and W^O
    cache_per_token: int  # numbers kept per token: g keys + g values of width d_k


def _name(h: int, g: int) -> str:
    if g == h:
        return "多头（MHA）"
    if g == 1:
        return "多查询（MQA）"
    return f"分组查询（GQA，{g} 组）"


def kv_sharing(d_model: int, h: int, kv_heads: int) -> KVSharing:
    """Parameters and cache per token of one attention layer whose h query heads share ``kv_heads`` key/value heads."""
    d_model = check_int(d_model, "d_model", minimum=1)
    d_k = head_width(d_model, check_int(h, "h", minimum=1))
    g = check_int(kv_heads, "kv_heads（键/值头的个数）", minimum=1, maximum=h)
    if h % g:
        raise LessonInputError(f"kv_heads = {g} 不能整除 h = {h}：每组要有同样多的查询头，请选 h 的一个约数。")
    return KVSharing(
        name=_name(h, g),
        kv_heads=g,
        d_k=d_k,
        projection_params=2 * d_model * d_model + 2 * d_model * g * d_k,
        cache_per_token=2 * g * d_k,
    )


def variants(d_model: int, h: int, groups: int) -> list[KVSharing]:
    """Multi-head, grouped-query with ``groups`` key/value heads, and multi-query attention, in that order."""
    return [kv_sharing(d_model, h, g) for g in (h, groups, 1)]


def table_text(d_model: int, h: int, groups: int) -> str:
    """The three variants side by side: parameters and cache per token per layer, and the cache relative to MHA."""
    rows = variants(d_model, h, groups)
    full = rows[0].cache_per_token
    body = [[r.name, r.kv_heads, r.projection_params, r.cache_per_token,
             f"1/{full // r.cache_per_token}" if r.cache_per_token < full else "1"] for r in rows]
    title = f"d_model = {d_model}，h = {h} 个查询头，每头宽度 d_k = {rows[0].d_k}（每一层）："
    headers = ["方式", "键/值头数 g", "注意力投影参数", "每个词元缓存的数", "缓存是多头的"]
    return title + "\n" + text_table(headers, body)
