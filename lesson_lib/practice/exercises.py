"""Code exercises (§3 split_heads, §3 the per-head loop, §4 the multiply count): per exercise a
spec, a stub in the notebook, a checker whose message names the mistake, a Chinese solution. Checks
run in the ``worker`` process."""

from __future__ import annotations

import ast
import contextlib
import inspect
import math
import re
import textwrap
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace

import numpy as np

from lesson_lib import paper
from lesson_lib.attention import merge_heads, multi_head_attention, softmax, split_heads
from lesson_lib.costs import count
from lesson_lib.practice import progress, worker
from lesson_lib.practice.checkers import split_heads_shape_mistake
from lesson_lib.practice.feedback import box_html

BUDGET_S = 5.0  # one whole check (every case); a right answer takes milliseconds
# (n, d_model, h) of each check's cases; the first split is the base model's
SPLIT_CASES = ((12, paper.BASE_D_MODEL, paper.BASE_HEADS), (5, 6, 3), (4, 8, 1), (3, 6, 6),
               (7, 12, 4))
MHA_CASES = ((5, 8, 2), (4, 12, 3), (6, 8, 1), (3, 16, 8), (12, 64, 8))
COUNT_CASES = (
    (50, paper.BASE_D_MODEL, paper.BASE_HEADS),
    (50, paper.BASE_D_MODEL, 2 * paper.BASE_HEADS),
    (10, 64, 1),
    (7, 12, 3),
    (1, 8, 8),
)


def _count_passed() -> str:
    """The count exercise's praise, with the base model's numbers."""
    (n, d_model, h), (_, _, h2) = COUNT_CASES[:2]
    total = count(n, d_model, h).matmul_total
    return (f"全部通过！例如 n={n}, d_model={d_model} 时，h = {h} 和 h = {h2} 都是 {total:,} 次："
            "矩阵乘法的总量与头数无关（4·n·d² + 2·n²·d）。")


# --- solutions (shown by reflection)
def split_heads_solution(x, h):
    """(n, d_model) → (h, n, d_k)：特征的第 i 块连续的列，就是第 i 个头。"""
    n, d_model = x.shape
    d_k = d_model // h
    x = x.reshape(n, h, d_k)  # (n, h, d_k)  第 [i·d_k, (i+1)·d_k) 列 → 头 i
    return x.transpose(1, 0, 2)  # (h, n, d_k)  头的轴换到最前：每个头是一个 (n, d_k) 矩阵


def multi_head_attention_loop_solution(x, w_q, w_k, w_v, w_o, h):
    """论文的定义，一个头一个头地算：head_i = Attention(X W_i^Q, X W_i^K, X W_i^V)，拼接后乘 W^O。
    """
    d_model = x.shape[1]
    d_k = d_model // h
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)  # 头 i 只用每个投影矩阵的第 i 块列
        q = x @ w_q[:, cols]  # (n, d_k)  头 i 的查询
        k = x @ w_k[:, cols]  # (n, d_k)  头 i 的键
        v = x @ w_v[:, cols]  # (n, d_k)  头 i 的值
        scores = q @ k.T / np.sqrt(d_k)  # (n, n)  除以 √d_k：打分的方差不随 d_k 变大
        weights = softmax(scores, axis=-1)  # (n, n)  沿最后一轴：每一行（一个查询）和为 1
        heads.append(weights @ v)  # (n, d_k)  头 i 的输出：值的加权平均
    concat = np.concatenate(heads, axis=-1)  # (n, h·d_k) = (n, d_model)  按头的顺序拼接
    return concat @ w_o  # (n, d_model)  W^O 把各个头的结果混在一起


def count_multiplies_solution(n, d_model, h):
    """一层自注意力里矩阵乘法的乘法次数（softmax 不算）。(a × b) 乘 (b × c) 要 a·b·c 次。"""
    d_k = d_model // h
    projections = 3 * n * d_model * d_model  # X W^Q、X W^K、X W^V：三次 (n, d) @ (d, d)
    scores = h * (n * n * d_k)  # 每个头 Q_i K_iᵀ：(n, d_k) @ (d_k, n)
    weighted = h * (n * n * d_k)  # 每个头 weights_i V_i：(n, n) @ (n, d_k)
    output = n * d_model * d_model  # 输出投影 Concat(head_i) W^O：(n, d) @ (d, d)
    return projections + scores + weighted + output  # 与 h 无关：h 个窄头合起来和一个宽头一样多


# --- results
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


class _Text(str):
    """Text a notebook cell shows as itself: the spec, and (``_Code``, as a Python block) the
    solution."""

    __repr__ = str.__str__


class _Code(_Text):
    def _repr_markdown_(self) -> str:
        return f"```python\n{self}\n```"


class _Stop(Exception):
    """Ends a check early: (status, message[, mistakes])."""


# --- calling the learner's function (in the worker)
_EXTRA_HINT = {  # what an exception usually means in these exercises
    RecursionError: "递归太深：这几个练习都不需要递归，用 for 循环写。",
    MemoryError: "内存不够：是不是把数组的大小写成了很大的数（例如 n ** d_model）？"
                 "这里的例子都很小。",
    SystemExit: "函数里调用了 exit() / sys.exit()：函数只需要计算并 return 结果。",
}


def _call(ex, case, fn, args, source) -> object:
    """``fn(*args)`` on copies of the arrays: its return value, or _Stop with a message that
    teaches."""
    given = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            value = fn(*given)
    except NotImplementedError:
        raise _Stop("todo", _todo(ex)) from None
    # the learner's function may raise anything, SystemExit and KeyboardInterrupt too
    except BaseException as exc:
        extra = next((text for kind, text in _EXTRA_HINT.items() if isinstance(exc, kind)), ex.hint)
        frames = [(f.filename, f.lineno, f.name)
                  for f in reversed(traceback.extract_tb(exc.__traceback__))]
        line, text = _learner_line(frames, fn, source)
        where = f"，在你的函数第 {line} 行「{text}」" if text else ""
        raise _Stop("error",
                    f"运行出错（{case} 这个例子）{where}：{_describe(exc)}。{extra}") from None
    changed = [name for name, a, g in zip(inspect.signature(ex.solution).parameters, args, given)
               if isinstance(a, np.ndarray) and not np.array_equal(g, a, equal_nan=True)]
    if changed:
        raise _Stop("wrong",
                    f"{case}：你的函数改动了传进来的 {'、'.join(changed)}（原地修改了输入）。"
                    "调用者的数据"
                    "不该被改掉：请不要写 x[...] = …、x *= … 这类语句，需要时先 x = x.copy()。",
                    ("modifies_input",))
    if value is None:
        raise _Stop("wrong",
                    f"{ex.learner_name} 没有返回任何东西（返回了 None）：是不是忘了写 return？",
                    ("no_return",))
    return value


def _as_array(case, result) -> tuple[np.ndarray, bool]:
    """(a float64 copy, whether the result was float32/float16), or _Stop saying why it is not a
    numeric array."""
    if callable(result):
        name = getattr(result, "__name__", type(result).__name__)
        raise _Stop("wrong",
                    f"{case}：你返回的是一个函数（{name}），不是计算结果：是不是写成了 return "
                    f"{name}，"
                    "忘了加括号调用它？")
    try:
        kind = np.asarray(result).dtype
    except Exception:
        raise _Stop("wrong", f"{case}：返回值没法变成数组（是 {type(result).__name__}）："
                    "请返回一个 numpy 数组。") from None
    why = {"c": f"返回的数组是复数（dtype={kind}）：注意力的输出应当是实数。"
                "检查是不是用了会产生复数的运算。",
           "O": "返回的数组里装的是 Python 对象（dtype=object），不是数字："
                "是不是返回了长短不一的列表，"
                "或者把几个数组放进了一个列表？请用 np.stack / np.concatenate 拼成一个数组。",
           "b": "返回的是 True/False 组成的布尔数组，不是数值：请返回计算出来的数组。",
           **dict.fromkeys("USV",
                           f"返回的是文字（dtype={kind}），不是数字数组：请返回计算出来的 numpy "
                           "数组。")}
    if kind.kind not in "iuf":
        raise _Stop("wrong",
                    f"{case}：" + why.get(kind.kind,
                                         f"返回值不是数字数组（是 {type(result).__name__}，"
                                         f"dtype={kind}）：请返回一个 numpy 数组。"))
    low = isinstance(result, np.ndarray) and result.dtype in (np.float32, np.float16)
    return np.array(result, dtype=np.float64), low


def _describe(exc: BaseException) -> str:
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()  # safe if str() of it raises
    return text if len(text) <= 200 else text[:200] + "…"


def _learner_line(frames, fn, source: str) -> tuple[int, str]:
    """(line number in ``source``, its text) of the innermost of ``frames`` ((file, line, function),
    innermost first) in the learner's code: a whole cell's text (``<learner>``) or ``fn``'s file or
    name; (0, '') if none."""
    lines = source.splitlines()
    code = getattr(fn, "__code__", None)
    for path, lineno, function in frames:
        if path == "<learner>" or (code is not None
                                   and (path == code.co_filename or function == code.co_name)):
            index = lineno - 1 if path == "<learner>" else lineno - code.co_firstlineno
            if 0 <= index < len(lines) and lines[index].strip():
                return index + 1, lines[index].strip()[:80]
    return 0, ""


def _same(a, b, low: bool = False) -> bool:
    # float32 keeps ~7 significant digits; sums lose some
    rtol, atol = (1e-4, 1e-5) if low else (1e-6, 1e-8)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _where_differs(got, want) -> str:
    diff = np.abs(got - want)
    diff[~np.isfinite(diff)] = np.inf
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
    # round-off: four decimals would print the same number twice
    if f"{want[idx]:.4f}" == f"{got[idx]:.4f}":
        return (f"例如位置 {idx}：应为 {want[idx]:.10g}，你的是 {got[idx]:.10g}，只差 "
                f"{diff[idx]:.1e}。"
                "这是舍入误差的量级")
    return f"例如位置 {idx}：应为 {want[idx]:.4f}，你的是 {got[idx]:.4f}"


def _values(case, got, want, low, nonfinite, variants, advice) -> None:
    """_Stop naming the mistake unless ``got`` is ``want``: NaN or inf, float32 inside float64, one
    of ``variants`` ((mistake, the output it gives, advice), made lazily), else where it differs."""
    if not np.isfinite(got).all():
        raise _Stop("wrong", f"{case}：结果里有 NaN 或 inf{nonfinite}")
    if _same(got, want, low):
        return
    if not low and _same(got, want, low=True):
        raise _Stop("wrong", f"{case}：精度不够，请用 float64：{_where_differs(got, want)}。"
                    "公式本身是对的，差别来自中间用了 float32。", ("float32",))
    for mistake, variant, text in variants:
        if _same(got, variant, low):
            raise _Stop("wrong", f"{case}：{text}", (mistake,))
    raise _Stop("wrong", f"{case}：形状对了，但数值不对，{_where_differs(got, want)}。{advice}",
                ("values",))


def _todo(ex) -> str:
    return (f"还没实现：{ex.learner_name} 里还是 raise NotImplementedError。把它换成你的代码，"
            "再运行这个单元格。"
            f"想看要求：exercises.spec(\"{ex.name}\")；实在卡住了：exercises.show_solution(\""
            f"{ex.name}\")。")


# --- the verdicts: whether a right value was float32, or _Stop
def _split_heads_verdict(case, value, x, h) -> bool:
    got, low = _as_array(case, value)
    (n, d) = x.shape
    want = split_heads(x, h)
    d_k = d // h
    if got.shape != want.shape:
        raise _Stop("wrong", f"{case}：形状应为 {want.shape}，你的是 {got.shape}："
                    + split_heads_shape_mistake(got.shape, n, h, d_k),
                    ("transpose" if got.shape == (n, h, d_k) else "shape",))
    _values(case, got, want, low, "，而输入都是有限的数。", (
        ("reshape_without_transpose", x.reshape(h, n, d_k),
         f"形状对了，但内容不对：直接 reshape 成 ({h}, {n}, {d_k}) "
         "会把好几个词元的特征塞进同一个头。"
         f"先 reshape 成 (n, h, d_k) = ({n}, {h}, {d_k})，再交换前两个轴（transpose）。"),
        ("strided", x.reshape(n, d_k, h).transpose(2, 0, 1),
         f"第 i 个头应当拿连续的一块列 [i·d_k, (i+1)·d_k)，而不是每隔 {h} 列取一列：reshape "
         "的顺序是 (n, h, d_k)。"),
    ), "head i 应是 x[:, i·d_k:(i+1)·d_k]。")
    return low


def _mha_mistakes(x, w_q, w_k, w_v, w_o, h):
    """(mistake id, the output it gives, computed with the kernel, and the advice)."""
    d = x.shape[1]
    d_k = d // h
    sqrt = math.sqrt(d // h)
    q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
    scores = q @ np.swapaxes(k, -1, -2) / sqrt
    perm = np.concatenate([np.arange(i, d, h) for i in range(h)])
    yield ("no_scale", multi_head_attention(x, w_q * sqrt, w_k, w_v, w_o, h)[0],
           "忘了除以 √d_k：打分应为 Q_i K_iᵀ / √d_k。")
    if h > 1:
        yield ("scale_d_model",
               multi_head_attention(x, w_q * sqrt / math.sqrt(d), w_k, w_v, w_o, h)[0],
               f"缩放用的是 √d_model = √{d}；每个头应当除以自己的 √d_k = √{d_k}。")
        yield ("one_head", multi_head_attention(x, w_q, w_k, w_v, w_o, 1)[0],
               f"结果和单头（h = 1）一样：每个头只应使用 W^Q、W^K、W^V 的第 i 块 {d_k} 列，"
               "分别做注意力。")
        yield ("strided",
               multi_head_attention(x, w_q[:, perm], w_k[:, perm], w_v[:, perm], w_o, h)[0],
               f"第 i 个头应当取连续的列块 [i·d_k, (i+1)·d_k)，而不是每隔 {h} 列取一列。")
    yield ("no_w_o", multi_head_attention(x, w_q, w_k, w_v, np.eye(d), h)[0],
           "忘了最后乘 W^O：Concat 之后还要乘输出投影矩阵。")
    yield ("softmax_axis", merge_heads(softmax(scores, axis=-2) @ v) @ w_o,
           "softmax 的方向不对：应当沿最后一个轴（对每个查询的所有键）归一化，softmax(scores, "
           "axis=-1)。")
    yield "no_softmax", merge_heads(scores @ v) @ w_o, ("忘了 softmax：分数要先变成每行和为 1 "
                                                        "的权重，再乘 V。")


def _mha_verdict(case, value, *args) -> bool:  # args: x, w_q, w_k, w_v, w_o, h
    if type(value) is tuple and len(value) == 2:
        value = value[0]  # (output, weights), the kernel's convention
    got, low = _as_array(case, value)
    (n, d) = args[0].shape
    h = args[-1]
    want = multi_head_attention(*args)[0]
    if got.shape != want.shape:
        mistake, why = {
            (h, n, d // h): ("no_concat",
                             f"这是 {h} 个头各自的输出：还要沿特征维度拼接（Concat）成 ({n}, {d})，"
                             "再乘 W^O。"),
            (n, d // h): ("one_head_only", f"只返回了一个头的结果：要把 {h} 个头都算出来再拼接。"),
        }.get(got.shape, ("shape", "输出应当和输入 x 一样是 (n, d_model)。"))
        raise _Stop("wrong", f"{case}：形状应为 {want.shape}，你的是 {got.shape}。{why}",
                    (mistake,))
    _values(case, got, want, low, "：检查 softmax 是否先减去了每行的最大值。", _mha_mistakes(*args),
            "逐项检查：列块切分、除以 √d_k、softmax 沿最后一轴、按头的顺序拼接、最后乘 W^O。")
    return low


def _count_verdict(case, value, n, d, h) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or (isinstance(value, (float, np.floating)) and not math.isfinite(value)):
        short = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
        raise _Stop("wrong", f"{case}：应当返回一个整数，你返回的是 {short}。")
    value = int(value) if isinstance(value,
                                     (int, np.integer)) or value == int(value) else float(value)
    c = count(n, d, h)
    if value == c.matmul_total:
        return False
    mistake, hint = {  # what the usual slips give
        c.scores + c.weights_v: ("no_projections",
                                 "只算了 QKᵀ 与 weights × V，漏了四个投影（3·n·d² 与 n·d²）。"),
        c.qkv_projections + c.output_projection: ("no_scores",
                                                  "只算了四个投影，漏了 QKᵀ 与 weights × V（各 "
                                                  "n²·d）。"),
        c.matmul_total - c.output_projection: ("no_w_o", "漏了输出投影 W^O（n·d²）。"),
        c.matmul_total - c.qkv_projections: ("no_qkv", "漏了 Q、K、V 三个投影（3·n·d²）。"),
        c.matmul_total - c.weights_v: ("no_weights_v", "漏了 weights × V（n²·d）。"),
        c.matmul_total - c.scores: ("no_qk", "漏了打分 QKᵀ（n²·d）。"),
        c.scores: ("scores_only", "只算了打分 QKᵀ 这一步。"),
        c.matmul_total + c.softmax_total: ("softmax_counted",
                                           "多算了 softmax 的 exp、除法和缩放：本题只数矩阵乘法。"),
        c.matmul_total * c.h: ("times_h",
                               "多乘了一个 h：每个头只有 d_k = d_model / h 宽，h "
                               "个头合起来和单头一样。"),
        c.matmul_total - c.scores - c.weights_v + (c.scores + c.weights_v) // c.h:
            ("one_head", "QKᵀ 与 weights × V 只算了一个头：要乘以 h。"),
    }.get(value,
          ("other", "提示：四部分分别是 Q/K/V 投影 3·n·d²、QKᵀ n²·d、weights × V n²·d、W^O n·d²。"))
    if isinstance(value, float):
        shown = f"{value:.6g}"
    elif value.bit_length() < 64:
        shown = f"{value:,}"
    else:  # str() of a huge int is refused
        shown = f"一个约 {int(value.bit_length() * 0.30103) + 1} 位的整数"
    raise _Stop("wrong", f"{case}：应为 {c.matmul_total:,}，你的是 {shown}。{hint}", (mistake,))


# --- what the notebook calls
@dataclass(frozen=True)
class _Exercise:
    name: str
    spec: str
    solution: Callable
    cases: tuple[tuple[int, int, int], ...]  # (n, d_model, h)
    inputs: Callable  # (rng, n, d_model, h) -> the arguments of one call
    # (case, value, *arguments) -> whether a right value was float32, or _Stop
    verdict: Callable[..., bool]
    hint: str  # after an exception
    passed: str

    @property
    def learner_name(self) -> str:  # the stub's name in the notebook
        return f"my_{self.name}"


# The named mistakes a checker gives (ExerciseResult.mistakes), in Chinese: the class report lists
# them by name.
MISTAKES = {
    "transpose": "忘了 transpose（停在 (n, h, d_k)）",
    "reshape_without_transpose": "直接 reshape 成 (h, n, d_k)，没有转置",
    "strided": "每隔 h 列取一列，而不是连续的 d_k 列", "shape": "形状不对",
    "values": "形状对了，数值不对",
    "no_scale": "忘了除以 √d_k", "scale_d_model": "除以 √d_model，而不是 √d_k",
    "one_head": "只算了一个头",
    "one_head_only": "只返回了一个头的结果", "no_concat": "没有把各头拼接起来",
    "no_w_o": "漏了输出投影 W^O",
    "softmax_axis": "softmax 沿错了轴", "no_softmax": "忘了 softmax",
    "no_projections": "漏了四个投影",
    "no_scores": "漏了 QKᵀ 与 weights × V", "no_qkv": "漏了 Q、K、V 三个投影",
    "no_weights_v": "漏了 weights × V",
    "no_qk": "漏了打分 QKᵀ", "scores_only": "只算了打分 QKᵀ",
    "softmax_counted": "把 softmax 也算进了乘法",
    "times_h": "多乘了一个 h", "other": "数错了", "modifies_input": "改动了输入数组",
    "no_return": "没有返回结果",
    "float32": "公式对，中间用了 float32",
}

EXERCISES = {e.name: e for e in (
    _Exercise("split_heads",
              "实现 my_split_heads(x, h)：输入 x 的形状是 (n, d_model)，h 整除 d_model。返回形状 "
              "(h, n, d_k) 的数组，"
              "d_k = d_model / h；第 i 个头是 x 的第 i 块连续的列 x[:, i·d_k:(i+1)·d_k]。"
              "只用 numpy 的 reshape 和 transpose。",
              split_heads_solution, SPLIT_CASES, lambda rng, n, d,
              h: (rng.standard_normal((n, d)), h),
              _split_heads_verdict, "提示：先 x.reshape(n, h, d_k)，再交换前两个轴。",
              f"全部通过！{len(SPLIT_CASES)} 个例子都和 lesson_lib 的 split_heads 一致（包括 base "
              "模型："
              f"(12, {paper.BASE_D_MODEL}) → ({paper.BASE_HEADS}, 12, "
              f"{paper.BASE_D_MODEL // paper.BASE_HEADS})）。"),
    _Exercise("multi_head_attention_loop",
              "实现 my_multi_head_attention_loop(x, w_q, w_k, w_v, w_o, h)：x 是 (n, d_model)，"
              "四个权重都是 "
              "(d_model, d_model)。用 for 循环逐个头计算：head_i = softmax(Q_i K_iᵀ / √d_k) V_i，"
              "其中 Q_i = x W^Q 的第 i 块 d_k 列（K_i、V_i 同理）；把 h 个头沿特征维度拼接成 (n, "
              "d_model)，"
              "再乘 w_o，返回 (n, d_model) 的输出。可以使用 softmax(scores, axis=-1)。",
              multi_head_attention_loop_solution, MHA_CASES,
              lambda rng, n, d,
              h: (rng.standard_normal((n, d)), *(rng.standard_normal((d, d)) / math.sqrt(d)
                                                                   for _ in range(4)), h),
              _mha_verdict,
              "提示：head_i 用 W^Q[:, i·d_k:(i+1)·d_k] 等列块；可以调用 softmax(scores, axis=-1)。",
              f"全部通过！{len(MHA_CASES)} 个例子都和 lesson_lib 的 multi_head_attention 一致："
              "逐头循环和一次性的批量计算，算的是同一个公式。"),
    _Exercise("count_multiplies",
              "实现 my_count_multiplies(n, d_model, h)："
              "返回一层自注意力里所有矩阵乘法的乘法次数（整数）："
              "Q、K、V 三个投影，每个头的 Q_i K_iᵀ 与 weights_i V_i，以及输出投影 W^O。softmax "
              "不算。"
              "(a × b) 矩阵乘 (b × c) 矩阵需要 a·b·c 次乘法。",
              count_multiplies_solution, COUNT_CASES, lambda rng, n, d, h: (n, d, h),
              _count_verdict, "提示：把四个矩阵乘法各自的乘法次数加起来。",
              _count_passed()),
)}


def _exercise(name: str) -> _Exercise:
    if name not in EXERCISES:
        raise KeyError(f"没有名为 {name!r} 的练习；可用的有 {', '.join(EXERCISES)}。")
    return EXERCISES[name]


def check(name: str, fn, *, budget: float | None = None) -> ExerciseResult:
    """Check the learner's function in the worker process and record the result; never raises for
    what it does."""
    ex = _exercise(name)
    if _in_worker:  # called from inside the learner's function
        raise RuntimeError("你的函数里又调用了 exercises.check：检查器会调用你的函数，"
                           "你的函数里不要再调用检查器。"
                           "把 exercises.check(...) 那一行移到函数外面（函数定义的下面）。")
    if not callable(fn):
        result = ExerciseResult(name, "error",
                                f"收到的不是函数，而是 {type(fn).__name__}：请把函数本身传进来，"
                                f"例如 check(\"{name}\", {ex.learner_name})，"
                                "函数名后面不要加括号。")
    else:
        source = ""
        # IPython keeps each cell's text for getsource
        with contextlib.suppress(OSError, TypeError):
            source = textwrap.dedent(inspect.getsource(fn))[:20_000]
        result = _run(ex, fn, source, BUDGET_S if budget is None else budget)
    # a failed save shows in the summary; the result matters more
    with contextlib.suppress(Exception):
        progress.default_progress().record_exercise(result)
    return result


def check_source(name: str, source: str) -> ExerciseResult:
    """Check a saved source (the class report) in a new process, not recorded: the last function it
    defines."""
    worker.stop()
    return _run(_exercise(name), None, textwrap.dedent(source), BUDGET_S)


def _is_stub(source: str) -> bool:
    """The notebook's stub, untouched: the last function's body is only (a docstring and) raise
    NotImplementedError."""
    with contextlib.suppress(SyntaxError, ValueError, IndexError):
        last = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)][-1]
        body = [s for s in last.body if not isinstance(getattr(s, "value", None), ast.Constant)]
        return len(body) == 1 and bool(re.fullmatch(r"raise NotImplementedError(\(.*\))?",
                                                    ast.unparse(body[0]), re.S))
    return False


_in_worker = False  # True in the checker's process
_AFTER = "你的笔记本没有受影响，改好后再运行这个单元格就行。"


def _run(ex: _Exercise, fn, source: str, budget: float) -> ExerciseResult:
    """Run the checker in the worker process (an untouched stub needs none); the Chinese message for
    how it ended."""
    learner = ex.learner_name
    result = partial(ExerciseResult, ex.name, source=source or None)
    if _is_stub(source):
        return result("todo", _todo(ex))
    # a function from __main__ travels by value, one from a module the worker imports
    import cloudpickle

    try:
        payload = cloudpickle.dumps((ex.name, fn, source))
    except Exception as exc:
        return result("error", f"{learner} 用到了无法交给检查器的东西（{_describe(exc)}）：检查器"
                      "在另一个进程里运行你的函数，函数只应使用参数、numpy 和普通的数字与数组。")
    reply = worker.run(f"{__name__}:_check_here", payload, budget,
                       preload=(__name__, "cloudpickle"))
    if reply.kind == "ok":
        if reply.printed:
            # the learner's own print()s
            print(reply.printed, end="" if reply.printed.endswith("\n") else "\n")
        status, message, mistakes = reply.value  # JSON: the tuple of mistakes comes back as a list
        return result(status, message, tuple(mistakes))
    if reply.kind == "timeout":
        huge = "创建了一个巨大的数组（形状里写成了 n ** d_model 之类的数）"
        if ex.name == "count_multiplies":
            huge = "把乘法写成了幂，n ** d_model ** h 的位数多到永远算不完"
        pattern = r'File "(.*)", line (\d+) in (\S+)'
        frames = [(path, int(line), function)
                  for path, line, function in re.findall(pattern, reply.stack)]
        # faulthandler's dump: the most recent call first
        text = _learner_line(frames, fn, source)[1]
        where = f"（停在这一行：「{text}」）" if text else ""
        return result("timeout", f"{learner} 运行了 {budget:g} 秒还没有结束{where}"
                      "，检查器把它停下了：是不是写了死循环？检查 while 循环的退出条件和 for "
                      "循环的范围。"
                      f"也可能是一次极大的计算：例如{huge}。这里的例子都很小，"
                      f"正确的写法一眨眼就算完。{_AFTER}")
    if reply.kind == "interrupted":
        return result("interrupted", f"检查被中断了（{learner} 还没算完）。"
                      f"如果是因为等得太久：是不是写了死循环？{_AFTER}")
    if reply.kind == "nostart":
        why = (reply.stack.strip().splitlines() or [""])[-1]
        return result("error",
                      f"检查器的后台进程没能启动（退出码 {reply.exitcode}；{why}），"
                      "你的函数还没有被检查。"
                      "请重启内核（Kernel → Restart）再运行；如果还是这样，把这条信息告诉老师。")
    if reply.exitcode is not None and 0 <= reply.exitcode < 256:
        return result("error", f"{learner} 让运行它的进程直接退出了（退出码 {reply.exitcode}）："
                      f"是不是调用了 os._exit(…)？函数只需要计算并 return 结果。{_AFTER}")
    return result("error",
                  f"运行 {learner} 的进程崩溃了（退出码 {reply.exitcode}）。常见原因：调高了 "
                  "sys.setrecursionlimit 之后递归太深，把栈用光了；用 ctypes 读写了不该碰的内存；"
                  "或者内存用得太多，被系统结束。这几个练习都不需要递归和 ctypes：用 for 循环和 "
                  "numpy 写。" + _AFTER)


def _check_here(payload: bytes) -> tuple[str, str, tuple[str, ...]]:
    """In the worker: rebuild the learner's function (or compile its text) and run every case of the
    exercise."""
    global _in_worker
    import cloudpickle

    _in_worker = True
    try:
        name, fn, source = cloudpickle.loads(payload)
        ex = EXERCISES[name]
        if fn is None:
            namespace = {"__name__": "__learner__", "np": np, "numpy": np, "math": math,
                         "softmax": softmax,
                         # a cell's own check line
                         "exercises": SimpleNamespace(check=lambda *args, **kwargs: None)}
            exec(compile(source, "<learner>", "exec"), namespace)
            fn = [v for v in namespace.values() if inspect.isfunction(v)
                  and v.__module__ == "__learner__"][-1]
    # a function that cannot be rebuilt here, or code given as text that does not run
    except BaseException as exc:
        return "error", (f"检查器没能拿到你的函数（{_describe(exc)}）：先单独运行定义函数的单元格，"
                         "确认它不报错，"
                         "再运行检查。"), ()
    try:
        rng = np.random.default_rng(0)
        low = False
        for n, d, h in ex.cases:
            case = f"n={n}, d_model={d}, h={h}"
            args = ex.inputs(rng, n, d, h)
            low = ex.verdict(case, _call(ex, case, fn, args, source), *args) or low
        return "passed", ex.passed + ("（你的结果是 float32，按 float32 的精度比对；lesson_lib 用 "
                                      "float64，"
                                      "想和它逐位一致请用 float64。）" if low else ""), ()
    except _Stop as stop:
        return stop.args[0], stop.args[1], tuple(stop.args[2]) if len(stop.args) > 2 else ()
    except BaseException as exc:  # what the learner returned defeated the checker's reading of it
        return "error", (f"检查你的返回值时出了意外（{_describe(exc)}）：请检查返回值的类型和形状，"
                         "应当返回一个普通的 "
                         "numpy 数组（或整数）。"), ()


def spec(name: str) -> _Text:
    return _Text(_exercise(name).spec)


def show_solution(name: str) -> _Code:
    """The reference solution's source (read by reflection, never a pasted copy)."""
    return _Code(inspect.getsource(_exercise(name).solution).rstrip())
