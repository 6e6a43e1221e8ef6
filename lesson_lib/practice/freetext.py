"""Self-explanation: the rubric a learner compares their own answer with, and the one reader of prose kept: the
rubric's cue words literally in the answer, named as a hint, never a point or a verdict."""

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
        """What the learner reads after writing: the points, then the misconceptions."""
        numbered = all(p.name[:1] in "①②③④⑤⑥⑦⑧⑨" for p in self.points)  # the interview's ①②③ are their own numbers
        lines = ["好的回答会说到这几点："]
        lines += [f"{'' if numbered else f'{i}. '}{p.name}：{p.text}" for i, p in enumerate(self.points, start=1)]
        if self.misconceptions:
            lines.append("常见的误解（你的回答里有没有类似的说法？）：")
            lines += [f"✗ 「{claim}」——{why}" for claim, why in self.misconceptions]
        return "\n".join(lines)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def noticed(text: str, rubric: Rubric) -> tuple[str, ...]:
    """The rubric's cue words literally in ``text`` (full-width and case folded), each once, in rubric order."""
    return tuple(c for c in dict.fromkeys(c for p in rubric.points for c in p.cues) if _fold(c) in _fold(text))
