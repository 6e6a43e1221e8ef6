"""§8 · 面试题: the follow-up table of key/value sharing (MHA, GQA, MQA), computed by ``lesson_lib.costs``."""

from __future__ import annotations

from lesson_lib.costs import variants
from lesson_lib.show.tables import text_table


def table_text(d_model: int, h: int, groups: int) -> str:
    """The three variants per layer: parameters, numbers cached per token, and that cache against MHA's (short
    headers: within 72 monospace columns, a 592 px output)."""
    rows = variants(d_model, h, groups)
    full = rows[0].cache_per_token
    body = [[r.name, r.kv_heads, r.projection_params, r.cache_per_token,
             f"1/{full // r.cache_per_token}" if r.cache_per_token < full else "1"] for r in rows]
    title = f"d_model = {d_model}，h = {h} 个查询头，每头宽度 d_k = {rows[0].d_k}（每一层）："
    return title + "\n" + text_table(["方式", "键/值头 g", "投影参数", "每词元缓存", "缓存占多头"], body)
