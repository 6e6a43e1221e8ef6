"""缩放点积注意力与多头注意力，照论文的公式一行一行写成。

Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V                      （公式 (1)，§3.2.1）
MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)                 （§3.2.2）

形状里的字母：n = 词数，d_model = 模型宽度，h = 头数，d_k = d_v = d_model / h。
论文的写法是行向量乘权重（``X W``）；第 i 个头拥有每个 (d_model, d_model) 投影矩阵的第 i 块列。

这个文件里只有公式：每个函数的第一行把参数交给 ``lesson_lib.checks`` 检查（所有版本用同一套
检查；输入有问题时抛出 ``AttentionInputError``，它是带中文说明的 ``ValueError``），后面每一行都是
公式里的一项。不管是你直接调用，还是另一个函数调用它，检查都一样，结果也一样。
更快的版本在 ``benchmarks/attention_fast.py``，结果相同，课程不调用它。

每个注意力函数都返回 ``(输出, 权重)``，画图和小部件读的权重就是算出这个输出的那一份。
"""

from __future__ import annotations

import math

import numpy as np

from lesson_lib.checks import check_heads, check_logits, check_merge, check_mha, check_qkv, check_split, translated


def softmax(x, axis=-1):
    """沿 ``axis`` 计算 softmax(x)_j = exp(x_j) / Σ_k exp(x_k)。

    先减去每行的最大值：softmax 的值不变，exp() 也不会溢出。
    """
    x, axis = check_logits(x, axis)  # (..., n) 浮点数组；没有 NaN、+inf，也没有整行都是 −inf
    shifted = x - x.max(axis=axis, keepdims=True)  # (..., n) 每行最大的数变成 0
    e = np.exp(shifted)  # (..., n) 每个数都在 [0, 1] 里
    return e / e.sum(axis=axis, keepdims=True)  # (..., n) 每行加起来等于 1


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ / √d_k) V。  [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v] -> (out, weights)。

    ``mask`` 是布尔数组（True = 可以关注），要能广播到打分的形状 ``(..., n_q, n_k)``。
    返回形状为 ``(..., n_q, d_v)`` 的 ``out`` 和形状为 ``(..., n_q, n_k)`` 的 ``weights``。
    """
    q, k, v, mask = check_qkv(q, k, v, mask)  # (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v), 掩码或 None
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k) 不许看的键权重为 0
    weights = softmax(scores, axis=-1)  # (..., n_q, n_k) 每行加起来等于 1
    return weights @ v, weights  # (..., n_q, d_v), (..., n_q, n_k)


def split_heads(x, h):
    """把特征轴切成 h 个头：(..., n, d_model) -> (..., h, n, d_k)。"""
    x, h = check_split(x, h)  # (..., n, d_model)，h 能整除 d_model
    *lead, n, d_model = x.shape
    x = x.reshape(*lead, n, h, d_model // h)  # (..., n, h, d_k) 第 i 块列 -> 第 i 个头
    return np.swapaxes(x, -2, -3)  # (..., h, n, d_k) 头放到前面，每个头是一个矩阵


def merge_heads(x):
    """Concat(head_1, …, head_h)：(..., h, n, d_k) -> (..., n, h·d_k)，split_heads 的逆运算。"""
    x = check_merge(x)  # (..., h, n, d_k)
    *lead, h, n, d_k = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., n, h, d_k) 词元重新放到前面
    return x.reshape(*lead, n, h * d_k)  # (..., n, d_model) 各个头左右并排


def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """h 个头的自注意力：(..., n, d_model) -> (out (..., n, d_model), weights (..., h, n, n))。"""
    x, w_q, w_k, w_v, w_o, h, mask = check_mha(x, w_q, w_k, w_v, w_o, h, mask)  # X (..., n, d_model)；W (d, d)
    q = split_heads(x @ w_q, h)  # (..., h, n, d_k)   一次算出每个 i 的 Q W_i^Q
    k = split_heads(x @ w_k, h)  # (..., h, n, d_k)   K W_i^K
    v = split_heads(x @ w_v, h)  # (..., h, n, d_v)   V W_i^V
    heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (..., h, n, d_v), (..., h, n, n)
    return merge_heads(heads) @ w_o, weights  # (..., n, d_model)  Concat(head_i) W^O


def multi_head_attention_reference(x, w_q, w_k, w_v, w_o, h, mask=None):
    """论文的定义，一次算一个头：放在批量版本旁边的朴素循环。"""
    x, w_q, w_k, w_v, w_o, h, mask = check_mha(x, w_q, w_k, w_v, w_o, h, mask)  # 掩码 (..., h, n, n) 或 None
    d_k = x.shape[-1] // h
    heads, weights = [], []
    for i in range(h):
        block = slice(i * d_k, (i + 1) * d_k)  # 第 i 个头拥有第 [i·d_k, (i+1)·d_k) 列
        mask_i = None if mask is None else mask[..., i, :, :]  # (..., n, n)
        head_i, weights_i = scaled_dot_product_attention(  # (..., n, d_v), (..., n, n)
            x @ w_q[:, block],  # (..., n, d_k)  X W_i^Q
            x @ w_k[:, block],  # (..., n, d_k)  X W_i^K
            x @ w_v[:, block],  # (..., n, d_v)  X W_i^V
            mask_i,
        )
        heads.append(head_i)  # (..., n, d_v)
        weights.append(weights_i)  # (..., n, n)
    concat = np.concatenate(heads, axis=-1)  # (..., n, h·d_v)
    return concat @ w_o, np.stack(weights, axis=-3)  # (..., n, d_model), (..., h, n, n)


def head_width(d_model, h):
    """d_k = d_model / h；h 不能整除 d_model 时给出中文说明。"""
    return d_model // check_heads(d_model, h)  # d_k (一个整数)


# 数值溢出和内存不足不靠事先预测：numpy 报告时，translated 把它们换成本课的中文说明（见 lesson_lib.checks）。
softmax = translated(softmax)
scaled_dot_product_attention = translated(scaled_dot_product_attention)
split_heads = translated(split_heads)
merge_heads = translated(merge_heads)
multi_head_attention = translated(multi_head_attention)
multi_head_attention_reference = translated(multi_head_attention_reference)
