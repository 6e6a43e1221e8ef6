"""Running a learner's function safely: a time budget, no tracebacks, no recursion into the checker.

``call(fn, *args)`` returns an ``Outcome``: the value, or what went wrong in words a learner reads —
a stub (NotImplementedError), an exception of any kind (also GeneratorExit and other BaseException
subclasses), a loop that ran past the time budget (「是不是写了死循环？」), a Ctrl-C / 中断 while it ran,
or a call back into ``exercises.check``. Arguments are passed as copies and compared afterwards, so a
function that changes its input is told so.

The budget is enforced with SIGALRM in the main thread (where notebook cells run), else by raising
an exception in the running thread; both stop pure-Python loops. A single long NumPy call finishes
before the stop arrives.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = ["TIME_BUDGET_S", "Outcome", "call", "guard", "NestedCheck"]

TIME_BUDGET_S = 3.0  # per call of the learner's function


class _OutOfTime(BaseException):
    """Raised inside the learner's function when its time is up (a BaseException: ``except Exception`` in the
    learner's code does not swallow it)."""


class NestedCheck(BaseException):
    """Raised when the learner's function calls the checker that is checking it."""


@dataclass(frozen=True)
class Outcome:
    value: object = None
    kind: str = "ok"  # ok, todo, raised, timeout, interrupted, nested
    error: BaseException | None = None
    changed_args: tuple[int, ...] = ()  # positions of array arguments the function modified

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


_active = threading.local()


@contextlib.contextmanager
def guard():
    """Mark a check as running; a check started inside it (from the learner's function) raises NestedCheck."""
    if getattr(_active, "depth", 0):
        raise NestedCheck()
    _active.depth = 1
    try:
        yield
    finally:
        _active.depth = 0


@contextlib.contextmanager
def _time_budget(seconds: float):
    main = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if main:
        def on_alarm(_signum, _frame):
            raise _OutOfTime()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return
    target = threading.get_ident()
    done = threading.Event()

    def watchdog():
        if not done.wait(seconds):
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(_OutOfTime))

    timer = threading.Thread(target=watchdog, daemon=True)
    timer.start()
    try:
        yield
    finally:
        done.set()
        timer.join()


def _copy(arg):
    return arg.copy() if isinstance(arg, np.ndarray) else arg


def call(fn, *args, budget: float | None = None) -> Outcome:
    """Call ``fn`` on copies of ``args`` within the time budget. Never raises."""
    budget = TIME_BUDGET_S if budget is None else budget
    given = [_copy(a) for a in args]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            with _time_budget(budget):
                value = fn(*given)
    except NotImplementedError:
        return Outcome(kind="todo")
    except _OutOfTime:
        return Outcome(kind="timeout")
    except KeyboardInterrupt:
        return Outcome(kind="interrupted")
    except NestedCheck:
        return Outcome(kind="nested")
    except BaseException as exc:  # a learner's function may raise anything, GeneratorExit and SystemExit too
        return Outcome(kind="raised", error=exc)
    changed = tuple(i for i, (a, g) in enumerate(zip(args, given))
                    if isinstance(a, np.ndarray) and (g.shape != a.shape or not np.array_equal(g, a, equal_nan=True)))
    return Outcome(value, changed_args=changed)  # fmt: skip
