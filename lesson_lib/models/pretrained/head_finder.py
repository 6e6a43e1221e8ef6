"""Score every head of a model for a few recognisable behaviours, and rank them (layers and heads
1-based)."""

import numpy as np

from lesson_lib.checks import LessonInputError, check_int

SCORE_NAMES = {"coref": "its → law（代词指回先行词）", "prev": "看前一个词元",
               "next": "看后一个词元", "cls": "汇到 [CLS]（「注意力汇」）"}


def find_token(tokens, word):
    """Index of the first ``word`` in ``tokens``; a Chinese error lists the tokens if absent."""
    if word not in tokens:
        raise LessonInputError(f"词元 {word!r} 在这句话里出现 0 次。这句话的词元是："
                               f"{' '.join(tokens)}")
    return list(tokens).index(word)


def head_scores(attentions, tokens):
    """{score name: (L, H)}: coref, the weight from its to law (0 when either is missing); prev /
    next / cls, the mean weight on the left / right neighbour / [CLS] at position 0."""
    att = np.asarray(attentions)  # (L, H, T, T)
    # t ≥ 3: an encoding has its start and end tokens around at least one word
    L, H, _, t = att.shape
    idx = np.arange(t - 1)
    found = "its" in tokens and "law" in tokens
    return {  # in SCORE_NAMES' order
        "coref": att[..., find_token(tokens, "its"), find_token(tokens, "law")]
        if found else np.zeros((L, H)),
        "prev": att[..., idx + 1, idx].mean(axis=-1),  # (L, H)  A[i, i-1] averaged over i = 1..T-1
        "next": att[..., idx, idx + 1].mean(axis=-1),  # (L, H)  A[i, i+1] averaged over i = 0..T-2
        "cls": att[..., :, 0].mean(axis=-1),  # (L, H)  A[i, 0] averaged over all i
    }

def rank_heads(scores, top=3):
    """{score name: [(layer, head, score), ...]} best first, layer and head 1-based."""
    ranking = {}
    for name, table in scores.items():
        top = check_int(top, "参数 top（列出前几个头）", minimum=1, maximum=table.size)
        order = np.argsort(-table, axis=None, kind="stable")[:top]  # flat indices into (L, H)
        heads = np.unravel_index(order, table.shape)
        ranking[name] = [(int(i) + 1, int(j) + 1, float(table[i, j])) for i, j in zip(*heads)]
    return ranking
