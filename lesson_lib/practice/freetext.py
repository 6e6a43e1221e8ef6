"""Self-explanation: the rubric a learner compares their own answer with. Nothing reads the answer's
prose."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RubricPoint:
    """One point of a good answer: a short ``name`` (the checkbox) and what it says in full."""

    name: str
    text: str


@dataclass(frozen=True)
class Rubric:
    points: tuple[RubricPoint, ...]
    misconceptions: tuple[tuple[str, str], ...]  # (the wrong claim, why it is wrong)
    model_answer: str

    def text(self) -> str:
        """What the learner reads after writing: the points, then the misconceptions."""
        # the interview's ①②③ are their own numbers
        numbered = all(p.name[:1] in "①②③④⑤⑥⑦⑧⑨" for p in self.points)
        lines = ["好的回答会说到这几点："]
        lines += [f"{'' if numbered else f'{i}. '}{p.name}：{p.text}"
                  for i, p in enumerate(self.points, start=1)]
        if self.misconceptions:
            lines.append("常见的误解（你的回答里有没有类似的说法？）：")
            lines += [f"✗ 「{claim}」——{why}" for claim, why in self.misconceptions]
        return "\n".join(lines)
