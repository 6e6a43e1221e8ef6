"""§6's return to §2's sentence: which real heads send 她 to 小红, and do they follow the pronoun?

Pure functions over ``model.attend(text) -> (tokens, attentions (L, H, T, T))``. A name is usually two tokens
(▁小 + 红): its weight is summed. Layers and heads shown to learners count from 1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lesson_lib.models.pretrained.head_finder import check_top
from lesson_lib.models.pretrained.unigram import WORD_START

LESSON_SENTENCE = "小明把苹果递给了小红，因为她帮过他。"
NAMES = {"她": "小红", "他": "小明"}  # which name each pronoun agrees with in gender
PRONOUN_HEAD = (8, 1)  # 1-based (layer, head): the head that follows the pronoun
DECOYS = ((12, 5), (12, 3))  # the next best heads on the lesson sentence, which do not
HEADS = (PRONOUN_HEAD, *DECOYS)


class MergedTokenError(ValueError):
    """The word is inside a bigger token (e.g. 他 in 「因为他」): no head attends from it alone."""


def clean(token):
    """A token as a learner reads it: without the word-start mark "▁" (``<s>`` / ``</s>`` stay)."""
    return token.replace(WORD_START, "")


def word_span(tokens, word):
    """(start, stop) of the first tokens that spell ``word`` exactly (小红 -> ▁小 + 红); a Chinese ValueError when it
    is absent, ``MergedTokenError`` when it only occurs inside a token that also holds its neighbours."""
    if not isinstance(word, str) or not word:
        raise ValueError(f"要找的词应是非空字符串，收到的是 {word!r}。")
    texts = [clean(t) for t in tokens]
    for start in range(len(texts)):
        for stop in range(start + 1, len(texts) + 1):
            if "".join(texts[start:stop]) == word:
                return start, stop
    inside = [t for t in texts if word in t and t != word]
    shown = " | ".join(texts)
    if inside:
        raise MergedTokenError(
            f"「{word}」没有单独成为一个词元：分词器把它和旁边的字合成了「{inside[0]}」。"
            f"注意力是按词元算的，所以没法单独看「{word}」这一行。换个说法试试（比如在它前面加个逗号）。"
            f"这句话的词元是：{shown}"
        )
    raise ValueError(f"这句话里找不到「{word}」。这句话的词元是：{shown}")


def name_weights(attentions, tokens, pronoun, names):
    """{name: (L, H)}: the weight the pronoun's token sends to each name's tokens (summed)."""
    att = np.asarray(attentions)  # (L, H, T, T)
    p0, p1 = word_span(tokens, pronoun)
    out = {}
    for name in names:
        n0, n1 = word_span(tokens, name)
        out[name] = att[:, :, p0:p1, n0:n1].sum(axis=-1).mean(axis=-1)  # (L, H) pronoun rows averaged
    return out


def rank_by_preference(attentions, tokens, pronoun="她", target="小红", other="小明", top=5):
    """[(layer, head, to target, to other)] for the ``top`` heads by target − other, 1-based, best first."""
    w = name_weights(attentions, tokens, pronoun, (target, other))
    diff = w[target] - w[other]  # (L, H)
    top = check_top(top, diff.size)
    order = np.argsort(-diff, axis=None, kind="stable")[:top]
    n_heads = diff.shape[1]
    return [(int(i // n_heads) + 1, int(i % n_heads) + 1, float(w[target].flat[i]), float(w[other].flat[i]))
            for i in order]  # fmt: skip


class Condition(NamedTuple):
    """One minimal-pair condition: a sentence and the pronoun asked about."""

    label: str  # shown to learners
    sentence: str
    pronoun: str

    @property
    def expected(self):
        return NAMES[self.pronoun]

    @property
    def other(self):
        return NAMES["他" if self.pronoun == "她" else "她"]


MINIMAL_PAIRS = (
    Condition("原句，问「她」", LESSON_SENTENCE, "她"),
    Condition("原句，问「他」", LESSON_SENTENCE, "他"),
    Condition("名字对调，问「她」", "小红把苹果递给了小明，因为他帮过她。", "她"),
    Condition("「她饿了」", "小明把苹果递给了小红，她饿了。", "她"),
    Condition("「他饿了」", "小明把苹果递给了小红，他饿了。", "他"),
    Condition("名字对调，「她饿了」", "小红把苹果递给了小明，她饿了。", "她"),
    Condition("名字对调，「他饿了」", "小红把苹果递给了小明，他饿了。", "他"),
    Condition("「因为她饿了」", "小明把苹果递给了小红，因为她饿了。", "她"),
    Condition("名字对调，「因为她饿了」", "小红把苹果递给了小明，因为她饿了。", "她"),
)  # every condition where the pronoun is its own token (「因为他」 merges, so those are left out)


def nearest_name(condition):
    """The name closest before the pronoun: what a head that just looks back to the last name would pick."""
    before = condition.sentence[: condition.sentence.index(condition.pronoun)]
    return max(NAMES.values(), key=before.rfind)


def follow(model):
    """One model run per minimal pair: ([(condition, {(layer, head): (to the agreeing name, to the other)})] for
    ``HEADS``, and (L, H) counts of the conditions in which each head sends the pronoun more to the agreeing name)."""
    table, counts = [], 0
    for c in MINIMAL_PAIRS:
        tokens, att = model.attend(c.sentence)
        w = name_weights(att, tokens, c.pronoun, (c.expected, c.other))
        counts = counts + (w[c.expected] > w[c.other])  # (L, H) ints
        table.append((c, {(layer, head): (float(w[c.expected][layer - 1, head - 1]),
                                          float(w[c.other][layer - 1, head - 1])) for layer, head in HEADS}))
    return table, counts
