"""The code exercises' engine: an exercise (a section's spec, solution, cases and verdict) is
checked in the ``worker`` process against the learner's function; the verdict, a Chinese message
that names the mistake, is recorded in the progress file."""

from __future__ import annotations

import ast
import contextlib
import errno
import inspect
import re
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from lesson_lib.practice import progress, worker
from lesson_lib.practice.feedback import box_html

BUDGET_S = 5.0  # one whole check (every case); a right answer takes milliseconds


@dataclass(frozen=True)
class ExerciseResult:
    """A checker's verdict; its repr is the Chinese message, so a notebook cell shows just that."""

    name: str
    status: str  # passed, todo (stub), error (raised or crashed), wrong, timeout, interrupted
    message: str
    mistakes: tuple[str, ...] = ()  # named mistakes (class report)
    source: str | None = None  # the learner's code, when known

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __repr__(self) -> str:
        return self.message

    def _repr_html_(self) -> str:
        tone = {"passed": "right", "todo": "neutral"}.get(self.status, "wrong")
        return box_html(self.message, tone, f"lesson-exercise lesson-exercise-{self.status}")


class Stop(Exception):
    """Ends a check early: (status, message[, mistakes])."""


@dataclass(frozen=True)
class Exercise:
    name: str
    spec: str
    solution: Callable
    cases: tuple[tuple[int, int, int], ...]  # (n, d_model, h)
    inputs: Callable  # (rng, n, d_model, h) -> the arguments of one call
    # (case, value, *arguments) -> whether a right value was float32, or Stop
    verdict: Callable[..., bool]
    hint: str  # after an exception
    passed: str
    # what a check that never ends most likely built
    huge: str = "创建了一个巨大的数组（形状里写成了 n ** d_model 之类的数）"

    @property
    def learner_name(self) -> str:  # the stub's name in the notebook
        return f"my_{self.name}"


# The mistakes the engine names (each exercise adds its own; the class report lists them)
MISTAKES = {
    "shape": "形状不对",
    "values": "形状对了，数值不对",
    "modifies_input": "改动了输入数组",
    "no_return": "没有返回结果",
    "float32": "公式对，中间用了 float32",
}


# --- in the worker: calling the learner's function, and reading what it returned
_EXTRA_HINT = {  # what an exception usually means in these exercises
    RecursionError: "递归太深：这几个练习都不需要递归，用 for 循环写。",
    MemoryError: "内存不够：是不是把数组的大小写成了很大的数（例如 n ** d_model）？"
                 "这里的例子都很小。",
    SystemExit: "函数里调用了 exit() / sys.exit()：函数只需要计算并 return 结果。",
}


def _call(ex, case, fn, args, source) -> object:
    """``fn(*args)`` on copies of the arrays: its value, or Stop with a message that teaches."""
    given = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            value = fn(*given)
    except NotImplementedError:
        raise Stop("todo", _todo(ex)) from None
    # the learner's function may raise anything, SystemExit and KeyboardInterrupt too
    except BaseException as exc:
        extra = next((text for kind, text in _EXTRA_HINT.items() if isinstance(exc, kind)), ex.hint)
        if getattr(exc, "errno", None) == errno.EFBIG:  # past the worker's FILE_BYTES
            extra = "输出太多了：函数打印或写入的内容超过了 1 MB。请删掉循环里的 print。"
        frames = [(f.filename, f.lineno, f.name)
                  for f in reversed(traceback.extract_tb(exc.__traceback__))]
        line, text = _learner_line(frames, fn, source)
        where = f"，在你的函数第 {line} 行「{text}」" if text else ""
        raise Stop("error",
                   f"运行出错（{case} 这个例子）{where}：{_describe(exc)}。{extra}") from None
    changed = [name for name, a, g in zip(inspect.signature(ex.solution).parameters, args, given)
               if isinstance(a, np.ndarray) and not np.array_equal(g, a, equal_nan=True)]
    if changed:
        raise Stop("wrong",
                   f"{case}：你的函数改动了传进来的 {'、'.join(changed)}（原地修改了输入）。"
                   "调用者的数据不该被改掉：请不要写 x[...] = …、x *= … 这类语句，"
                   "需要时先 x = x.copy()。", ("modifies_input",))
    if value is None:
        raise Stop("wrong",
                   f"{ex.learner_name} 没有返回任何东西（返回了 None）：是不是忘了写 return？",
                   ("no_return",))
    return value


_NOT_NUMBERS = {  # an array's dtype kind -> what it usually means
    "c": "返回的数组是复数（dtype={kind}）：注意力的输出应当是实数。"
         "检查是不是用了会产生复数的运算。",
    "O": "返回的数组里装的是 Python 对象（dtype=object），不是数字：是不是返回了长短不一的列表，"
         "或者把几个数组放进了一个列表？请用 np.stack / np.concatenate 拼成一个数组。",
    "b": "返回的是 True/False 组成的布尔数组，不是数值：请返回计算出来的数组。",
    **dict.fromkeys("USV", "返回的是文字（dtype={kind}），不是数字数组："
                           "请返回计算出来的 numpy 数组。"),
}


def as_array(case, result) -> tuple[np.ndarray, bool]:
    """(a float64 copy, whether it was float32/float16), or Stop saying why it is not numbers."""
    if callable(result):
        name = getattr(result, "__name__", type(result).__name__)
        raise Stop("wrong", f"{case}：你返回的是一个函数（{name}），不是计算结果："
                   f"是不是写成了 return {name}，忘了加括号调用它？")
    try:
        kind = np.asarray(result).dtype
    except Exception:
        kind = np.dtype(object)
    if kind.kind not in "iuf":
        why = _NOT_NUMBERS.get(kind.kind, "返回值不是数字数组（是 {type}，dtype={kind}）："
                                          "请返回一个 numpy 数组。")
        raise Stop("wrong", f"{case}：" + why.format(kind=kind, type=type(result).__name__))
    low = isinstance(result, np.ndarray) and result.dtype in (np.float32, np.float16)
    return np.array(result, dtype=np.float64), low


def _describe(exc: BaseException) -> str:
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()  # safe if str() of it raises
    return text if len(text) <= 200 else text[:200] + "…"


def _learner_line(frames, fn, source: str) -> tuple[int, str]:
    """(line number in ``source``, its text) of the innermost of ``frames`` ((file, line, function),
    innermost first) in ``fn``'s file or function (cloudpickle may rename the file); (0, '')."""
    code = getattr(fn, "__code__", None)
    lines = source.splitlines()
    for path, lineno, function in frames:
        if code is None or (code.co_filename != path and code.co_name != function):
            continue
        index = lineno - code.co_firstlineno
        if 0 <= index < len(lines) and lines[index].strip():
            return index + 1, lines[index].strip()[:80]
    return 0, ""


def _same(a, b, low: bool = False) -> bool:
    if low:  # float32 keeps ~7 significant digits; sums lose some
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-8))


def _where_differs(got, want) -> str:
    diff = np.abs(got - want)
    diff[~np.isfinite(diff)] = np.inf
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
    # round-off: four decimals would print the same number twice
    if f"{want[idx]:.4f}" == f"{got[idx]:.4f}":
        return (f"例如位置 {idx}：应为 {want[idx]:.10g}，你的是 {got[idx]:.10g}，"
                f"只差 {diff[idx]:.1e}。这是舍入误差的量级")
    return f"例如位置 {idx}：应为 {want[idx]:.4f}，你的是 {got[idx]:.4f}"


def values(case, got, want, low, nonfinite, variants, advice) -> None:
    """Stop naming the mistake unless ``got`` is ``want``: NaN or inf, float32 inside float64, one
    of ``variants`` ((mistake, the output it gives, advice), made lazily), else where it differs."""
    if not np.isfinite(got).all():
        raise Stop("wrong", f"{case}：结果里有 NaN 或 inf{nonfinite}")
    if _same(got, want, low):
        return
    if not low and _same(got, want, low=True):
        raise Stop("wrong", f"{case}：精度不够，请用 float64：{_where_differs(got, want)}。"
                   "公式本身是对的，差别来自中间用了 float32。", ("float32",))
    for mistake, variant, text in variants:
        if _same(got, variant, low):
            raise Stop("wrong", f"{case}：{text}", (mistake,))
    raise Stop("wrong", f"{case}：形状对了，但数值不对，{_where_differs(got, want)}。{advice}",
               ("values",))


def _cannot_travel(exc: BaseException) -> str:
    return (f"检查器没能拿到你的函数（{_describe(exc)}）：检查器在另一个进程里运行它，"
            "函数只应使用参数、numpy 和普通的数字与数组。"
            "先单独运行定义函数的单元格，确认它不报错，再运行检查。")


def _todo(ex) -> str:
    return (f"还没实现：{ex.learner_name} 里还是 raise NotImplementedError。"
            "把它换成你的代码，再运行这个单元格。"
            f"想看要求：exercises.spec(\"{ex.name}\")；"
            f"实在卡住了：exercises.show_solution(\"{ex.name}\")。")


_in_worker = False  # True in the checker's process


def _check_here(payload: bytes) -> tuple[str, str, tuple[str, ...]]:
    """In the worker: rebuild the learner's function and run every case of the exercise."""
    global _in_worker
    import cloudpickle

    _in_worker = True
    try:
        (ex, fn, source) = cloudpickle.loads(payload)
    except BaseException as exc:  # a function that cannot be rebuilt here
        return "error", _cannot_travel(exc), ()
    try:
        rng = np.random.default_rng(0)
        low = False
        for n, d, h in ex.cases:
            case = f"n={n}, d_model={d}, h={h}"
            args = ex.inputs(rng, n, d, h)
            low = ex.verdict(case, _call(ex, case, fn, args, source), *args) or low
    except Stop as stop:
        return stop.args[0], stop.args[1], tuple(stop.args[2]) if len(stop.args) > 2 else ()
    except BaseException as exc:  # what the learner returned defeated the checker's reading of it
        return "error", (f"检查你的返回值时出了意外（{_describe(exc)}）：请检查返回值的类型和形状，"
                         "应当返回一个普通的 numpy 数组（或整数）。"), ()
    if low:
        return "passed", ex.passed + ("（你的结果是 float32，按 float32 的精度比对；lesson_lib 用 "
                                      "float64，想和它逐位一致请用 float64。）"), ()
    return "passed", ex.passed, ()


# --- in the notebook
def check(ex: Exercise, fn, *, budget: float | None = None) -> ExerciseResult:
    """Check the learner's function in the worker and record the result; never raises for it."""
    if _in_worker:  # called from inside the learner's function
        raise RuntimeError("你的函数里又调用了 exercises.check：检查器会调用你的函数，"
                           "你的函数里不要再调用检查器。"
                           "把 exercises.check(...) 那一行移到函数外面（函数定义的下面）。")
    if callable(fn):
        result = _run(ex, fn, BUDGET_S if budget is None else budget)
    else:
        result = ExerciseResult(ex.name, "error",
                                f"收到的不是函数，而是 {type(fn).__name__}：请把函数本身传进来，"
                                f"例如 check(\"{ex.name}\", {ex.learner_name})，"
                                "函数名后面不要加括号。")
    # a failed save shows in the summary; the result matters more
    with contextlib.suppress(Exception):
        progress.default_progress().record_exercise(result)
    return result


def _is_stub(source: str) -> bool:
    """The notebook's stub, untouched: only (a docstring and) raise NotImplementedError."""
    with contextlib.suppress(SyntaxError, ValueError, IndexError, AttributeError):
        body = ast.parse(source).body[0].body
        body = [s for s in body if not isinstance(getattr(s, "value", None), ast.Constant)]
        return len(body) == 1 and bool(re.fullmatch(r"raise NotImplementedError(\(.*\))?",
                                                    ast.unparse(body[0]), re.S))
    return False


_AFTER = "你的笔记本没有受影响，改好后再运行这个单元格就行。"


def _run(ex: Exercise, fn, budget: float) -> ExerciseResult:
    """Run the checker in the worker (a stub needs none); a Chinese message for how it ended."""
    source = ""
    with contextlib.suppress(OSError, TypeError):  # IPython keeps each cell's text for getsource
        source = textwrap.dedent(inspect.getsource(fn))[:20_000]
    learner = ex.learner_name
    result = partial(ExerciseResult, ex.name, source=source or None)
    if _is_stub(source):
        return result("todo", _todo(ex))
    import cloudpickle  # a function from __main__ travels by value, one from a module by reference

    home = ex.solution.__module__  # what the exercise's functions need (they travel by reference)
    try:
        payload = cloudpickle.dumps((ex, fn, source))
    except Exception as exc:
        return result("error", _cannot_travel(exc))
    reply = worker.run(f"{__name__}:_check_here", payload, budget, preload=(home, "cloudpickle"))
    if reply.kind == "ok":
        if reply.text:  # the learner's own print()s
            print(reply.text, end="" if reply.text.endswith("\n") else "\n")
        status, message, mistakes = reply.value  # JSON: the tuple of mistakes comes back as a list
        return result(status, message, tuple(mistakes))
    if reply.kind == "timeout":  # faulthandler's dump: the most recent call first
        found = re.findall(r'File "(.*)", line (\d+) in (\S+)', reply.text)
        frames = [(path, int(line), function) for path, line, function in found]
        text = _learner_line(frames, fn, source)[1]
        where = f"（停在这一行：「{text}」）" if text else ""
        return result("timeout", f"{learner} 运行了 {budget:g} 秒还没有结束{where}"
                      "，检查器把它停下了：是不是写了死循环？检查 while 循环的退出条件和 for "
                      f"循环的范围。也可能是一次极大的计算：例如{ex.huge}。这里的例子都很小，"
                      f"正确的写法一眨眼就算完。{_AFTER}")
    if reply.kind == "interrupted":
        return result("interrupted", f"检查被中断了（{learner} 还没算完）。"
                      f"如果是因为等得太久：是不是写了死循环？{_AFTER}")
    if reply.kind == "nostart":
        why = (reply.text.strip().splitlines() or [""])[-1]
        return result("error", f"检查器的后台进程没能启动（退出码 {reply.exitcode}；{why}），"
                      "你的函数还没有被检查。请重启内核（Kernel → Restart）再运行；"
                      "如果还是这样，把这条信息告诉老师。")
    return result("error", f"运行 {learner} 的进程意外结束了（退出码 {reply.exitcode}）：是不是调用"
                  "了 os._exit(…)？或者调高了 sys.setrecursionlimit 之后递归太深、用 ctypes 读写了"
                  "不该碰的内存、内存用得太多？这几个练习只需要用 for 循环和 numpy 计算，再 return "
                  f"结果。{_AFTER}")
