"""Reading a free-text answer for key points, clause by clause, without rewarding wrong answers.

A key point counts only when it is *stated*: each of its synonym groups has an occurrence that is not
negated in its clause (不 / 不会 / 没有 / 并非 / 不是 / 无法 / not …, within a few characters before it).
Known wrong claims (``Misconception``: 「越多越好」, 「算力翻 8 倍」, 「不守恒」 …) are found the same way,
named back to the learner with a correction, and cancel the point they contradict. A string of keywords
without a sentence around them (「混 维度 512 32」) is recognised as such and credits nothing.

Synonyms are plain text: Chinese is matched anywhere (spaces between characters allowed); English
is matched as whole words (``sum`` never matches inside ``consumes``), and a trailing ``*`` allows an
ending (``averag*``). A synonym starting with ``re:`` is a regular expression.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import cache

__all__ = ["Point", "Misconception", "Reading", "read_points", "review_message"]

NEGATION_WINDOW = 8  # characters before a keyword in which a negation cue negates it
_CLAUSE_END = re.compile(r"[，,。；;！!？?\n:：]|但是|但|然而|可是|不过|\bbut\b|\bhowever\b|\bwhereas\b|\balthough\b")
_CUE = re.compile(
    r"[不没无非未别勿]|是否|\bnot\b|\bno\b|\bnever\b|\bcannot\b|n't\b|\bwithout\b|\bneither\b|\bnor\b|\bfails? to\b"
)
# Words that contain a cue character but deny nothing.
_NOT_A_CUE = re.compile(r"不同|不断|不仅|不少|不止|不管|不论|不但|不一样|不得不|无论|非常|无数|毫无疑问|并非只")
_LATIN_WORD = re.compile(r"[a-z]+")
_SENTENCE_MIN_FILLER = 6  # letters outside keywords that make a sentence (「混 维度 512 32」 has none)


@dataclass(frozen=True)
class Point:
    """A key point: ``name`` (shown), ``hint`` (what to add), ``groups``: each group needs one stated synonym."""

    name: str
    hint: str
    groups: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Misconception:
    """A known wrong claim: ``name`` (named back), ``synonyms`` that express it, the ``correction``, the point
    it ``contradicts`` (which then does not count), and ``unless``: a clause matching this is not the claim
    (「多头能同时关注多个重点」 is right where 「单头能…」 is wrong)."""

    name: str
    synonyms: tuple[str, ...]
    correction: str
    contradicts: str = ""
    unless: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reading:
    covered: tuple[str, ...]  # points stated
    negated: tuple[str, ...]  # points whose words appear, but only negated or contradicted
    missing: tuple[str, ...]  # the other points
    misconceptions: tuple[Misconception, ...]
    salad: bool  # keywords without a sentence
    keywords: tuple[str, ...]  # the words found, as written (for the salad message)


@cache
def _pattern(synonym: str) -> re.Pattern:
    if synonym.startswith("re:"):
        return re.compile(synonym[3:])
    word = synonym.lower()
    if word.isascii():
        stem = word.rstrip("*")
        ending = r"[a-z]*" if word.endswith("*") else ""
        body = r"\s*".join(re.escape(part) for part in stem.split())
        return re.compile(rf"(?<![a-z]){body}{ending}(?![a-z])")
    return re.compile(r"\s*".join(re.escape(ch) for ch in word.replace(" ", "")))


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    return text.replace("是不是", "是否").replace("是否是", "是否")  # a question asked back denies nothing


class _Clauses:
    """The folded answer and where each clause starts, so that a keyword's clause is found by bisection."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in _CLAUSE_END.finditer(text)]
        self.ends = [m.start() for m in _CLAUSE_END.finditer(text)] + [len(text)]

    def of(self, pos: int) -> tuple[int, str, int]:
        """(clause index, clause text, position inside it) of text position ``pos``."""
        i = bisect.bisect_right(self.starts, pos) - 1
        return i, self.text[self.starts[i] : self.ends[i]], pos - self.starts[i]


def _negated(clause: str, start: int) -> bool:
    width = 28 if clause.isascii() else NEGATION_WINDOW  # English words are longer than Chinese ones
    before = _NOT_A_CUE.sub(lambda m: " " * len(m.group()), clause[max(0, start - width - 4) : start])
    return bool(_CUE.search(before[-width:]))


def _occurrences(clauses: _Clauses, synonyms) -> list[tuple[str, str, bool]]:
    """(its clause, matched text, negated?) for every synonym occurrence (one regex pass over the whole answer)."""
    out = []
    for synonym in synonyms:
        for m in _pattern(synonym).finditer(clauses.text):
            _, clause, at = clauses.of(m.start())
            out.append((clause, m.group(), _negated(clause, at)))
    return out


def _letters(text: str) -> int:
    """Size of a text in Chinese characters: a CJK character counts 1, a Latin word 2 (about one Chinese word)."""
    return 2 * len(_LATIN_WORD.findall(text)) + sum(1 for ch in text if ch > "\x7f" and ch.isalpha())


def read_points(text: str, points: tuple[Point, ...], misconceptions: tuple[Misconception, ...] = ()) -> Reading:
    """Which points the answer states, which it negates, which wrong claims it makes, and whether it is a sentence."""
    folded = _fold(text)
    clauses = _Clauses(folded)
    spans: list[str] = []
    found_claims = []
    for claim in misconceptions:
        hits = [(clause, word) for clause, word, neg in _occurrences(clauses, claim.synonyms) if not neg]
        hits = [(c, w) for c, w in hits if not any(_pattern(u).search(c) for u in claim.unless)]
        if hits:
            found_claims.append(claim)
            spans += [w for _, w in hits]
    contradicted = {c.contradicts for c in found_claims}
    covered, negated, missing = [], [], []
    for point in points:
        stated, denied = True, False
        for group in point.groups:
            occ = _occurrences(clauses, group)
            spans += [w for _, w, _ in occ]
            if not any(not neg for _, _, neg in occ):
                stated = False
                denied = denied or bool(occ)
        if stated and point.name not in contradicted:
            covered.append(point.name)
        elif denied or (stated and point.name in contradicted):
            negated.append(point.name)
        else:
            missing.append(point.name)
    keyword_letters = sum(_letters(w) for w in spans)
    filler = max(0, _letters(folded) - keyword_letters)
    salad = bool(spans) and filler < max(_SENTENCE_MIN_FILLER, keyword_letters // 2)
    keywords = tuple(dict.fromkeys(w.strip() for w in spans))
    if salad:
        return Reading((), (), tuple(p.name for p in points), tuple(found_claims), True, keywords)
    return Reading(tuple(covered), tuple(negated), tuple(missing), tuple(found_claims), False, keywords)


def review_message(reading: Reading, points: tuple[Point, ...], head: str, complete: bool) -> str:
    """The learner's feedback: found, negated, wrong claims, missing; then «compare with the reference answer»."""
    hints = {p.name: p.hint for p in points}
    parts = [head]
    if reading.salad:
        shown = "、".join(f"「{w}」" for w in reading.keywords[:6])
        parts.append(f"我只读到一串关键词（{shown}），还不是完整的句子，所以没有算作要点。请用一两句话把道理讲出来。")
    if reading.covered:
        parts.append("说到了：" + "；".join(reading.covered) + "。")
    if reading.negated:
        parts.append("说反了或被否定了：" + "；".join(reading.negated) + "（句子里用了「不 / 没有 / 并非」之类的否定，"
                     "或者说了与它相反的话）。")  # fmt: skip
    for claim in reading.misconceptions:
        parts.append(f"可能的误解「{claim.name}」：{claim.correction}")
    for name in reading.missing:
        parts.append(f"还缺「{name}」：{hints[name]}")
    if complete:
        parts.append(("主要的" if reading.missing else "") + "要点都说到了，也没有发现说反的地方。")
    parts.append("关键词检查只看字面，不能替你判断对错：请对照下面的参考答案，看自己的说法是否到位。")
    return "".join(parts)
