"""Running a learner's function safely: a time budget that always holds, no tracebacks, no lasting patches.

``call(fn, *args, digest=...)`` runs ``fn`` in a worker thread while the caller's thread keeps the
clock (a watchdog). Everything that touches the learner's objects — the call, turning its result into
a plain array (``digest``; an ``__array__`` may loop), describing what it raised (a ``__str__`` may
loop), even dropping the objects (a ``__del__`` may loop) — happens in that thread, inside the budget.
When time is up the watchdog raises ``_OutOfTime`` into the worker (``PyThreadState_SetAsyncExc``): a
pure-Python loop stops at once. A thread cannot be killed inside one long C call (``np.ones(10**9)``),
so after a short grace the watchdog gives up waiting and reports that call as what it is, a long
computation on a named line 「耗时超过 N 秒」, not a loop. Signals play no part: a body that ignores
SIGALRM or clears the interval timer changes nothing.

``Outcome`` holds only what the checker's own code made (the digest's value, the exception's text);
never the learner's objects. ``Tamper`` snapshots modules before learner code runs; ``restore()``
puts back anything the learner replaced (``np.allclose = …``, a checker helper) and names it, so a
patch can neither pass a check nor stay for the session.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import linecache
import os
import sys
import sysconfig
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from types import MappingProxyType, ModuleType

import numpy as np

__all__ = ["TIME_BUDGET_S", "GRACE_S", "Outcome", "call", "run", "guard", "NestedCheck", "Tamper", "describe"]

TIME_BUDGET_S = 3.0  # per call of the learner's function
GRACE_S = 0.4  # after the budget: time for the stop to land before the call is named a long C call
_POLL_S = 0.05  # the watchdog re-raises this often during the grace (a loop may swallow one stop)


class _OutOfTime(BaseException):
    """Raised inside the learner's function when its time is up (a BaseException: ``except Exception`` in the
    learner's code does not swallow it)."""


class NestedCheck(BaseException):
    """Raised when the learner's function calls the checker that is checking it."""


@dataclass(frozen=True)
class Outcome:
    value: object = None  # what ``digest`` made of the result (the checker's own objects)
    kind: str = "ok"  # ok, todo, raised, timeout, slow, stubborn, interrupted, nested
    error: str = ""  # what it raised, described inside the budget
    changed_args: tuple[int, ...] = ()  # positions of array arguments the function modified
    seconds: float = 0.0  # how long the call ran (until the watchdog stopped waiting)
    where: str = ""  # for timeout / slow: 「第 3 行 np.ones(10**9)」, the learner's line it was on
    borrowed: str = ""  # a forbidden lesson function it called (seen while it ran)

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


_checking = threading.Lock()  # held while a check runs: a check from inside the learner's function is nested


@contextlib.contextmanager
def guard():
    """Mark a check as running; a check started while one runs (from the learner's function) raises NestedCheck."""
    if not _checking.acquire(blocking=False):
        raise NestedCheck()
    try:
        yield
    finally:
        _checking.release()


def describe(exc: BaseException) -> str:
    """``Type: message``, at most 200 characters. Call it inside the budget: ``str(exc)`` runs learner code."""
    name = type.__dict__["__name__"].__get__(type(exc))  # no metaclass property can run here
    try:
        text = str(exc)
    except Exception:
        text = ""
    if not isinstance(text, str):
        text = ""
    text = f"{name}: {text}" if text else name
    return text if len(text) <= 200 else text[:200] + "…"


# ------------------------------------------------------------------------------------------ the worker
# Code in these folders is not the learner's: numpy, lesson_lib (wherever this module sits in it), the stdlib.
_LIBRARY_DIRS = tuple(
    os.path.dirname(path) + os.sep
    for path in (np.__file__, sys.modules[__name__.split(".")[0]].__file__, sysconfig.get_paths()["stdlib"] + "/x")
)


def _learner_frame(frame) -> tuple[str, int, bool]:
    """(line text, line number, is_innermost) of the innermost frame outside numpy / lesson_lib / the stdlib."""
    innermost = True
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_LIBRARY_DIRS):
            return linecache.getline(filename, frame.f_lineno).strip()[:80], frame.f_lineno, innermost
        frame, innermost = frame.f_back, False
    return "", 0, False


def _position(ident: int):
    frame = sys._current_frames().get(ident)
    return (id(frame.f_code), frame.f_lasti) if frame is not None else None


class _Job:
    """One call in the worker thread; the worker fills ``outcome``."""

    def __init__(self, thunk, digest, forbidden):
        self.thunk, self.digest, self.forbidden = thunk, digest, forbidden
        self.outcome: Outcome | None = None
        self.borrowed = ""

    def profile(self, frame, event, _arg):
        if event == "call" and frame.f_code in self.forbidden and not self.borrowed:
            self.borrowed = self.forbidden[frame.f_code]

    def work(self) -> None:
        try:
            self.outcome = self._attempt()
        except _OutOfTime:
            self.outcome = Outcome(kind="timeout")
        except BaseException:  # a stop landing in our own handler, or a describe that failed twice
            self.outcome = Outcome(kind="raised", error="（说明文字无法显示）")
        finally:
            sys.setprofile(None)

    def _attempt(self) -> Outcome:
        with np.errstate(all="ignore"):  # numpy's error state is per thread: set it here, where the code runs
            try:
                if self.forbidden:
                    sys.setprofile(self.profile)
                value = self.thunk()
                sys.setprofile(None)
                value = self.digest(value) if self.digest is not None else value
            except _OutOfTime:
                return Outcome(kind="timeout")
            except KeyboardInterrupt:
                return Outcome(kind="interrupted")
            except NestedCheck:
                return Outcome(kind="nested")
            except NotImplementedError:
                return Outcome(kind="todo")
            except BaseException as exc:  # a learner's function may raise anything, GeneratorExit and SystemExit too
                sys.setprofile(None)
                text = describe(exc)
                del exc  # its __del__, if any, runs here, inside the budget
                return Outcome(kind="raised", error=text, borrowed=self.borrowed)
            return Outcome(value, borrowed=self.borrowed)


def _raise_in(ident: int, exc_type) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc_type))


def run(thunk: Callable[[], object], budget: float | None = None, digest: Callable | None = None,
        forbidden: dict | None = None) -> Outcome:  # fmt: skip
    """Run ``thunk()`` (and ``digest`` of its value) in a worker within ``budget`` seconds. Never raises, never
    waits longer than budget + GRACE_S. ``forbidden`` maps code objects to names: calling one is reported."""
    budget = min(TIME_BUDGET_S if budget is None else budget, 10.0)  # a budget set to hours still ends
    job = _Job(thunk, digest, forbidden or {})
    worker = threading.Thread(target=job.work, name="lesson-learner-code", daemon=True)
    start = time.perf_counter()
    with warnings.catch_warnings():  # the filters are process-wide: set and restored here, in the waiting thread
        warnings.simplefilter("ignore")
        worker.start()
        try:
            worker.join(budget)
            if not worker.is_alive():
                return replace(job.outcome or Outcome(kind="raised"), seconds=time.perf_counter() - start)
            return _stop(worker, job, start, _OutOfTime)
        except KeyboardInterrupt:  # Ctrl-C / 中断 while waiting: stop the learner's code too
            _stop(worker, job, start, KeyboardInterrupt)
            return Outcome(kind="interrupted", seconds=time.perf_counter() - start)


def _stop(worker: threading.Thread, job: _Job, start: float, exc_type) -> Outcome:
    """Raise ``exc_type`` into the worker until it ends or the grace runs out; say what it was doing."""
    frame = sys._current_frames().get(worker.ident)
    line, lineno, innermost = _learner_frame(frame)
    where = f"第 {lineno} 行「{line}」" if line else ""
    before = _position(worker.ident)
    moved = False
    deadline = time.perf_counter() + GRACE_S
    while worker.is_alive() and time.perf_counter() < deadline:
        _raise_in(worker.ident, exc_type)
        worker.join(_POLL_S)
        now = _position(worker.ident)
        moved = moved or (now is not None and now != before)
    seconds = time.perf_counter() - start
    if not worker.is_alive():
        kind = job.outcome.kind if job.outcome is not None else "timeout"
        if kind == "timeout" and not innermost:  # it was inside a library's Python code: a long call, not a loop
            kind = "slow"
        return Outcome(kind=kind, seconds=seconds, where=where)
    _raise_in(worker.ident, exc_type)  # lands when the C call returns; the thread then ends on its own
    return Outcome(kind="stubborn" if moved else "slow", seconds=seconds, where=where)


def call(fn, *args, budget: float | None = None, digest: Callable | None = None,
         forbidden: dict | None = None) -> Outcome:  # fmt: skip
    """Call ``fn`` on copies of ``args`` within the time budget (see ``run``); report arguments it changed."""
    given = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out = run(lambda: fn(*given), budget, digest, forbidden)
    if out.kind != "ok":
        return out
    changed = tuple(i for i, (a, g) in enumerate(zip(args, given)) if isinstance(a, np.ndarray)
                    and (g.shape != a.shape or not _ARRAY_EQUAL(g, a, equal_nan=True)))  # fmt: skip
    return replace(out, changed_args=changed)


_ARRAY_EQUAL = np.array_equal  # captured before any learner code runs


# ------------------------------------------------------------------------------------------ patches
class Tamper:
    """A snapshot of modules' namespaces (and their classes'); ``restore()`` undoes and names any change."""

    def __init__(self, modules: Iterable[ModuleType]):
        self.saved: list[tuple[object, str, dict]] = []
        for module in modules:
            label = "numpy" if module.__name__.startswith("numpy") else module.__name__.rsplit(".", 1)[-1]
            self.saved.append((module, label, _behaviour(vars(module))))
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__ == module.__name__ and module is not builtins:
                    self.saved.append((value, f"{label}.{value.__name__}", _behaviour(vars(value))))

    def restore(self) -> list[str]:
        """Put every replaced or deleted name back; the names (``numpy.allclose``) of what was changed."""
        changed = []
        for owner, label, names in self.saved:
            current = vars(owner)
            for name, value in names.items():
                if current.get(name, _MISSING) is not value:
                    changed.append(f"{label}.{name}")
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(owner, name, value)
        return changed


_MISSING = object()


def _behaviour(namespace) -> dict:
    """The names that decide what code does (functions, classes, modules, descriptors); data such as
    IPython's ``builtins._`` or a module's settings change legitimately and are left out."""
    return {k: v for k, v in namespace.items()
            if callable(v)
            or isinstance(v, (ModuleType, property, staticmethod, classmethod, MappingProxyType))}  # fmt: skip
