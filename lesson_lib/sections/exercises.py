"""The lesson's code exercises by name, as the notebooks call them: §3's and §4's, checked by the
engine in ``practice.exercises``."""

import difflib
import inspect

from lesson_lib.attention import softmax
from lesson_lib.practice import exercises as engine
from lesson_lib.practice import worker
from lesson_lib.practice.exercises import BUDGET_S, ExerciseResult, _call
from lesson_lib.sections.s03_heads import exercises as s03
from lesson_lib.sections.s04_costs import exercises as s04

EXERCISES = {**s03.EXERCISES, **s04.EXERCISES}
MISTAKES = {**engine.MISTAKES, **s03.MISTAKES, **s04.MISTAKES}
__all__ = ["BUDGET_S", "EXERCISES", "MISTAKES", "ExerciseResult", "_call", "softmax", "worker"]


def _unknown(name) -> ExerciseResult | None:
    """A typo in the name: the checker's box says so, with the closest name (never a traceback)."""
    if isinstance(name, str) and name in EXERCISES:
        return None
    near = difflib.get_close_matches(str(name), EXERCISES, n=1)
    guess = "".join(f"是不是想写 {m!r}？" for m in near)
    return ExerciseResult(str(name), "error", f"没有名为 {name!r} 的练习。{guess}"
                          f"可用的有：{'、'.join(map(repr, EXERCISES))}。")


def check(name: str, fn, *, budget: float | None = None) -> ExerciseResult:
    return _unknown(name) or engine.check(EXERCISES[name], fn, budget=budget)


class _Text(str):
    """Text a notebook cell shows as itself (the spec); ``_Code`` as a Python block (a solution)."""

    __repr__ = str.__str__


class _Code(_Text):
    def _repr_markdown_(self) -> str:
        return f"```python\n{self}\n```"


def spec(name: str) -> _Text | ExerciseResult:
    return _unknown(name) or _Text(EXERCISES[name].spec)


def show_solution(name: str) -> _Code:
    """The reference solution's source (read by reflection, never a pasted copy)."""
    return _unknown(name) or _Code(inspect.getsource(EXERCISES[name].solution).rstrip())
