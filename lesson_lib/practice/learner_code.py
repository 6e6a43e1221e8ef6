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
import operator
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
    tampered: tuple[str, ...] = ()  # names it replaced (numpy.allclose), already put back

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


def _learner_frame(frame) -> tuple[str, int]:
    """(line text, line number) of the innermost frame outside numpy / lesson_lib / the stdlib."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_LIBRARY_DIRS):
            return linecache.getline(filename, frame.f_lineno).strip()[:80], frame.f_lineno
        frame = frame.f_back
    return "", 0


def _position(ident: int):
    frame = sys._current_frames().get(ident)
    return (id(frame.f_code), frame.f_lasti) if frame is not None else None


class _Job:
    """One call in the worker thread; the worker fills ``outcome``.

    The worker runs under ``sys.settrace`` with a global trace that only looks at calls (a forbidden lesson
    function is noted by its code object). Once the watchdog says stop, every line the learner's code runs
    re-arms the stop, so a loop whose ``except:`` swallows one stop meets the next on its way round. Back in
    this module's code the stop is disarmed (a flag) and one stop still on its way is let land in ``_flush``.
    (A pending stop is never cancelled: ``PyThreadState_SetAsyncExc(id, NULL)`` leaves the interpreter's
    eval breaker set, and the next worker then never finishes.)"""

    def __init__(self, thunk, digest, forbidden):
        self.thunk, self.digest, self.forbidden = thunk, digest, forbidden
        self.outcome: Outcome | None = None
        self.borrowed = ""
        self.stopping: type[BaseException] | None = None
        self.finished = False
        self.c_ident = None

    def trace(self, frame, event, _arg):
        if event == "call":
            code = frame.f_code
            if not self.borrowed and (code in self.forbidden or code.co_filename in self.forbidden) \
                    and code.co_name != "<module>":  # importing a module is not calling its functions
                self.borrowed = self.forbidden.get(code) or code.co_name
            if self.stopping is not None and frame.f_code.co_filename != __file__:
                return self.rearm
        return None

    def rearm(self, _frame, event, _arg):
        """Local trace after the stop: raise the stop again (asynchronously: Python switches off a trace function
        that raises)."""
        if self.stopping is not None and event == "line":
            _SET_ASYNC_EXC(self.c_ident, _PY_OBJECT(self.stopping))
        return self.rearm

    def stop(self, ident: int, exc_type) -> None:
        """From the watchdog: raise ``exc_type`` in the worker now and on every line it runs from here on."""
        if self.finished:
            return
        self.stopping = exc_type
        frame = sys._current_frames().get(ident)
        while frame is not None:
            if frame.f_code.co_filename not in (__file__, threading.__file__):
                frame.f_trace, frame.f_trace_lines = self.rearm, True
            frame = frame.f_back
        _SET_ASYNC_EXC(ctypes.c_ulong(ident), _PY_OBJECT(exc_type))

    def work(self) -> None:
        self.c_ident = ctypes.c_ulong(threading.get_ident())
        outcome = None
        try:
            outcome = self._attempt()
        except BaseException:  # a stop landing in our own lines, or a describe that was stopped
            self.stopping = None
            self._disarm()
        self.outcome = outcome or Outcome(kind="raised", error="（说明文字无法显示）")

    def main(self) -> None:
        """The thread's target: a stop the watchdog sent just as the call ended lands in ``_flush``, not in
        threading's code (where it would print a traceback)."""
        try:
            self.work()
            self.finished = True  # the watchdog sends no stop from here on
            _flush()
        except BaseException:
            self.finished = True

    def _disarm(self) -> None:
        """No more stops; the one possibly on its way lands in ``_flush`` (at its first bytecode) and is dropped."""
        self.stopping = None
        sys.settrace(None)
        try:
            _flush()
        except BaseException:
            pass

    def _attempt(self) -> Outcome:
        with np.errstate(all="ignore"):  # numpy's error state is per thread: set it here, where the code runs
            try:
                sys.settrace(self.trace)
                value = self.thunk()
                value = self.digest(value) if self.digest is not None else value
            except BaseException as exc:  # a learner's function may raise anything, GeneratorExit and SystemExit too
                self.stopping = None
                self._disarm()
                return self._failed(exc)
            self.stopping = None
            self._disarm()
            return Outcome(value, borrowed=self.borrowed)

    def _failed(self, exc: BaseException) -> Outcome:
        kinds = ((_OutOfTime, "timeout"), (KeyboardInterrupt, "interrupted"), (NestedCheck, "nested"),
                 (NotImplementedError, "todo"))  # fmt: skip
        for exc_type, kind in kinds:
            if isinstance(exc, exc_type):
                return Outcome(kind=kind)
        name = type.__dict__["__name__"].__get__(type(exc))
        try:
            text = describe(exc)  # runs the learner's __str__: still inside the budget
        except BaseException:  # stopped by the watchdog: the text never came
            self._disarm()
            text = f"{name}（这个异常的说明文字 __str__ 运行了太久，检查器没有等它）"
        try:
            del exc  # its __del__, if any, runs here, inside the budget
        except BaseException:
            self._disarm()
        return Outcome(kind="raised", error=text, borrowed=self.borrowed)


def _flush() -> None:
    """A Python call: its first instruction checks for a pending asynchronous exception."""


_SET_ASYNC_EXC = ctypes.pythonapi.PyThreadState_SetAsyncExc
_PY_OBJECT = ctypes.py_object


def run(thunk: Callable[[], object], budget: float | None = None, digest: Callable | None = None,
        forbidden: dict | None = None, tamper: Tamper | None = None) -> Outcome:  # fmt: skip
    """Run ``thunk()`` (and ``digest`` of its value) in a worker within ``budget`` seconds. Never raises, never
    waits longer than budget + GRACE_S. ``forbidden`` maps code objects to names, and file names to anything:
    calling one of those functions, or any function of those files, is reported in ``Outcome.borrowed``.
    ``tamper`` is restored the moment the wait ends, before any other code here runs (a patched builtin such
    as ``isinstance`` would break it); what it put back is in ``Outcome.tampered``."""
    out = _run(thunk, budget, digest, forbidden)
    changed = tamper.restore() if tamper is not None else []
    return replace(out, tampered=tuple(changed)) if changed else out


def _run(thunk, budget, digest, forbidden) -> Outcome:
    budget = min(TIME_BUDGET_S if budget is None else budget, 10.0)  # a budget set to hours still ends
    job = _Job(thunk, digest, forbidden or {})
    worker = threading.Thread(target=job.main, name="lesson-learner-code", daemon=True)
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
    """Stop the worker (see ``_Job.stop``) and wait out the grace; say what it was doing.

    A stop that lands ends a loop. One that does not land is a single long call into C (``np.ones(10**9)``,
    ``time.sleep``): the thread cannot be interrupted there, so it is left to finish in the background (the
    stop lands when the call returns) and the call is reported as slow, not as a loop."""
    frame = sys._current_frames().get(worker.ident)
    line, lineno = _learner_frame(frame)
    where = f"第 {lineno} 行「{line}」" if line else ""
    before = _position(worker.ident)
    job.stop(worker.ident, exc_type)
    worker.join(GRACE_S)
    seconds = time.perf_counter() - start
    if not worker.is_alive():
        return replace(job.outcome or Outcome(kind="timeout"), seconds=seconds, where=where)
    now = _position(worker.ident)
    _take_back(worker.ident)
    return Outcome(kind="stubborn" if now is not None and now != before else "slow", seconds=seconds, where=where)


class _Flushed(BaseException):
    """Delivered to the waiting thread only to clear the interpreter's pending-exception flag."""


def _take_back(ident: int) -> None:
    """Withdraw a stop that has not landed (the worker sits in one C call), and clear the flag it left.

    CPython 3.11 keeps one interpreter-wide "asynchronous exception pending" flag; while it is set and the
    exception waits on a thread blocked in C, every traced thread (the next check's worker) spins without
    progress. Withdrawing leaves the flag set too, so one exception is delivered here, at once, which
    clears it. The worker's per-line re-arm (``_Job.rearm``) still stops it when the C call returns."""
    _SET_ASYNC_EXC(ctypes.c_ulong(ident), None)
    try:
        _SET_ASYNC_EXC(ctypes.c_ulong(threading.get_ident()), _PY_OBJECT(_Flushed))
        _flush()
    except _Flushed:
        pass


def call(fn, *args, budget: float | None = None, digest: Callable | None = None,
         forbidden: dict | None = None, tamper: Tamper | None = None) -> Outcome:  # fmt: skip
    """Call ``fn`` on copies of ``args`` within the time budget (see ``run``); report arguments it changed."""
    given = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    out = run(lambda: fn(*given), budget, digest, forbidden, tamper)
    if out.kind != "ok":
        return out
    changed = tuple(i for i, (a, g) in enumerate(zip(args, given)) if isinstance(a, np.ndarray)
                    and (g.shape != a.shape or not _ARRAY_EQUAL(g, a, equal_nan=True)))  # fmt: skip
    return replace(out, changed_args=changed)


_ARRAY_EQUAL = np.array_equal  # captured before any learner code runs


# ------------------------------------------------------------------------------------------ patches
class Tamper:
    """A snapshot of modules' namespaces (and their classes'); ``restore()`` undoes and names any change.

    The check that nothing changed runs at C speed (``map(operator.is_, …)``, identity only: a learner's object
    with a lying ``__eq__`` cannot pass for the original); only when something changed is it found and put back."""

    def __init__(self, modules: Iterable[ModuleType]):
        self.saved: list[tuple[object, str, dict, tuple, tuple]] = []
        for module in modules:
            label = "numpy" if module.__name__.startswith("numpy") else module.__name__.rsplit(".", 1)[-1]
            self._keep(module, label)
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__module__ == module.__name__ and module is not builtins:
                    self._keep(value, f"{label}.{value.__name__}")

    def _keep(self, owner, label: str) -> None:
        names = _behaviour(vars(owner))
        if owner is builtins:  # Jupyter's kernel binds builtins.input anew for every cell it runs: not a patch
            names.pop("input", None)
        self.saved.append((owner, label, vars(owner), tuple(names), tuple(names.values())))

    def restore(self, _vars=vars, _setattr=setattr, _all=all, _map=map, _is=operator.is_) -> list[str]:
        """Put every replaced or deleted name back; the names (``numpy.allclose``) of what was changed.
        (The builtins it needs are bound at definition: a patched ``builtins.vars`` cannot stop the repair.)"""
        changed = []
        for owner, label, namespace, keys, values in self.saved:
            if _all(_map(_is, _map(namespace.get, keys), values)):
                continue
            for name, value in zip(keys, values):
                if namespace.get(name, _MISSING) is not value:
                    changed.append(f"{label}.{name}")
                    try:
                        _setattr(owner, name, value)
                    except (AttributeError, TypeError):
                        pass
        return changed


_MISSING = object()


def _behaviour(namespace) -> dict:
    """The names that decide what code does (functions, classes, modules, descriptors); data such as
    IPython's ``builtins._`` or a module's settings change legitimately and are left out."""
    return {k: v for k, v in namespace.items()
            if callable(v)
            or isinstance(v, (ModuleType, property, staticmethod, classmethod, MappingProxyType))}  # fmt: skip
