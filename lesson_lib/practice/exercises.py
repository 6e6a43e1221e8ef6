"""The code exercises' engine: a section's exercise is checked in the ``worker`` process against the
learner's function; the verdict, a Chinese message that names the mistake, goes to progress."""

import contextlib
import errno
import inspect
import re
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
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
    verdict: Callable  # (case, value, *arguments): returns if right, else raises Stop
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
    "no_return": "没有返回结果",
    "modifies_input": "改动了输入数组",  # no longer named; older progress files still hold it
    "float32": "很接近，像 float32 的舍入误差",
}


class CheckedInside(RuntimeError):
    """exercises.check called from inside the learner's own function: its message says it all."""


# --- in the worker: calling the learner's function, and reading what it returned
# what an exception usually means in these exercises (else the exercise's hint)
_EXTRA_HINT = {
    CheckedInside: "",
    RecursionError: "递归太深：这几个练习都不需要递归，用 for 循环写。",
    MemoryError: "是不是把数组的大小写成了很大的数（例如 n ** d_model）？这里的例子都很小。",
    SystemExit: "函数里调用了 exit() / sys.exit()：函数只需要计算并 return 结果。",
}
# the usual slips' English in Chinese, with the sizes and names it gives (worded otherwise, by a
# newer numpy, it is shown as it is); a shape past numpy's limits (2**63, 65 axes) is a huge array
_SAID = [
    (ValueError, "Maximum allowed|maximum supported|array is too big",
     "numpy 建不了这种形状的数组（元素或轴太多）。" + _EXTRA_HINT[MemoryError]),
    (ValueError, r"matmul: .*\(size (?P<r>\d+) is different from (?P<l>\d+)\)",
     "矩阵乘法两边对不上：左边最后一维 {l}，右边对应那一维 {r}；是不是忘了转置或切错了轴"),
    (AttributeError, r"'(?P<owner>[\w.]+)'(?: object)? has no attribute '(?P<name>\w+)'",
     "{owner} 没有「{name}」这个属性或方法：检查拼写，以及它是不是你以为的那种对象"),
    (IndexError, r"index (?P<i>-?\d+) is out of bounds for axis (?P<a>\d+) with size (?P<n>\d+)",
     "下标 {i} 超出了范围：axis {a} 只有 {n} 个位置（下标从 0 数起）；检查循环的范围"),
    (NameError, r"name '(?P<x>\w+)' is not defined", "「{x}」还没有定义：检查拼写，或先给它赋值"),
]


def _call(ex, case, fn, args, source) -> object:
    """``fn(*args)`` on copies of the arrays: its value, or Stop with a message that teaches."""
    try:
        with np.errstate(all="ignore"):
            value = fn(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))
    except NotImplementedError:
        raise Stop("todo", f"还没实现：把 {ex.learner_name} 里的 raise NotImplementedError "
                   f"换成你的代码。想看要求：exercises.spec(\"{ex.name}\")；实在卡住了："
                   f"exercises.show_solution(\"{ex.name}\")。改好后再运行这个单元格。") from None
    # the learner's function may raise anything, SystemExit and KeyboardInterrupt too
    except BaseException as exc:
        said = _describe(exc).rstrip("。")  # the sentence ends once, below
        hint = next((text for kind, text in _EXTRA_HINT.items() if isinstance(exc, kind)), ex.hint)
        if getattr(exc, "errno", None) == errno.EFBIG:  # past the worker's FILE_BYTES: no OS text
            said = "输出超过了 1 MB"
            hint = "请删掉或减少 print（特别是循环里的）。"
        line, text = _learner_line(reversed(traceback.extract_tb(exc.__traceback__)), fn, source)
        where = f"，在你的函数第 {line} 行「{text}」" if text else ""
        raise Stop("error", f"运行出错（{case} 这个例子）{where}：{said}。{hint}") from None
    if value is None:
        raise Stop("wrong", f"{ex.learner_name} 返回了 None：是不是忘了写 return？", ("no_return",))
    return value


_NOT_NUMBERS = {  # an array's dtype kind -> what it usually means
    "c": "返回的数组是复数（dtype={kind}）：注意力的输出应当是实数，"
         "检查是不是用了会产生复数的运算。",
    "O": "返回的数组里装的是 Python 对象（dtype=object），不是数字：是不是返回了长短不一的列表，"
         "或者把几个数组放进了一个列表？请用 np.stack / np.concatenate 拼成一个数组。",
    "b": "返回的是 True/False 组成的布尔数组，不是数值：请返回计算出来的数组。",
    **dict.fromkeys("USV", "返回的是文字（dtype={kind}），不是数字数组："
                           "请返回计算出来的 numpy 数组。"),
}


def as_array(case, result) -> np.ndarray:
    """A float64 copy of ``result``, or Stop saying why it is not an array of numbers."""
    if callable(result):  # return np.reshape: the function, not its result
        name = getattr(result, "__name__", type(result).__name__)
        raise Stop("wrong", f"{case}：你返回的是一个函数（{name}），不是计算结果："
                   f"是不是写成了 return {name}，忘了加括号调用它？")
    kind = np.dtype(object)
    with contextlib.suppress(Exception):  # an object numpy cannot read is no array of numbers
        kind = np.asarray(result).dtype
    if kind.kind not in "iuf":
        # a dict, a set or another object is not several arrays in a list: the plain advice
        several = isinstance(result, (list, tuple, np.ndarray)) or kind.kind != "O"
        why = _NOT_NUMBERS.get(kind.kind if several else "", "返回值不是数字数组（是 {type}，"
                               "dtype={kind}）：请返回一个 numpy 数组。")
        raise Stop("wrong", f"{case}：" + why.format(kind=kind, type=type(result).__name__))
    return np.array(result, dtype=np.float64)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, CheckedInside):  # the engine's own, already in Chinese: no class path
        return str(exc)
    if isinstance(exc, MemoryError) and hasattr(exc, "shape"):  # numpy's (Unable to allocate …)
        return f"内存不够，建不了形状为 {exc.shape} 的数组"  # in Chinese; another one is named
    said = traceback.format_exception_only(type(exc), exc)[-1].strip()  # safe if str() raises
    for kind, english, chinese in _SAID:
        if isinstance(exc, kind) and (m := re.search(english, said)):
            return chinese.format(**m.groupdict())
    return said[:200]


def _learner_line(frames, fn, source: str) -> tuple[int, str]:
    """(line number in ``source``, its text) of the innermost of ``frames`` ((file, line, function),
    innermost first) in ``fn``'s file or function (cloudpickle may rename the file); (0, '')."""
    code = getattr(fn, "__code__", None)
    lines = source.splitlines()
    for path, lineno, function, *_ in frames:  # a traceback's FrameSummary has its line too
        if code is None or (code.co_filename != path and code.co_name != function):
            continue
        index = lineno - code.co_firstlineno
        if 0 <= index < len(lines) and lines[index].strip():
            return index + 1, lines[index].strip()[:80]
    return 0, ""


def values(case, got, want, nonfinite, variants, advice) -> None:
    """Stop naming the mistake unless ``got`` is ``want`` (the same shape): NaN or inf, float32's
    round-off, one of ``variants`` ((mistake, its output, advice), lazily), else where it is off."""
    if not np.isfinite(got).all():
        raise Stop("wrong", f"{case}：结果里有 NaN 或 inf{nonfinite}")
    if np.allclose(got, want, rtol=1e-6, atol=1e-8):
        return
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(got - want)), got.shape))
    where = f"例如位置 {idx}：应为 {want[idx]:.8g}，你的是 {got[idx]:.8g}"
    if np.allclose(got, want, rtol=1e-4, atol=1e-5):  # float32 keeps ~7 digits; sums lose some
        off = np.max(np.abs(got - want)) / np.max(np.abs(want))  # against the largest value
        raise Stop("wrong", f"{case}：结果很接近（最大相对误差约 {off:.0e}），这个量级常见于 "
                   f"float32 的舍入：请全程用 float64，检查是否转成了 float32。{where}。",
                   ("float32",))
    for mistake, variant, text in variants:
        if np.allclose(got, variant, rtol=1e-6, atol=1e-8):
            raise Stop("wrong", f"{case}：{text}", (mistake,))
    raise Stop("wrong", f"{case}：形状对了，但数值不对，{where}。{advice}", ("values",))


def _cannot_travel(exc: BaseException) -> str:
    """A function that cannot reach the worker: it uses an object from outside (pickle's English
    dropped, the object's type kept)."""
    kind = "".join(f"（类型 {named}）" for named in re.findall(r"'([\w.]+)'", str(exc))[:1])
    return (f"检查器没能拿到你的函数：它用到了函数外面的一个对象{kind}，例如线程锁、生成器、"
            "打开的文件；检查器在另一个进程里运行函数，拿不过去。函数里只用参数和 numpy。")


_in_worker = False  # True in the checker's process


def _check_here(payload: bytes) -> tuple[str, str, tuple[str, ...]]:
    """In the worker: rebuild the learner's function and run every case of the exercise."""
    global _in_worker
    import cloudpickle

    _in_worker = True
    rng = np.random.default_rng(0)
    try:
        ex, fn, source = cloudpickle.loads(payload)
    except BaseException as exc:  # a function that cannot be rebuilt here
        return "error", _cannot_travel(exc), ()
    try:
        for n, d, h in ex.cases:
            case = f"n={n}, d_model={d}, h={h}"
            args = ex.inputs(rng, n, d, h)
            ex.verdict(case, _call(ex, case, fn, args, source), *args)
    except Stop as stop:
        return stop.args[0], stop.args[1], tuple(stop.args[2]) if len(stop.args) > 2 else ()
    except BaseException as exc:  # what the learner returned defeated the checker's reading of it
        return "error", (f"检查你的返回值时出了意外（{_describe(exc)}）：请检查返回值的类型和形状，"
                         "应当返回一个普通的 numpy 数组（或整数）。"), ()
    return "passed", ex.passed, ()


# --- in the notebook
def check(ex: Exercise, fn, *, budget: float | None = None) -> ExerciseResult:
    """Check the learner's function in the worker and record the result; never raises for it."""
    if _in_worker:  # called from inside the learner's function
        raise CheckedInside("你的函数里又调用了 exercises.check：请把这一行移到函数定义的下面。")
    if callable(fn):
        result = _run(ex, fn, BUDGET_S if budget is None else budget)
    else:
        result = ExerciseResult(ex.name, "error", f"收到的是 {type(fn).__name__}，不是函数："
                                f"请写 check(\"{ex.name}\", {ex.learner_name})，函数名后不加括号。")
    # a failed save shows in the summary; the result matters more
    with contextlib.suppress(Exception):
        mine = progress.default_progress()
        mine.record_exercise(result)
        if result.status == "todo" and mine.entry(ex.name).get("passed"):  # the stub put back
            result = replace(result, message=result.message + "你之前已经通过，进度里仍记为通过。")
    return result


_AFTER = "你的笔记本没有受影响，改好后再运行这个单元格就行。"


def _unfilled(source: str) -> list[str]:
    """The lines still holding a scaffold's ``...`` (never numpy's: x[..., 0], x[:, ...])."""
    lines = enumerate(source.splitlines(), 1)
    return [str(i) for i, line in lines if re.search(r"(?:^|[=(@])\s*\.\.\.", line.split("#")[0])]


def _run(ex: Exercise, fn, budget: float) -> ExerciseResult:
    """Run the checker in the worker; a Chinese message for how it ended."""
    import cloudpickle  # a function from __main__ travels by value, one from a module by reference

    source = ""
    with contextlib.suppress(OSError, TypeError):  # IPython keeps each cell's text for getsource
        source = textwrap.dedent(inspect.getsource(fn))[:20_000]
    result = partial(ExerciseResult, ex.name, source=source or None)
    if lines := _unfilled(source):
        return result("todo", f"还没补全：你的函数第 {'、'.join(lines)} 行还有脚手架的 ...，"
                      f"把它换成你的代码（看那一行的注释）。改好后再运行这个单元格。")
    try:
        payload = cloudpickle.dumps((ex, fn, source))
    except Exception as exc:
        return result("error", _cannot_travel(exc))
    home = ex.solution.__module__  # what the exercise's functions need (they travel by reference)
    reply = worker.run(f"{__name__}:_check_here", payload, budget, preload=(home, "cloudpickle"))
    named = getattr(fn, "__name__", "")  # the learner's own name for the function, else the stub's
    learner = named if named.isidentifier() else ex.learner_name
    if reply.kind == "ok":
        print(reply.text, end="")  # the learner's own print()s, above the verdict
        status, message, mistakes = reply.value  # JSON: the tuple of mistakes comes back as a list
        return result(status, message, tuple(mistakes))
    if reply.kind == "timeout":  # faulthandler's dump: the most recent call first
        found = re.findall(r'File "(.*)", line (\d+) in (\S+)', reply.text)
        text = _learner_line([(path, int(n), f) for path, n, f in found], fn, source)[1]
        where = f"（停在这一行：「{text}」）" if text else ""
        return result("timeout", f"{learner} 运行了 {budget:g} 秒还没结束{where}：是不是写了死"
                      "循环？检查 while 循环的退出条件和 for 循环的范围。也可能是一次极大的"
                      f"计算，例如{ex.huge}。{_AFTER}")
    if reply.kind == "interrupted":
        return result("interrupted", f"检查被中断了（{learner} 还没算完）。{_AFTER}")
    if reply.kind == "nostart":  # a preload that fails to import, or a start that never ends
        why = "".join(f"；{line}" for line in reply.text.strip().splitlines()[-1:])
        return result("error", f"检查器的后台进程没能启动（退出码 {reply.value}{why}），你的函数"
                      "还没有被检查。请重启内核（Kernel → Restart，中文界面是「内核 → 重启内核」）"
                      "再运行；如果还是这样，把这条信息告诉老师。")
    return result("error", f"运行 {learner} 的进程意外结束了（退出码 {reply.value}）：是不是"
                  f"调用了 os._exit(…)、递归太深，或者内存用得太多？{_AFTER}")
