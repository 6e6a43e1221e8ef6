"""Self-explanation: the rubric a learner compares their own answer with, and the one reader of prose it keeps:
``noticed``, the cue words literally in the answer, shown as a hint that names words, never a point or a verdict."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

MAX_CUES_SHOWN = 6  # a hint lists at most this many words


@dataclass(frozen=True)
class RubricPoint:
    """One point of a good answer: a short ``name`` (the checkbox), what it says in full, and cue words."""

    name: str
    text: str
    cues: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rubric:
    points: tuple[RubricPoint, ...]
    misconceptions: tuple[tuple[str, str], ...]  # (the wrong claim, why it is wrong)
    model_answer: str

    def text(self) -> str:
        """The rubric as the learner reads it after writing: points, then misconceptions, then the model answer."""
        lines = ["好的回答会说到这几点："]
        numbered = all(p.name[:1] in "①②③④⑤⑥⑦⑧⑨" for p in self.points)  # the interview's ①②③ are their own numbers
        lines += [f"{'' if numbered else f'{i}. '}{p.name}：{p.text}" for i, p in enumerate(self.points, start=1)]
        if self.misconceptions:
            lines.append("常见的误解（你的回答里有没有类似的说法？）：")
            lines += [f"✗ 「{claim}」——{why}" for claim, why in self.misconceptions]
        return "\n".join(lines)

    @property
    def cues(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for p in self.points for c in p.cues))


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def noticed(text: str, cues: tuple[str, ...]) -> tuple[str, ...]:
    """The cue words that occur literally in ``text`` (full-width and case folded), in the order of ``cues``."""
    folded = _fold(text)
    return tuple(c for c in cues if _fold(c) in folded)


def hint_text(text: str, rubric: Rubric) -> str:
    """A hint naming only words literally in the answer; '' when none occurs."""
    words = noticed(text, rubric.cues)[:MAX_CUES_SHOWN]
    if not words:
        return ""
    quoted = "".join(f"「{w}」" for w in words)
    return f"你的回答里出现了：{quoted}。用了这些词不等于说到了要点，请对照下面的要点自己判断。"
