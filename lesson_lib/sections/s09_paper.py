"""§9: each line of the kernel beside the term of the paper's formula it computes, found in the
kernel's current source (a fragment that is gone fails loudly, so the table cannot drift from the
code)."""

import inspect

from lesson_lib import attention
from lesson_lib.show.tables import TextTable, text_table

SOFTMAX_TERMS = [
    ("check_logits(x, axis)", "（公式之外）先检查输入：类型、是否为空、axis、有没有 NaN 或 +inf"),
    ("x - x.max(axis=axis, keepdims=True)", "减去每行的最大值：softmax 的值不变，exp 不会溢出"),
    ("np.exp(shifted)", "exp(x_j)：softmax 的分子"),
    ("e / e.sum(axis=axis, keepdims=True)", "÷ Σ_k exp(x_k)：每行加起来等于 1"),
]

SDPA_TERMS = [
    ("check_qkv(q, k, v, mask)",
     "（公式之外）先检查 Q、K、V 和掩码：形状、类型、有没有 NaN 或 inf"),
    ("q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)",
     "Q Kᵀ / √d_k（打分并缩放；q、k 分量独立、均值 0、方差 1 时得方差 1）"),
    ("np.where(mask, scores, -np.inf)", "（可选）掩码：不许看的位置权重为 0"),
    ("softmax(scores, axis=-1)", "softmax(·)：每一行变成加起来为 1 的权重"),
    ("weights @ v", "· V：按权重对值向量加权求和"),
]

MHA_TERMS = [
    ("check_mha(x, w_q, w_k, w_v, w_o, h, mask)", "（公式之外）先检查 X、四个权重矩阵、h 和掩码"),
    ("split_heads(x @ w_q, h)",
     "Q W_i^Q（自注意力里 Q = K = V = X）：W^Q 是 h 个 d_model × d_k 的 W_i^Q 并排放"),
    ("split_heads(x @ w_k, h)", "K W_i^K（同上，第 i 个头拿第 i 块列）"),
    ("split_heads(x @ w_v, h)", "V W_i^V（d_v = d_k = d_model / h）"),
    ("scaled_dot_product_attention(q, k, v, mask)",
     "head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)，h 个头一次算完"),
    ("merge_heads(heads) @ w_o", "Concat(head_1, …, head_h) W^O，W^O 是 (h·d_v) × d_model"),
]

# Each public function (its check at the door), then the formula function it hands the input to.
KERNELS = [
    ((attention.softmax, attention._softmax), SOFTMAX_TERMS),
    ((attention.scaled_dot_product_attention, attention._scaled_dot_product_attention), SDPA_TERMS),
    ((attention.multi_head_attention, attention._multi_head_attention), MHA_TERMS),
]


def line_map(fns, terms) -> list[tuple[int, str, str]]:
    """(line number in the listing of ``fns``, code line, formula term) for each of ``terms``."""
    # code, not comments
    code = [line.split("#")[0] for fn in fns for line in inspect.getsource(fn).splitlines()]
    rows = []
    for fragment, term in terms:
        i = next((i for i, line in enumerate(code) if fragment in line), None)
        if i is None:
            raise LookupError(f"{fns[0].__name__} 的源码里找不到 {fragment!r}：内核改了，"
                              "请同步更新公式对照表。")
        rows.append((i + 1, code[i].strip(), term))
    return rows


def formula_view():
    """One table per kernel function."""
    views = []
    for fns, terms in KERNELS:
        rows = [[code, term] for _, code, term in line_map(fns, terms)]
        table = text_table(["代码", "对应论文里的哪一项"], rows, code_columns=(0,))
        views.append(table.around(before=f"{fns[0].__name__}："))
    return TextTable("\n\n".join(views), "".join(v.html for v in views))
