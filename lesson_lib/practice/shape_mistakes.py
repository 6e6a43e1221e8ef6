"""The usual mistakes when splitting (n, d_model) into heads, named from the shape they produce.

One diagnosis, shared by the §3 shape question (``quiz``) and the split_heads code exercise
(``exercises``): the learner's shape in, one Chinese sentence out.
"""

from __future__ import annotations

__all__ = ["split_heads_shape_mistake"]


def split_heads_shape_mistake(got: tuple[int, ...], n: int, h: int, d_k: int) -> str:
    """What a wrong split_heads shape ``got`` most likely means, for X of shape (n, h·d_k) split into h heads."""
    got, d_model = tuple(got), h * d_k
    if got == (n, h, d_k):
        return "是不是忘了 transpose？reshape 成 (n, h, d_k) 之后，还要把头的轴换到最前面。"
    if got == (h, d_k, n):
        return "后两个轴反了（那是 Kᵀ 的形状）：每个头应当是 (n, d_k)，一行一个词。"
    if got == (n, d_model):
        return f"这还是拆分之前 X 的形状：需要把最后一维切成 {h} 份，多出一个「头」的维度。"
    if got in ((h, n, d_model), (n, h, d_model)):
        return f"每个头只有 d_k = d_model / h = {d_k} 维，不是 {d_model} 维。"
    if len(got) != 3:
        return "结果应当有 3 个轴：(头数 h, 词数 n, 每个头的宽度 d_k)。"
    return f"三个轴依次是头数 h、词数 n、每个头的宽度 d_k = d_model / h = {d_k}。"
