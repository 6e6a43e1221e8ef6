"""Code exercises of section 10: a spec, a stub in the notebook, a checker that teaches, a solution on request.

Each exercise is checked by running the learner's function on several cases and comparing with the
lesson's kernel or FLOP counter. The learner's code runs through ``learner_code.call``: a worker thread
under a watchdog (a loop is stopped after a few seconds with 「是不是写了死循环？」, one long C call is
reported as 「耗时超过 N 秒」; the result is turned into a plain array and any exception into text inside
the same budget), copies of the inputs (a function that changes its input is told so), and no traceback
for anything it raises. numpy, builtins and the checker's own modules are snapshotted at import and put
back after every call, so a patch (``np.allclose = …``) neither passes a check nor stays. The checker
never raises: a stub gets 「还没实现」, garbage gets a message that says what went wrong and what to try.
Known mistakes (a forgotten transpose, no 1/√d_k, no W^O, softmax on the wrong axis, columns taken with
a stride) are recognised and named.
A float32 result is compared at float32 precision, and said so. A function that is or calls any of
lesson_lib's kernel variants (split/merge_heads, multi_head_attention, _reference, _fast, …), flops'
counters or a reference solution does not pass (read from its code, defaults and closure, and watched
by code object while it runs): the checker would be comparing the answer with itself. Every result is
recorded in the learner's progress file.

The reference solutions below are written out plainly for learners to read; ``show_solution(name)``
displays one by reflection, only when asked.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType, MappingProxyType, ModuleType

import numpy as np

from lesson_lib import attention
from lesson_lib import checks as validation
from lesson_lib import costs as flops
from lesson_lib.attention import merge_heads, multi_head_attention, softmax, split_heads
from lesson_lib.costs import count
from lesson_lib.practice import learner_code, progress, shape_mistakes
from lesson_lib.practice.shape_mistakes import split_heads_shape_mistake

__all__ = [
    "ExerciseResult",
    "EXERCISES",
    "check",
    "check_split_heads",
    "check_multi_head_attention_loop",
    "check_count_multiplies",
    "spec",
    "show_solution",
    "split_heads_solution",
    "multi_head_attention_loop_solution",
    "count_multiplies_solution",
]


# ---------------------------------------------------------------------------------------------
# Reference solutions (shown on request)
# ---------------------------------------------------------------------------------------------


def split_heads_solution(x, h):
    """(n, d_model) -> (h, n, d_k): column block i of the features becomes head i."""
    n, d_model = x.shape
    d_k = d_model // h
    x = x.reshape(n, h, d_k)  # (n, h, d_k)  columns [i·d_k, (i+1)·d_k) -> head i
    return x.transpose(1, 0, 2)  # (h, n, d_k)  heads first: each head is one (n, d_k) matrix


def multi_head_attention_loop_solution(x, w_q, w_k, w_v, w_o, h):
    """The paper's definition, one head at a time: head_i = Attention(X W_i^Q, X W_i^K, X W_i^V)."""
    d_model = x.shape[1]
    d_k = d_model // h
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)  # head i owns column block i of each projection
        q = x @ w_q[:, cols]  # (n, d_k)
        k = x @ w_k[:, cols]  # (n, d_k)
        v = x @ w_v[:, cols]  # (n, d_k)
        scores = q @ k.T / np.sqrt(d_k)  # (n, n)
        weights = softmax(scores, axis=-1)  # (n, n) every row sums to 1
        heads.append(weights @ v)  # (n, d_k)
    concat = np.concatenate(heads, axis=-1)  # (n, h·d_k) = (n, d_model)
    return concat @ w_o  # (n, d_model)


def count_multiplies_solution(n, d_model, h):
    """Multiplies in the matrix products of one self-attention layer (softmax not included)."""
    d_k = d_model // h
    projections = 3 * n * d_model * d_model  # X W^Q, X W^K, X W^V: (n, d) @ (d, d), three times
    scores = h * (n * n * d_k)  # per head Q_i K_iᵀ: (n, d_k) @ (d_k, n)
    weighted = h * (n * n * d_k)  # per head weights_i V_i: (n, n) @ (n, d_k)
    output = n * d_model * d_model  # Concat(head_i) W^O: (n, d) @ (d, d)
    return projections + scores + weighted + output


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExerciseResult:
    """A checker's verdict. Its repr is the Chinese message, so a notebook cell shows just that."""

    name: str
    status: str  # passed, todo (stub), error (it raised), wrong, timeout, interrupted, borrowed (used lesson_lib's)
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __repr__(self) -> str:
        return self.message

    def _repr_html_(self) -> str:
        """Pass/fail colour in the theme's palette (the text is the same message)."""
        from lesson_lib.practice.render import box_html

        tone = {"passed": "right", "todo": "neutral"}.get(self.status, "wrong")
        return box_html(self.message, tone, f"lesson-exercise lesson-exercise-{self.status}")


class _Text:
    """Text shown as itself in a notebook (Markdown code block where Markdown is rendered)."""

    def __init__(self, text: str, language: str = ""):
        self.text, self.language = text, language

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str | None:
        return f"```{self.language}\n{self.text}\n```" if self.language else None  # None: plain text only


@dataclass(frozen=True)
class _Exercise:
    name: str
    learner_name: str  # the stub's name in the notebook
    spec: str
    solution: Callable
    checker: Callable[[Callable], ExerciseResult]


# ---------------------------------------------------------------------------------------------
# Running learner code and reading what it returns
# ---------------------------------------------------------------------------------------------

FLOAT32_RTOL, FLOAT32_ATOL = 1e-4, 1e-5  # float32 keeps about 7 significant digits; sums of products lose some

# numpy's functions as they were before any learner code ran: the comparisons use these, never np.<name>
_allclose, _isfinite, _abs, _argmax, _unravel_index = np.allclose, np.isfinite, np.abs, np.argmax, np.unravel_index
_asarray, _array = np.asarray, np.array


@dataclass(frozen=True)
class _Digest:
    """What the checker made of the learner's return value, inside the time budget: the checker's own objects."""

    problem: str | None = None  # why it is not a usable answer
    array: np.ndarray | None = None  # float64 copy of the result
    low: bool = False  # the result was float32 / float16
    number: float | int | None = None
    none: bool = False  # it returned None


def _array_problem(result) -> str | None:
    """Why ``result`` is not a real-valued array answer, or None when it is one (runs learner code: in budget)."""
    if callable(result):
        name = getattr(result, "__name__", type(result).__name__)
        name = name if isinstance(name, str) else type(result).__name__
        return f"你返回的是一个函数（{name}），不是计算结果：是不是写成了 return {name}，忘了加括号调用它？"
    try:
        arr = _asarray(result)
    except Exception:
        return f"返回值没法变成数组（是 {type(result).__name__}）：请返回一个 numpy 数组。"
    kind = arr.dtype.kind
    if kind == "c":
        return f"返回的数组是复数（dtype={arr.dtype}）：注意力的输出应当是实数。检查是不是用了会产生复数的运算。"
    if kind == "O":
        return ("返回的数组里装的是 Python 对象（dtype=object），不是数字：是不是返回了长短不一的列表，"
                "或者把几个数组放进了一个列表？请用 np.stack / np.concatenate 拼成一个数组。")  # fmt: skip
    if kind in "USV":
        return f"返回的是文字（dtype={arr.dtype}），不是数字数组：请返回计算出来的 numpy 数组。"
    if kind not in "biuf":
        return f"返回值不是数字数组（是 {type(result).__name__}，dtype={arr.dtype}）：请返回一个 numpy 数组。"
    if kind == "b":
        return "返回的是 True/False 组成的布尔数组，不是数值：请返回计算出来的数组。"
    return None


def _digest_array(result, pair_ok: bool = False) -> _Digest:
    """The learner's result as a float64 array (runs in the worker thread, inside the budget)."""
    if result is None:
        return _Digest(none=True)
    if pair_ok and type(result) is tuple and len(result) == 2:
        result = result[0]  # (output, weights), the kernel's convention
    if (why := _array_problem(result)) is not None:
        return _Digest(problem=why)
    low = isinstance(result, np.ndarray) and result.dtype in (np.float32, np.float16)
    return _Digest(array=_array(result, dtype=np.float64), low=low)  # a plain ndarray, never a subclass


def _digest_number(result) -> _Digest:
    if result is None:
        return _Digest(none=True)
    if isinstance(result, bool) or not isinstance(result, (int, float, np.integer, np.floating)):
        return _Digest(problem=f"应当返回一个整数，你返回的是 {_short(result)}")
    if isinstance(result, (int, np.integer)):
        return _Digest(number=int(result))
    value = float(result)
    return _Digest(problem=f"应当返回一个整数，你返回的是 {_short(result)}") if not math.isfinite(value) else \
        _Digest(number=int(value) if value == int(value) else value)  # fmt: skip


def _digest_pair(result) -> _Digest:
    return _digest_array(result, pair_ok=True)


def _same(a, b, low_precision: bool = False) -> bool:
    rtol, atol = (FLOAT32_RTOL, FLOAT32_ATOL) if low_precision else (1e-6, 1e-8)
    return a.shape == b.shape and bool(_allclose(a, b, rtol=rtol, atol=atol))


def _where_differs(got, want) -> str:
    diff = _abs(got - want)
    diff[~_isfinite(diff)] = np.inf
    idx = tuple(int(i) for i in _unravel_index(int(_argmax(diff)), diff.shape))
    shown_want, shown_got = f"{want[idx]:.4f}", f"{got[idx]:.4f}"
    if shown_want == shown_got:  # a round-off difference: four decimals would print the same number twice
        return (f"例如位置 {idx}：应为 {want[idx]:.10g}，你的是 {got[idx]:.10g}，只差 {diff[idx]:.1e}。"
                "这是舍入误差的量级")  # fmt: skip
    return f"例如位置 {idx}：应为 {shown_want}，你的是 {shown_got}"


def _precision_problem(name, case, got, want, low) -> ExerciseResult | None:
    """Right at float32 precision but held in float64: the float32 round-off, not a mistake in the formula."""
    if low or not _same(got, want, low_precision=True):
        return None
    return ExerciseResult(name, "wrong", f"{case}：精度不够，请用 float64：{_where_differs(got, want)}。"
                          "公式本身是对的，差别来自中间用了 float32。")  # fmt: skip


def _precision_note(low_precision: bool) -> str:
    if not low_precision:
        return ""
    return "（你的结果是 float32，按 float32 的精度比对；lesson_lib 用 float64，想和它逐位一致请用 float64。）"


def _todo(name, learner_name) -> ExerciseResult:
    return ExerciseResult(
        name,
        "todo",
        f"还没实现：{learner_name} 里还是 raise NotImplementedError。把它换成你的代码，再运行这个单元格。"
        f"想看要求：exercises.spec(\"{name}\")；实在卡住了：exercises.show_solution(\"{name}\")。",
    )


def _tampered(name, learner, changed: list[str]) -> ExerciseResult:
    shown = "、".join(changed[:3]) + ("等" if len(changed) > 3 else "")
    return ExerciseResult(
        name, "tampered", f"{learner} 运行时改动了 {shown}：检查器已经把它恢复原样，这次不算通过。"
        "检查器用的是运行你的代码之前的 numpy 和自己的函数，改动它们骗不过检查，也不会留在笔记本里。"
        "请只在函数里计算并返回结果。",
    )  # fmt: skip


def _stopped(name, learner, case, out) -> ExerciseResult:
    """A call the watchdog had to stop: a loop, a loop that swallows the stop, or one long library call."""
    where = f"（停在{out.where}）" if out.where else ""
    if out.kind == "slow":
        return ExerciseResult(
            name, "timeout", f"{learner} 在 {case} 这个例子上耗时已超过 {out.seconds:.1f} 秒{where}，检查器不再等它："
            "这是一次很慢的调用（例如创建或运算一个非常大的数组），不是死循环。"
            "这个练习的例子都很小，正确的写法一眨眼就算完：检查数组的大小是不是写成了很大的数。",
        )  # fmt: skip
    if out.kind == "stubborn":
        return ExerciseResult(
            name, "timeout", f"{learner} 在 {case} 这个例子上运行了 {out.seconds:.1f} 秒还没有结束{where}，"
            "而且它拦下了检查器的停止信号（except BaseException 或不带类型的 except:），只能留它在后台空转："
            "是不是写了死循环？检查循环的退出条件；不要用 except: 拦下所有异常。如果笔记本变慢，请重启内核。",
        )  # fmt: skip
    return ExerciseResult(
        name, "timeout",
        f"{learner} 在 {case} 这个例子上运行了 {out.seconds:.1f} 秒还没有结束{where}，检查器把它停下了："
        "是不是写了死循环？检查 while 循环的退出条件和 for 循环的范围。",
    )  # fmt: skip


def _run_case(name, learner, case, hint, fn, *args, digest, forbidden, arg_names=()):
    """Call the learner's function once: (digest, None), or (None, feedback) for anything but a usable value."""
    out = learner_code.call(fn, *args, digest=digest, forbidden=forbidden, tamper=_TAMPER)
    if changed := out.tampered:
        return None, _tampered(name, learner, changed)
    if out.borrowed:
        return None, _borrowed_result(name, out.borrowed, _ALLOWED[name])
    problems = {
        "todo": lambda: _todo(name, learner),
        "raised": lambda: ExerciseResult(name, "error", f"运行出错（{case} 这个例子）：{out.error}。{hint}"),
        "timeout": lambda: _stopped(name, learner, case, out),
        "slow": lambda: _stopped(name, learner, case, out),
        "stubborn": lambda: _stopped(name, learner, case, out),
        "interrupted": lambda: ExerciseResult(
            name, "interrupted", f"检查被中断了（{learner} 在 {case} 这个例子上还没算完）。如果是因为等得太久："
            "是不是写了死循环？"),
        "nested": lambda: ExerciseResult(
            name, "error", f"{learner} 里又调用了 exercises.check：检查器会调用你的函数，你的函数里不要再调用检查器。"
            "把 exercises.check(...) 那一行移到函数外面（函数定义的下面）。"),
    }  # fmt: skip
    if out.kind in problems:
        return None, problems[out.kind]()
    if out.changed_args:
        which = "、".join(arg_names[i] if i < len(arg_names) else f"第 {i + 1} 个参数" for i in out.changed_args)
        return None, ExerciseResult(
            name, "wrong", f"{case}：你的函数改动了传进来的 {which}（原地修改了输入）。调用者的数据不该被改掉："
            "请不要写 x[...] = …、x *= … 这类语句，需要时先 x = x.copy()。")  # fmt: skip
    if out.value.none:
        return None, ExerciseResult(name, "wrong", f"{learner} 没有返回任何东西（返回了 None）：是不是忘了写 return？")
    return out.value, None


# ---------------------------------------------------------------------------------------------
# Borrowing the answer: the lesson's kernel (every variant) or a reference solution
# ---------------------------------------------------------------------------------------------

_ALLOWED = {  # what each exercise's spec lets the learner use, named in the message
    "split_heads": " reshape 和 transpose ",
    "multi_head_attention_loop": "矩阵乘法、切片、np.concatenate 和 softmax ",
    "count_multiplies": "乘法和加法",
}
_KERNEL_ALLOWED = {"split_heads": {"head_width"}, "multi_head_attention_loop": {"softmax", "head_width"},
                   "count_multiplies": set()}  # fmt: skip


def _forbidden(name: str) -> dict:
    """See ``_forbidden_codes``; cached while the set of loaded kernel modules stays the same."""
    return dict(_forbidden_codes(name, any(m.rsplit(".", 1)[-1] == "attention_fast" for m in sys.modules)))


@functools.lru_cache(maxsize=16)
def _forbidden_codes(name: str, _fast_loaded: bool) -> dict:
    """{code object: name} of every function that computes exercise ``name``'s answer: the kernel's (every
    variant), flops' counters and the reference solutions; and {file: True} for the files every function of
    which is an answer (attention_fast, also when the learner's body imports it; flops for the count)."""
    files = {attention.__file__: _KERNEL_ALLOWED[name]}
    for module_name, module in list(sys.modules.items()):  # the fast variant lives in benchmarks/, if loaded
        if module_name.rsplit(".", 1)[-1] == "attention_fast" and getattr(module, "__file__", None):
            files[module.__file__] = set()
    if name == "count_multiplies":
        files[flops.__file__] = set()
    codes = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path not in files:
            continue
        for obj in list(vars(module).values()):
            obj = inspect.unwrap(obj) if inspect.isfunction(obj) else obj  # the kernel's checks wrap it (at_the_door)
            code = getattr(obj, "__code__", None) if inspect.isfunction(obj) else None
            if code is not None and code.co_filename == path and obj.__name__ not in files[path]:
                codes[code] = obj.__name__
    for exercise in EXERCISES.values():
        codes[exercise.solution.__code__] = exercise.solution.__name__
    codes.update({path: True for path, allowed in files.items() if not allowed and path != attention.__file__})
    return codes


def _borrowed(fn, codes: dict, depth: int = 3) -> str | None:
    """The name of a forbidden function ``fn`` is, or names in its body, defaults or closure (read statically;
    the worker also watches every call while it runs). Runs in the worker: it reads the learner's objects."""
    seen: set[int] = set()

    def visit(obj, level) -> str | None:
        if id(obj) in seen or level < 0:
            return None
        seen.add(id(obj))
        obj = getattr(obj, "func", obj)  # functools.partial
        obj = getattr(obj, "__func__", obj)  # bound method
        if inspect.isfunction(obj) and isinstance(vars(obj).get("__wrapped__"), FunctionType):
            obj = vars(obj)["__wrapped__"]  # a checked kernel function: judge the function it wraps
        code = getattr(obj, "__code__", None) if inspect.isfunction(obj) else None
        if code is None:
            return None
        if code in codes or code.co_filename in codes:
            return codes.get(code) or code.co_name
        scope = obj.__globals__
        names, stack = set(), [code]
        while stack:
            c = stack.pop()
            names |= set(c.co_names)
            stack += [k for k in c.co_consts if inspect.iscode(k)]
        refs = [scope.get(n) for n in names] + list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values())
        refs += [cell.cell_contents for cell in (obj.__closure__ or ()) if _has_contents(cell)]
        for ref in refs:
            if isinstance(ref, ModuleType):  # attention.split_heads, lesson_lib.attention.split_heads
                for n in names:
                    inner = vars(ref).get(n)
                    found = visit(inner, level - 1) or (visit_module(inner, names, level - 1)
                                                        if isinstance(inner, ModuleType) else None)  # fmt: skip
                    if found:
                        return found
            elif (found := visit(ref, level - 1)) is not None:
                return found
        return None

    def visit_module(module, names, level):
        for n in names:
            if (found := visit(vars(module).get(n), level)) is not None:
                return found
        return None

    return visit(fn, depth)


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def _refused(name, learner_name, fn, codes: dict) -> ExerciseResult | None:
    """Why ``fn`` cannot be checked at all (not a function, or it uses the answer), or None to go on."""
    if not callable(fn):
        return ExerciseResult(
            name, "error", f"收到的不是函数，而是 {type.__dict__['__name__'].__get__(type(fn))}：请把函数本身传进来，"
            f"例如 check(\"{name}\", {learner_name})，函数名后面不要加括号。",
        )  # fmt: skip
    out = learner_code.run(lambda: _borrowed(fn, codes), budget=1.0, tamper=_TAMPER)
    if out.kind == "ok" and out.value:
        return _borrowed_result(name, out.value, _ALLOWED[name])
    return None


def _borrowed_result(name, used, allowed) -> ExerciseResult:
    return ExerciseResult(
        name, "borrowed", f"你的函数直接用了 lesson_lib 自己的 {used}：检查器等于拿答案和答案比，看不出你自己的写法，"
        f"所以不算通过。请只用{allowed}自己写一遍。",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Exercise 1: split_heads
# ---------------------------------------------------------------------------------------------

_SPLIT_CASES = ((12, 512, 8), (5, 6, 3), (4, 8, 1), (3, 6, 6), (7, 12, 4))  # (n, d_model, h)


def _split_cases():
    from lesson_lib import paper

    first = (12, paper.BASE_D_MODEL, paper.BASE_HEADS)  # the lesson's base model: (12, 512) -> (8, 12, 64)
    return (first, *_SPLIT_CASES[1:])


def check_split_heads(fn) -> ExerciseResult:
    """Run ``fn(x, h)`` on several (n, d_model, h) and compare with the kernel's split_heads."""
    name, learner = "split_heads", "my_split_heads"
    codes = _forbidden(name)
    if refused := _refused(name, learner, fn, codes):
        return refused
    rng = np.random.default_rng(0)
    cases = _split_cases()
    low = False
    for n, d, h in cases:
        case = f"n={n}, d_model={d}, h={h}"
        x = rng.standard_normal((n, d))
        want = split_heads(x, h)
        result, problem = _run_case(name, learner, case, "提示：先 x.reshape(n, h, d_k)，再交换前两个轴。",
                                    fn, x, h, digest=_digest_array, forbidden=codes, arg_names=("x", "h"))
        if problem is not None:
            return problem
        if result.problem is not None:
            return ExerciseResult(name, "wrong", f"{case}：{result.problem}")
        got, low = result.array, low or result.low
        if got.shape != want.shape:
            shape_hint = split_heads_shape_mistake(got.shape, n, h, d // h)
            message = f"{case}：形状应为 {tuple(want.shape)}，你的是 {tuple(got.shape)}：{shape_hint}"
            return ExerciseResult(name, "wrong", message)
        if not _isfinite(got).all():
            return ExerciseResult(name, "wrong", f"{case}：结果里有 NaN 或 inf，而输入都是有限的数。")
        if not _same(got, want, result.low):
            if (imprecise := _precision_problem(name, case, got, want, result.low)) is not None:
                return imprecise
            d_k = d // h
            if _same(got, x.reshape(h, n, d_k)):
                hint = (
                    f"形状对了，但内容不对：直接 reshape 成 ({h}, {n}, {d_k}) 会把好几个词的特征塞进同一个头。"
                    f"先 reshape 成 (n, h, d_k) = ({n}, {h}, {d_k})，再交换前两个轴（transpose）。"
                )
            elif _same(got, x.reshape(n, d_k, h).transpose(2, 0, 1)):
                hint = (
                    f"第 i 个头应当拿连续的一块列 [i·d_k, (i+1)·d_k)，而不是每隔 {h} 列取一列："
                    "reshape 的顺序是 (n, h, d_k)。"
                )
            else:
                hint = f"形状对了，但数值不对，{_where_differs(got, want)}。head i 应是 x[:, i·d_k:(i+1)·d_k]。"
            return ExerciseResult(name, "wrong", f"{case}：{hint}")
    n, d, h = cases[0]
    shape = split_heads(np.zeros((n, d)), h).shape
    message = (
        f"全部通过！{len(cases)} 个例子都和 lesson_lib 的 split_heads 一致（包括 base 模型：({n}, {d}) → {shape}）。"
        + _precision_note(low)
    )
    return ExerciseResult(name, "passed", message)


# ---------------------------------------------------------------------------------------------
# Exercise 2: the per-head loop version of multi-head attention
# ---------------------------------------------------------------------------------------------

_MHA_CASES = ((5, 8, 2), (4, 12, 3), (6, 8, 1), (3, 16, 8), (12, 64, 8))  # (n, d_model, h)


def _mha_variants(x, w_q, w_k, w_v, w_o, h):
    """Outputs of common mistakes, computed with the kernel's functions, with the advice for each."""
    d = x.shape[1]
    d_k = d // h
    sqrt = math.sqrt(d_k)
    out = {}
    out["no_scale"] = (
        multi_head_attention(x, w_q * sqrt, w_k, w_v, w_o, h)[0],
        "忘了除以 √d_k：打分应为 Q_i K_iᵀ / √d_k。",
    )
    if h > 1:
        out["scale_d_model"] = (
            multi_head_attention(x, w_q * sqrt / math.sqrt(d), w_k, w_v, w_o, h)[0],
            f"缩放用的是 √d_model = √{d}；每个头应当除以自己的 √d_k = √{d_k}。",
        )
        out["one_head"] = (
            multi_head_attention(x, w_q, w_k, w_v, w_o, 1)[0],
            f"结果和单头（h = 1）一样：每个头只应使用 W^Q、W^K、W^V 的第 i 块 {d_k} 列，分别做注意力。",
        )
        perm = np.concatenate([np.arange(i, d, h) for i in range(h)])
        out["strided"] = (
            multi_head_attention(x, w_q[:, perm], w_k[:, perm], w_v[:, perm], w_o, h)[0],
            f"第 i 个头应当取连续的列块 [i·d_k, (i+1)·d_k)，而不是每隔 {h} 列取一列。",
        )
    out["no_w_o"] = (
        multi_head_attention(x, w_q, w_k, w_v, np.eye(d), h)[0],
        "忘了最后乘 W^O：Concat 之后还要乘输出投影矩阵。",
    )
    q = split_heads(x @ w_q, h)
    k = split_heads(x @ w_k, h)
    v = split_heads(x @ w_v, h)
    scores = q @ np.swapaxes(k, -1, -2) / sqrt
    out["softmax_axis"] = (
        merge_heads(softmax(scores, axis=-2) @ v) @ w_o,
        "softmax 的方向不对：应当沿最后一个轴（对每个查询的所有键）归一化，softmax(scores, axis=-1)。",
    )
    out["no_softmax"] = (
        merge_heads(scores @ v) @ w_o,
        "忘了 softmax：分数要先变成每行和为 1 的权重，再乘 V。",
    )
    return out


def check_multi_head_attention_loop(fn) -> ExerciseResult:
    """Run ``fn(x, w_q, w_k, w_v, w_o, h)`` on several cases and compare with the kernel's multi_head_attention."""
    name, learner = "multi_head_attention_loop", "my_multi_head_attention_loop"
    codes = _forbidden(name)
    if refused := _refused(name, learner, fn, codes):
        return refused
    rng = np.random.default_rng(1)
    low = False
    for n, d, h in _MHA_CASES:
        case = f"n={n}, d_model={d}, h={h}"
        x = rng.standard_normal((n, d))
        ws = [rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(4)]
        want = multi_head_attention(x, *ws, h)[0]
        hint = "提示：head_i 用 W^Q[:, i·d_k:(i+1)·d_k] 等列块；可以调用 softmax(scores, axis=-1)。"
        result, problem = _run_case(name, learner, case, hint, fn, x, *ws, h, digest=_digest_pair, forbidden=codes,
                                    arg_names=("x", "w_q", "w_k", "w_v", "w_o", "h"))
        if problem is not None:
            return problem
        if result.problem is not None:
            return ExerciseResult(name, "wrong", f"{case}：{result.problem}")
        got, low = result.array, low or result.low
        d_k = d // h
        if got.shape != want.shape:
            if got.shape == (h, n, d_k):
                hint = f"这是 {h} 个头各自的输出：还要沿特征维度拼接（Concat）成 ({n}, {d})，再乘 W^O。"
            elif got.shape == (n, d_k):
                hint = f"只返回了一个头的结果：要把 {h} 个头都算出来再拼接。"
            else:
                hint = "输出应当和输入 x 一样是 (n, d_model)。"
            return ExerciseResult(name, "wrong", f"{case}：形状应为 {want.shape}，你的是 {got.shape}。{hint}")
        if not _isfinite(got).all():
            message = f"{case}：结果里有 NaN 或 inf：检查 softmax 是否先减去了每行的最大值。"
            return ExerciseResult(name, "wrong", message)
        if not _same(got, want, result.low):
            if (imprecise := _precision_problem(name, case, got, want, result.low)) is not None:
                return imprecise
            for variant, advice in _mha_variants(x, *ws, h).values():
                if _same(got, variant, result.low):
                    return ExerciseResult(name, "wrong", f"{case}：{advice}")
            return ExerciseResult(
                name, "wrong", f"{case}：形状对了，但数值不对，{_where_differs(got, want)}。"
                "逐项检查：列块切分、除以 √d_k、softmax 沿最后一轴、按头的顺序拼接、最后乘 W^O。",
            )  # fmt: skip
    return ExerciseResult(
        name, "passed", f"全部通过！{len(_MHA_CASES)} 个例子都和 lesson_lib 的 multi_head_attention 一致："
        "逐头循环和一次性的批量计算，算的是同一个公式。" + _precision_note(low),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Exercise 3: count the multiplies of one layer
# ---------------------------------------------------------------------------------------------

_COUNT_CASES = ((50, 512, 8), (50, 512, 16), (10, 64, 1), (7, 12, 3), (1, 8, 8))  # (n, d_model, h)


def check_count_multiplies(fn) -> ExerciseResult:
    """Run ``fn(n, d_model, h)`` and compare with lesson_lib.costs.count(...).matmul_total."""
    name, learner = "count_multiplies", "my_count_multiplies"
    codes = _forbidden(name)
    if refused := _refused(name, learner, fn, codes):
        return refused
    answers = {}
    for n, d, h in _COUNT_CASES:
        case = f"n={n}, d_model={d}, h={h}"
        c = count(n, d, h)
        result, problem = _run_case(name, learner, case, "提示：把四个矩阵乘法各自的乘法次数加起来。", fn, n, d, h,
                                    digest=_digest_number, forbidden=codes)
        if problem is not None:
            return problem
        if result.problem is not None:
            return ExerciseResult(name, "wrong", f"{case}：{result.problem}。")
        value = result.number
        answers[(n, d, h)] = value
        if value != c.matmul_total:
            message = f"{case}：应为 {c.matmul_total:,}，你的是 {_fmt(value)}。{_count_hint(value, c)}"
            return ExerciseResult(name, "wrong", message)
    (n, d, h1), (_, _, h2) = _COUNT_CASES[:2]
    total = count(n, d, h1).matmul_total
    message = (
        f"全部通过！例如 n={n}, d_model={d} 时，h = {h1} 和 h = {h2} 都是 {total:,} 次："
        "矩阵乘法的总量与头数无关（4·n·d² + 2·n²·d）。"
    )
    return ExerciseResult(name, "passed", message)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _fmt(value: float | int) -> str:
    if isinstance(value, int):  # exact, however large (str() of a huge int is refused by Python itself)
        return f"{value:,}" if value.bit_length() < 64 else f"一个约 {int(value.bit_length() * 0.30103) + 1} 位的整数"
    return f"{value:.6g}"


def _count_hint(value: float, c) -> str:
    parts = {
        c.scores + c.weights_v: "只算了 QKᵀ 与 weights × V，漏了四个投影（3·n·d² 与 n·d²）。",
        c.qkv_projections + c.output_projection: "只算了四个投影，漏了 QKᵀ 与 weights × V（各 n²·d）。",
        c.matmul_total - c.output_projection: "漏了输出投影 W^O（n·d²）。",
        c.matmul_total - c.qkv_projections: "漏了 Q、K、V 三个投影（3·n·d²）。",
        c.matmul_total - c.weights_v: "漏了 weights × V（n²·d）。",
        c.matmul_total - c.scores: "漏了打分 QKᵀ（n²·d）。",
        c.scores: "只算了打分 QKᵀ 这一步。",
        c.matmul_total + c.softmax_total: "多算了 softmax 的 exp、除法和缩放：本题只数矩阵乘法。",
        c.matmul_total * c.h: "多乘了一个 h：每个头只有 d_k = d_model / h 宽，h 个头合起来和单头一样。",
        c.matmul_total - c.scores - c.weights_v + (c.scores + c.weights_v) // c.h:
            "QKᵀ 与 weights × V 只算了一个头：要乘以 h。",
    }  # fmt: skip
    return parts.get(value, "提示：四部分分别是 Q/K/V 投影 3·n·d²、QKᵀ n²·d、weights × V n²·d、W^O n·d²。")


# ---------------------------------------------------------------------------------------------
# Registry and notebook helpers
# ---------------------------------------------------------------------------------------------

EXERCISES = MappingProxyType({  # read-only: a cell cannot swap in a checker that always passes
    "split_heads": _Exercise(
        "split_heads",
        "my_split_heads",
        "实现 my_split_heads(x, h)：输入 x 的形状是 (n, d_model)，h 整除 d_model。返回形状 (h, n, d_k) 的数组，"
        "d_k = d_model / h；第 i 个头是 x 的第 i 块连续的列 x[:, i·d_k:(i+1)·d_k]。"
        "只用 numpy 的 reshape 和 transpose。",
        split_heads_solution,
        check_split_heads,
    ),
    "multi_head_attention_loop": _Exercise(
        "multi_head_attention_loop",
        "my_multi_head_attention_loop",
        "实现 my_multi_head_attention_loop(x, w_q, w_k, w_v, w_o, h)：x 是 (n, d_model)，四个权重都是 "
        "(d_model, d_model)。用 for 循环逐个头计算：head_i = softmax(Q_i K_iᵀ / √d_k) V_i，其中 Q_i = x W^Q 的第 i 块 "
        "d_k 列（K_i、V_i 同理）；把 h 个头沿特征维度拼接成 (n, d_model)，再乘 w_o，返回 (n, d_model) 的输出。"
        "可以使用 softmax(scores, axis=-1)。",
        multi_head_attention_loop_solution,
        check_multi_head_attention_loop,
    ),
    "count_multiplies": _Exercise(
        "count_multiplies",
        "my_count_multiplies",
        "实现 my_count_multiplies(n, d_model, h)：返回一层自注意力里所有矩阵乘法的乘法次数（整数）："
        "Q、K、V 三个投影，每个头的 Q_i K_iᵀ 与 weights_i V_i，以及输出投影 W^O。softmax 不算。"
        "(a × b) 矩阵乘 (b × c) 矩阵需要 a·b·c 次乘法。",
        count_multiplies_solution,
        check_count_multiplies,
    ),
})


def _exercise(name: str) -> _Exercise:
    if name not in EXERCISES:
        raise KeyError(f"没有名为 {name!r} 的练习；可用的有 {', '.join(EXERCISES)}。")
    return EXERCISES[name]


def check(name: str, fn) -> ExerciseResult:
    """Check the learner's function for exercise ``name``. Never raises for anything the function does, and
    returns within the time budget (per call of ``fn``: learner_code.TIME_BUDGET_S, plus a short grace)."""
    exercise = _exercise(name)
    with learner_code.guard():  # a check called from inside the learner's function raises NestedCheck there
        before = _TAMPER.restore()  # a patch made in a cell before the check: undone, then the check runs clean
        try:
            result = exercise.checker(fn)
        except Exception as exc:  # a learner's result that defeats every guard above still gets an answer
            result = ExerciseResult(name, "error",
                                    f"检查时遇到意外情况：{type(exc).__name__}。请检查返回值的类型和形状。")
        except KeyboardInterrupt:
            result = ExerciseResult(name, "interrupted", "检查被中断了。如果是因为等得太久：是不是写了死循环？")
        _TAMPER.restore()
    if before:
        shown = "、".join(before[:3]) + ("等" if len(before) > 3 else "")
        result = ExerciseResult(result.name, result.status, f"（检查前发现 {shown} 被改动过，检查器已恢复原样，"
                                f"用原来的函数检查。）{result.message}")  # fmt: skip
    _record(result)
    return result


def _record(result: ExerciseResult) -> None:
    """Save the result to the learner's progress (a problem saving is shown in the summary, never raised here)."""
    try:
        progress.default_progress().record_exercise(result)
    except Exception:  # the learner's result matters more than its bookkeeping
        pass


def spec(name: str) -> _Text:
    """The exercise's specification, in Chinese."""
    return _Text(_exercise(name).spec)


def show_solution(name: str) -> _Text:
    """The reference solution's source (read from lesson_lib by reflection, never a pasted copy)."""
    return _Text(inspect.getsource(_exercise(name).solution).rstrip(), "python")

progress.declare(exercise_names=tuple(EXERCISES))  # the progress store counts the items its callers name

# Everything a check relies on, as it was before any learner code ran (see learner_code.Tamper).
_TAMPER = learner_code.Tamper(
    [m for n, m in list(sys.modules.items()) if (n == "numpy" or n.startswith("numpy.")) and isinstance(m, ModuleType)]
    + [math, builtins, attention, flops, validation, shape_mistakes, learner_code, sys.modules[__name__]]
)
