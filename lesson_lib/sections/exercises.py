"""The lesson's code exercises by name, as the notebooks call them: §3's and §4's, checked by the
engine in ``practice.exercises``."""

from __future__ import annotations

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


def spec(name: str):
    return engine.spec(exercise(name))


def show_solution(name: str):
    return engine.show_solution(exercise(name))
