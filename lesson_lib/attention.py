"""缩放点积注意力与多头注意力，照论文的公式一行一行写成。

Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V                      （公式 (1)，§3.2.1）
MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)                 （§3.2.2）

形状里的字母：n = 词数，d_model = 模型宽度，h = 头数，d_k = d_v = d_model / h。
论文的写法是行向量乘权重（``X W``）；第 i 个头拥有每个 (d_model, d_model) 投影矩阵的第 i 块列。

每个公开的函数都是一道门：第一行把参数交给 ``lesson_lib.checks`` 检查一次（输入有问题时抛出
``AttentionInputError``，它是带中文说明的 ``ValueError``），第二行交给同名的公式函数（名字以 ``_``
开头）。公式函数里只有公式，什么也不检查：它们互相调用时，输入早在门口查过了。所以不管是你直接调用，
还是本课别的代码调用，检查都只做一次，结果也一样。``@translated`` 把 numpy 报告的溢出和内存不足换成
中文说明。更快的版本在 ``benchmarks/attention_fast.py``，结果相同，课程不调用它。

每个注意力函数都返回 ``(输出, 权重)``，画图和小部件读的权重就是算出这个输出的那一份。
"""

import math

import numpy as np

from lesson_lib.checks import (
    check_heads,
    check_logits,
    check_merge,
    check_mha,
    check_qkv,
    check_split,
    translated,
)


@translated
def softmax(x, axis=-1):
    """沿 ``axis`` 计算 softmax(x)_j = exp(x_j) / Σ_k exp(x_k)。"""
    x, axis = check_logits(x, axis)  # (..., n) 浮点数组；没有 NaN、+inf，也没有整行都是 −inf
    return _softmax(x, axis)  # (..., n) 每行加起来等于 1


def _softmax(x, axis=-1):
    """softmax 的公式。先减去每行的最大值：softmax 的值不变，exp() 也不会溢出。"""
    shifted = x - x.max(axis=axis, keepdims=True)  # (..., n) 每行最大的数变成 0
    e = np.exp(shifted)  # (..., n) 每个数都在 [0, 1] 里
    return e / e.sum(axis=axis, keepdims=True)  # (..., n) 每行加起来等于 1


@translated
def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(Q Kᵀ / √d_k) V。[…, n_q, d_k], […, n_k, d_k], […, n_k, d_v] -> (out, weights)。

    ``mask`` 是布尔数组（True = 可以关注），要能广播到打分的形状 ``(..., n_q, n_k)``。
    返回形状为 ``(..., n_q, d_v)`` 的 ``out`` 和形状为 ``(..., n_q, n_k)`` 的 ``weights``。
    """
    q, k, v, mask = check_qkv(q, k, v, mask)  # (…, n_q, d_k), (…, n_k, d_k), (…, n_k, d_v), 掩码
    return _scaled_dot_product_attention(q, k, v, mask)  # (..., n_q, d_v), (..., n_q, n_k)


def _scaled_dot_product_attention(q, k, v, mask=None):
    """公式 (1)：打分、缩放、（掩码）、softmax、按权重取值。"""
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (..., n_q, n_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # (..., n_q, n_k) 不许看的键权重为 0
    weights = _softmax(scores, axis=-1)  # (..., n_q, n_k) 每行加起来等于 1
    return weights @ v, weights  # (..., n_q, d_v), (..., n_q, n_k)


@translated
def split_heads(x, h):
    """把特征轴切成 h 个头：(..., n, d_model) -> (..., h, n, d_k)。"""
    x, h = check_split(x, h)  # (..., n, d_model)，h 能整除 d_model
    return _split_heads(x, h)  # (..., h, n, d_k)


def _split_heads(x, h):
    """第 i 个头拿 d_model 里的第 i 块 d_k 列。"""
    *lead, n, d_model = x.shape
    x = x.reshape(*lead, n, h, d_model // h)  # (..., n, h, d_k) 第 i 块列 -> 第 i 个头
    return np.swapaxes(x, -2, -3)  # (..., h, n, d_k) 头放到前面，每个头是一个矩阵


@translated
def merge_heads(x):
    """Concat(head_1, …, head_h)：(..., h, n, d_k) -> (..., n, h·d_k)，split_heads 的逆运算。"""
    x = check_merge(x)  # (..., h, n, d_k)
    return _merge_heads(x)  # (..., n, h·d_k)


def _merge_heads(x):
    """各个头的输出左右并排。"""
    *lead, h, n, d_k = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., n, h, d_k) 词元重新放到前面
    return x.reshape(*lead, n, h * d_k)  # (..., n, d_model) 各个头左右并排


@translated
def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """h 个头的自注意力：(..., n, d_model) -> (out (..., n, d_model), weights (..., h, n, n))。"""
    x, w_q, w_k, w_v, w_o, h, mask = check_mha(x, w_q, w_k, w_v, w_o, h, mask)  # X (…, n, d_model)
    return _multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask)  # out, weights (..., h, n, n)


def _multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """MultiHead：h 个头一次算完，再拼接、乘 W^O。"""
    q = _split_heads(x @ w_q, h)  # (..., h, n, d_k)   一次算出每个 i 的 Q W_i^Q
    k = _split_heads(x @ w_k, h)  # (..., h, n, d_k)   K W_i^K
    v = _split_heads(x @ w_v, h)  # (..., h, n, d_v)   V W_i^V
    heads, weights = _scaled_dot_product_attention(q, k, v, mask)  # (..., h, n, d_v), (.., h, n, n)
    return _merge_heads(heads) @ w_o, weights  # (..., n, d_model)  Concat(head_i) W^O


def head_width(d_model, h):
    """d_k = d_model / h；h 不能整除 d_model 时给出中文说明。"""
    return d_model // check_heads(d_model, h)  # d_k (一个整数)
