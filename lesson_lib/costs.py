"""Closed-form costs of one self-attention layer, pure functions of n, d_model and h (the tests
measure the kernel).

§4: ``count`` — multiplies per stage (d_k = d_v = d_model / h); ``parameters`` — learnable weights.
§8: ``kv_sharing`` — what sharing keys and values across heads saves: h query heads of width d_k
share g key/value heads (g = h: MHA; 1 < g < h: GQA, Ainslie et al. 2023; g = 1: MQA, Shazeer 2019).
W^K and W^V shrink to d × (g·d_k), so 2·d² + 2·d·g·d_k projection weights; a decoder caches 2·g·d_k
numbers per earlier token."""

from dataclasses import dataclass

from lesson_lib.attention import head_width
from lesson_lib.checks import check_choice, check_heads, check_int

# One definition of the element-wise work that grows with h, used by §4's table and §5's lab alike.
SOFTMAX_WORK = "softmax 工作量"
SOFTMAX_WORK_FORMULA = "3·h·n²"  # h·n² scalings by 1/√d_k + h·n² exps + h·n² divisions


@dataclass(frozen=True)
class LayerCount:  # multiplies (and softmax exps/divisions) of one self-attention layer
    n: int
    d_model: int
    h: int
    qkv_projections: int  # 3·n·d²    X W^Q, X W^K, X W^V
    scores: int  # n²·d      Q Kᵀ, summed over the h heads
    scaling: int  # h·n²      divide every score by √d_k
    softmax_exp: int  # h·n²      one exp per score
    softmax_div: int  # h·n²      normalise every weight
    weights_v: int  # n²·d      weights × V
    output_projection: int  # n·d²  Concat(head_i) W^O

    @property
    def d_k(self) -> int:
        return self.d_model // self.h

    @property
    def matmul_total(self) -> int:  # 4·n·d² + 2·n²·d, the same for every h
        return self.qkv_projections + self.scores + self.weights_v + self.output_projection

    # SOFTMAX_WORK: scaling, exps and divisions, 3·h·n², growing with h
    @property
    def softmax_total(self) -> int:
        return self.scaling + self.softmax_exp + self.softmax_div

    @property
    def projections_share(self) -> float:  # of the matmul multiplies, the four projections'
        return (self.qkv_projections + self.output_projection) / self.matmul_total


def count(n: int, d_model: int, h: int) -> LayerCount:
    n = check_int(n, "n", minimum=1)
    h = check_heads(d_model, h)  # d_model a positive int, h one of its divisors
    d = int(d_model)
    return LayerCount(n, d, h, qkv_projections=3 * n * d * d, scores=n * n * d, scaling=h * n * n,
                      softmax_exp=h * n * n, softmax_div=h * n * n, weights_v=n * n * d,
                      output_projection=n * d * d)


def parameters(d_model: int, h: int) -> int:
    """Learnable weights of the layer: W^Q, W^K, W^V (h blocks of d_model × d_k each) and W^O."""
    d_k = head_width(d_model, h)  # checks h: it must divide d_model
    # h·(W_i^Q, W_i^K, W_i^V) + W^O: 4·d_model² for any h
    return h * 3 * d_model * d_k + (h * d_k) * d_model


@dataclass(frozen=True)
class KVSharing:  # one way of sharing keys and values, for one layer
    name: str  # what the learner reads: 多头（MHA）…
    kv_heads: int  # g: how many different key/value heads
    d_k: int  # width of every query, key and value head
    projection_params: int  # weights of W^Q, W^K, W^V and W^O
    cache_per_token: int  # numbers kept per token: g keys + g values of width d_k


def kv_sharing(d_model: int, h: int, groups: int) -> KVSharing:
    """Parameters and cache per token when h query heads share ``groups`` key/value heads (the
    name §8's cell passes to ``kv_sharing_text``, so an error names what the learner typed)."""
    h = check_heads(d_model, h)  # one door for both, with the divisors to choose from
    d_model = int(d_model)
    d_k = d_model // h
    divisors = [g for g in range(1, h + 1) if h % g == 0]
    why = f"（写整数；键/值头的组数要整除 h = {h}：每组的查询头一样多）"
    g = check_choice(groups, "groups", divisors, why)
    names = {1: "多查询（MQA）", h: "多头（MHA）"}  # h = 1: every query head has its own K/V
    name = names.get(g, f"分组查询（GQA，{g} 组）")
    return KVSharing(name, g, d_k, projection_params=2 * d_model * d_model + 2 * d_model * g * d_k,
                     cache_per_token=2 * g * d_k)


def variants(d_model: int, h: int, groups: int) -> list[KVSharing]:  # MHA, GQA, MQA
    return [kv_sharing(d_model, h, g) for g in (h, groups, 1)]
