"""Section 9: tie each line of the kernel to the term of the paper's formula it computes.

The map names code fragments; ``line_map`` finds them in the kernel's current source and fails
loudly if one is gone, so the lesson's table cannot drift from the code it describes.
"""

from __future__ import annotations

import inspect

from .attention import multi_head_attention, scaled_dot_product_attention

__all__ = ["MHA_TERMS", "SDPA_TERMS", "line_map", "formula_table", "formula_view"]

SDPA_TERMS = [
    ("q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)", "Q Kᵀ / √d_k（公式 (1) 的打分，除以 √d_k 防止点积过大）"),
    ("np.where(mask, scores, -np.inf)", "（可选）掩码：不许看的位置权重为 0"),
    ("softmax(scores, axis=-1)", "softmax(·)：每一行变成加起来为 1 的权重"),
    ("weights @ v", "· V：按权重对值向量加权求和"),
]

MHA_TERMS = [
    ("split_heads(x @ w_q, h)", "Q W_i^Q：W^Q 是 d_model × d_model，就是 h 个 d_model × d_k 的 W_i^Q 并排放"),
    ("split_heads(x @ w_k, h)", "K W_i^K（同上，第 i 个头拿第 i 块列）"),
    ("split_heads(x @ w_v, h)", "V W_i^V（d_v = d_k = d_model / h）"),
    ("scaled_dot_product_attention(q, k, v, mask)", "head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)，h 个头一次算完"),
    ("merge_heads(heads) @ w_o", "Concat(head_1, …, head_h) W^O，W^O 是 (h·d_v) × d_model"),
]


def line_map(fn, terms) -> list[tuple[int, str, str]]:
    """(line number within fn, code line, formula term) for every fragment in ``terms``."""
    lines = inspect.getsource(fn).splitlines()
    rows = []
    for fragment, term in terms:
        hits = [i for i, line in enumerate(lines) if fragment in line.split("#")[0]]  # code, not comments
        if not hits:
            raise LookupError(f"{fn.__name__} 的源码里找不到 {fragment!r}：内核改了，请同步更新公式对照表。")
        i = hits[0]
        rows.append((i + 1, lines[i].split("#")[0].strip(), term))
    return rows


def formula_table() -> str:
    """Both kernels' lines next to the formula terms, as text."""
    from .tables import text_table

    out = []
    for fn, terms in ((scaled_dot_product_attention, SDPA_TERMS), (multi_head_attention, MHA_TERMS)):
        rows = [[code, term] for _, code, term in line_map(fn, terms)]
        out.append(f"{fn.__name__}：\n" + text_table(["代码", "对应论文里的哪一项"], rows))
    return "\n\n".join(out)


def formula_view():
    """The same tables as ``formula_table``, shown as HTML tables in JupyterLab (cells wrap between words)."""
    from .theme import Table, Tables

    return Tables(Table(["代码", "对应论文里的哪一项"], [[code, term] for _, code, term in line_map(fn, terms)],
                        caption=f"{fn.__name__}：")
                  for fn, terms in ((scaled_dot_product_attention, SDPA_TERMS), (multi_head_attention, MHA_TERMS)))
