"""The BERT / XLM-R encoder §6's two models share (post-LayerNorm, exact GELU), its attention run by
the kernel. Loaders hand it ``tensors`` ({name: float32 (out, in)}, ``e5.tensor_shapes``' names),
``word_rows(ids)`` and a tokenizer. Shapes: T tokens, d width, L layers, H heads, d_k = d / H, F
feed-forward width."""

import math
from collections import namedtuple

import numpy as np

from lesson_lib.attention import _merge_heads, _scaled_dot_product_attention, _split_heads
from lesson_lib.checks import LessonInputError, LessonInputTypeError

EncoderConfig = namedtuple("EncoderConfig", "name n_layers n_heads d_model eps max_tokens")


# One sentence's forward pass: T tokens (start and end token included), attentions (L, H, T, T).
Encoding = namedtuple("Encoding", "tokens attentions")


def gelu(x):
    """Exact GELU, ½x(1 + erf(x/√2)), as BERT's "gelu"; erf by Abramowitz & Stegun 7.1.26 (|error| ≤
    1.5e-7), since NumPy has no vectorised erf."""
    z = np.abs(x) * np.float32(1 / math.sqrt(2))
    t = 1 / (1 + np.float32(0.3275911) * z)
    inner = -1.453152027 + t * 1.061405429
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * inner)))
    erf_abs = 1 - poly * np.exp(-z * z)  # erf(|x|/√2)
    return (0.5 * x * (1 + np.sign(x) * erf_abs)).astype(x.dtype, copy=False)


def layer_norm(x, weight, bias, eps):
    """(T, d) -> (T, d): normalise each token's features, then scale and shift."""
    mean = x.mean(axis=-1, keepdims=True)  # (T, 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (T, 1) biased variance, as in BERT
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _linear(x, weight, bias):  # weight is stored (out, in): .T is a free view
    return x @ weight.T + bias


class Encoder:
    """A BERT-style encoder: ``attend(text)`` -> ``Encoding`` (tokens, attentions (L, H, T, T))."""

    def __init__(self, config, tensors, word_rows, tokenizer):
        self.config = config
        self.w = tensors
        self.word_rows = word_rows
        self.tokenizer = tokenizer
        self.n_layers = config.n_layers
        self.n_heads = config.n_heads

    def attend(self, text):
        """An ``Encoding``; text that is not a non-empty str is a Chinese error."""
        if not isinstance(text, str):
            raise LessonInputTypeError("要分析的句子必须是字符串（str），收到的是 "
                                       f"{type(text).__name__}。")
        if not text.strip():
            raise LessonInputError("句子是空的：请输入至少一个字或词。")
        tokens, ids = self.tokenizer.encode(text)
        return Encoding(tokens, self.forward(ids)[0])

    def forward(self, ids):
        """ids (T,) -> (attentions (L, H, T, T), hidden_states (L + 1, T, d))."""
        ids = np.asarray(ids)
        w = self.w
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise LessonInputError(f"ids 应是一维整数数组（词表编号），收到的形状是 {ids.shape}、"
                                   f"类型 {ids.dtype}。")
        if not 1 <= len(ids) <= (limit := self.config.max_tokens):
            raise LessonInputError(f"这句话切分后有 {len(ids)} 个词元，模型只能处理 1 到 {limit} "
                                   "个：请换一句短一些的句子。")
        if ids.min() < 0 or ids.max() >= (vocab_size := self.tokenizer.vocab_size):
            raise LessonInputError(f"ids 里有超出词表范围 [0, {vocab_size}) 的编号：请用分词器 "
                                   "encode() 得到的编号。")
        # (T, d) word + position 0..T-1 + type 0
        x = self.word_rows(ids) + w["emb.pos"][: len(ids)] + w["emb.type"][0]
        x = layer_norm(x, w["emb.ln.w"], w["emb.ln.b"], self.config.eps)  # (T, d)
        hidden = [x]
        attentions = []
        # post-LayerNorm blocks: x = LN(x + attention(x)); x = LN(x + FFN(x))
        for layer in range(self.n_layers):
            p = f"l{layer}."
            attn_out, weights = self._self_attention(x, p)  # (T, d), (H, T, T)
            # (T, d)  Concat(heads) W^O + b
            attn_out = _linear(attn_out, w[p + "ao.w"], w[p + "ao.b"])
            x = layer_norm(x + attn_out, w[p + "aln.w"], w[p + "aln.b"], self.config.eps)  # (T, d)
            inner = gelu(_linear(x, w[p + "fi.w"], w[p + "fi.b"]))  # (T, F)
            ffn = _linear(inner, w[p + "fo.w"], w[p + "fo.b"])  # (T, d)
            x = layer_norm(x + ffn, w[p + "oln.w"], w[p + "oln.b"], self.config.eps)  # (T, d)
            hidden.append(x)
            attentions.append(weights)
        return np.stack(attentions), np.stack(hidden)  # (L, H, T, T), (L + 1, T, d)

    def _self_attention(self, x, p):
        """乘 W^O 之前的 Concat(head_1..head_H)，以及 (H, T, T) 的注意力权重；注意力本身交给本课内核
        的公式函数 （不再检查：模型自己的数组，形状在加载时已经核对过）。"""
        w = self.w
        # (T, d) X W^Q + b^Q：自注意力里 Q、K、V 都来自同一个 X
        q = _linear(x, w[p + "q.w"], w[p + "q.b"])
        k = _linear(x, w[p + "k.w"], w[p + "k.b"])  # (T, d)  X W^K + b^K
        v = _linear(x, w[p + "v.w"], w[p + "v.b"])  # (T, d)  X W^V + b^V
        q, k, v = (_split_heads(a, self.n_heads) for a in (q, k, v))  # 3 × (H, T, d_k) 切成 H 个头
        # (H, T, d_k), (H, T, T) H 个头一次算完
        heads, weights = _scaled_dot_product_attention(q, k, v)
        return _merge_heads(heads), weights  # (T, d) 拼接, (H, T, T)

