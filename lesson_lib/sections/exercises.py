"""The lesson's code exercises by name, as the notebooks call them: §3's and §4's, checked by the
engine in ``practice.exercises``."""

from __future__ import annotations

import inspect

from lesson_lib.attention import softmax
from lesson_lib.practice import exercises as engine
from lesson_lib.practice import worker
from lesson_lib.practice.exercises import BUDGET_S, Exercise, ExerciseResult, _call
from lesson_lib.sections.s03_heads import exercises as s03
from lesson_lib.sections.s04_costs import exercises as s04

EXERCISES = {**s03.EXERCISES, **s04.EXERCISES}
MISTAKES = {**engine.MISTAKES, **s03.MISTAKES, **s04.MISTAKES}
__all__ = ["BUDGET_S", "EXERCISES", "MISTAKES", "ExerciseResult", "_call", "softmax", "worker"]


def exercise(name: str) -> Exercise:
    if name not in EXERCISES:
        raise KeyError(f"没有名为 {name!r} 的练习；可用的有 {', '.join(EXERCISES)}。")
    return EXERCISES[name]


def check(name: str, fn, *, budget: float | None = None) -> ExerciseResult:
    return engine.check(exercise(name), fn, budget=budget)


class _Text(str):
    """Text a notebook cell shows as itself (the spec); ``_Code`` as a Python block (a solution)."""

    __repr__ = str.__str__


class _Code(_Text):
    def _repr_markdown_(self) -> str:
        return f"```python\n{self}\n```"


def spec(name: str) -> _Text:
    return _Text(exercise(name).spec)


def show_solution(name: str) -> _Code:
    """The reference solution's source (read by reflection, never a pasted copy)."""
    return _Code(inspect.getsource(exercise(name).solution).rstrip())
