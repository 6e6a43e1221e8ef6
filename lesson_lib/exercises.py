"""Code exercises of section 10: a spec, a stub in the notebook, a checker that teaches, a solution on request.

Each exercise is checked by running the learner's function on several cases and comparing with the
lesson's kernel (``lesson_lib.attention``) or FLOP counter (``lesson_lib.flops``). The checker never
raises: a stub that still raises ``NotImplementedError`` gets a friendly 「还没实现」, a function that
raises anything else or returns garbage gets a message that says what went wrong and what to try.
Known mistakes (a forgotten transpose, no 1/√d_k, no W^O, softmax on the wrong axis, columns taken
with a stride) are recognised and named.

The reference solutions below are written out plainly for learners to read; ``show_solution(name)``
displays one by reflection, only when asked.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .attention import merge_heads, multi_head_attention, softmax, split_heads
from .flops import count

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
    status: str  # "passed", "todo" (stub not filled in), "error" (it raised), "wrong"
    message: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __repr__(self) -> str:
        return self.message


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
# Running learner code safely
# ---------------------------------------------------------------------------------------------

_TODO = object()


def _call(fn, *args):
    """(result, None), (_TODO, None) for NotImplementedError, or (None, exception). Never raises (except Ctrl-C)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(*args), None
    except NotImplementedError:
        return _TODO, None
    except (Exception, SystemExit) as exc:  # a learner's function may raise anything; KeyboardInterrupt still stops
        return None, exc


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 200 else text[:200] + "…"


def _as_array(value):
    """A float array, or None when the value cannot be one (None, strings, ragged lists, objects…)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.asarray(value)
            if arr.dtype.kind not in "biuf":  # strings, objects, complex numbers: not an answer here
                return None
            return arr.astype(float)
    except Exception:
        return None


def _returned_none(name, learner) -> ExerciseResult:
    return ExerciseResult(name, "wrong", f"{learner} 没有返回任何东西（返回了 None）：是不是忘了写 return？")


def _same(a, b) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-8))


def _where_differs(got, want) -> str:
    diff = np.abs(got - want)
    diff[~np.isfinite(diff)] = np.inf
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))
    return f"例如位置 {idx}：应为 {want[idx]:.4f}，你的是 {got[idx]:.4f}"


def _not_callable(name, learner_name, fn) -> ExerciseResult | None:
    if callable(fn):
        return None
    return ExerciseResult(
        name,
        "error",
        f"收到的不是函数，而是 {type(fn).__name__}：请把函数本身传进来，例如 check(\"{name}\", {learner_name})，"
        "函数名后面不要加括号。",
    )


def _todo(name, learner_name) -> ExerciseResult:
    return ExerciseResult(
        name,
        "todo",
        f"还没实现：{learner_name} 里还是 raise NotImplementedError。把它换成你的代码，再运行这个单元格。"
        f"想看要求：exercises.spec(\"{name}\")；实在卡住了：exercises.show_solution(\"{name}\")。",
    )


def _raised(name, case, exc, hint) -> ExerciseResult:
    return ExerciseResult(name, "error", f"运行出错（{case} 这个例子）：{_describe(exc)}。{hint}")


def _run_case(name, learner, case, hint, fn, *args):
    """Call the learner's function once: (result, None), or (None, feedback) for a stub, error or None."""
    result, exc = _call(fn, *args)
    if result is _TODO:
        return None, _todo(name, learner)
    if exc is not None:
        return None, _raised(name, case, exc, hint)
    if result is None:
        return None, _returned_none(name, learner)
    return result, None


# ---------------------------------------------------------------------------------------------
# Exercise 1: split_heads
# ---------------------------------------------------------------------------------------------

_SPLIT_CASES = ((12, 512, 8), (5, 6, 3), (4, 8, 1), (3, 6, 6), (7, 12, 4))  # (n, d_model, h)


def _split_cases():
    from . import paper

    first = (12, paper.BASE_D_MODEL, paper.BASE_HEADS)  # the lesson's base model: (12, 512) -> (8, 12, 64)
    return (first, *_SPLIT_CASES[1:])


def check_split_heads(fn) -> ExerciseResult:
    """Run ``fn(x, h)`` on several (n, d_model, h) and compare with the kernel's split_heads."""
    name, learner = "split_heads", "my_split_heads"
    if (bad := _not_callable(name, learner, fn)) is not None:
        return bad
    rng = np.random.default_rng(0)
    cases = _split_cases()
    for n, d, h in cases:
        case = f"n={n}, d_model={d}, h={h}"
        x = rng.standard_normal((n, d))
        want = split_heads(x, h)
        result, problem = _run_case(name, learner, case, "提示：先 x.reshape(n, h, d_k)，再交换前两个轴。",
                                    fn, x.copy(), h)
        if problem is not None:
            return problem
        got = _as_array(result)
        if got is None:
            kind = type(result).__name__
            return ExerciseResult(name, "wrong", f"返回值不是数组（是 {kind}）：请返回一个 numpy 数组。")
        if got.shape != want.shape:
            return ExerciseResult(name, "wrong", f"{case}：{_split_shape_hint(got.shape, want.shape, n, h)}")
        if not np.isfinite(got).all():
            return ExerciseResult(name, "wrong", f"{case}：结果里有 NaN 或 inf，而输入都是有限的数。")
        if not _same(got, want):
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
    )
    return ExerciseResult(name, "passed", message)


def _split_shape_hint(got, want, n, h) -> str:
    head = f"形状应为 {tuple(want)}，你的是 {tuple(got)}"
    if len(got) == 3 and got == (want[1], want[0], want[2]):
        return f"{head}：是不是忘了 transpose？reshape 成 (n, h, d_k) 之后，还要把头的轴换到最前面。"
    if len(got) == 3 and got == (want[0], want[2], want[1]):
        return f"{head}：后两个轴反了，每个头应当是 (n, d_k)，一行一个词。"
    if got == (n, want[0] * want[2]):
        return f"{head}：还是拆分之前的形状，需要把最后一维切成 {h} 份。"
    if len(got) != 3:
        return f"{head}：结果应当有 3 个轴 (h, n, d_k)。"
    return f"{head}：三个轴依次是头数 h、词数 n、每个头的宽度 d_k = d_model / h。"


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
    if (bad := _not_callable(name, learner, fn)) is not None:
        return bad
    rng = np.random.default_rng(1)
    for n, d, h in _MHA_CASES:
        case = f"n={n}, d_model={d}, h={h}"
        x = rng.standard_normal((n, d))
        ws = [rng.standard_normal((d, d)) / math.sqrt(d) for _ in range(4)]
        want = multi_head_attention(x, *ws, h)[0]
        hint = "提示：head_i 用 W^Q[:, i·d_k:(i+1)·d_k] 等列块；可以调用 softmax(scores, axis=-1)。"
        result, problem = _run_case(name, learner, case, hint, fn, x.copy(), *(w.copy() for w in ws), h)
        if problem is not None:
            return problem
        if isinstance(result, tuple) and len(result) == 2:
            result = result[0]  # (output, weights), the kernel's convention
        got = _as_array(result)
        if got is None:
            kind = type(result).__name__
            return ExerciseResult(name, "wrong", f"返回值不是数组（是 {kind}）：请返回形状 (n, d_model) 的输出。")
        d_k = d // h
        if got.shape != want.shape:
            if got.shape == (h, n, d_k):
                hint = f"这是 {h} 个头各自的输出：还要沿特征维度拼接（Concat）成 ({n}, {d})，再乘 W^O。"
            elif got.shape == (n, d_k):
                hint = f"只返回了一个头的结果：要把 {h} 个头都算出来再拼接。"
            else:
                hint = "输出应当和输入 x 一样是 (n, d_model)。"
            return ExerciseResult(name, "wrong", f"{case}：形状应为 {want.shape}，你的是 {got.shape}。{hint}")
        if not np.isfinite(got).all():
            message = f"{case}：结果里有 NaN 或 inf：检查 softmax 是否先减去了每行的最大值。"
            return ExerciseResult(name, "wrong", message)
        if not _same(got, want):
            for variant, advice in _mha_variants(x, *ws, h).values():
                if _same(got, variant):
                    return ExerciseResult(name, "wrong", f"{case}：{advice}")
            return ExerciseResult(
                name, "wrong", f"{case}：形状对了，但数值不对，{_where_differs(got, want)}。"
                "逐项检查：列块切分、除以 √d_k、softmax 沿最后一轴、按头的顺序拼接、最后乘 W^O。",
            )  # fmt: skip
    return ExerciseResult(
        name, "passed", f"全部通过！{len(_MHA_CASES)} 个例子都和 lesson_lib 的 multi_head_attention 一致："
        "逐头循环和一次性的批量计算，算的是同一个公式。",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Exercise 3: count the multiplies of one layer
# ---------------------------------------------------------------------------------------------

_COUNT_CASES = ((50, 512, 8), (50, 512, 16), (10, 64, 1), (7, 12, 3), (1, 8, 8))  # (n, d_model, h)


def check_count_multiplies(fn) -> ExerciseResult:
    """Run ``fn(n, d_model, h)`` and compare with lesson_lib.flops.count(...).matmul_total."""
    name, learner = "count_multiplies", "my_count_multiplies"
    if (bad := _not_callable(name, learner, fn)) is not None:
        return bad
    answers = {}
    for n, d, h in _COUNT_CASES:
        case = f"n={n}, d_model={d}, h={h}"
        c = count(n, d, h)
        result, problem = _run_case(name, learner, case, "提示：把四个矩阵乘法各自的乘法次数加起来。", fn, n, d, h)
        if problem is not None:
            return problem
        got = _as_array(result) if isinstance(result, (int, float, np.integer, np.floating)) else None
        if got is None or isinstance(result, bool) or not np.isfinite(got):
            return ExerciseResult(name, "wrong", f"{case}：应当返回一个整数，你返回的是 {_short(result)}。")
        value = float(got)
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


def _fmt(value: float) -> str:
    return f"{int(value):,}" if value == int(value) and abs(value) < 1e18 else f"{value:.6g}"


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

EXERCISES = {
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
}


def _exercise(name: str) -> _Exercise:
    if name not in EXERCISES:
        raise KeyError(f"没有名为 {name!r} 的练习；可用的有 {', '.join(EXERCISES)}。")
    return EXERCISES[name]


def check(name: str, fn) -> ExerciseResult:
    """Check the learner's function for exercise ``name``. Never raises for anything the function does."""
    exercise = _exercise(name)
    try:
        return exercise.checker(fn)
    except Exception as exc:  # a learner's result that defeats every guard above still gets an answer
        return ExerciseResult(name, "error", f"检查时遇到意外情况：{_describe(exc)}。请检查返回值的类型和形状。")


def spec(name: str) -> _Text:
    """The exercise's specification, in Chinese."""
    return _Text(_exercise(name).spec)


def show_solution(name: str) -> _Text:
    """The reference solution's source (read from lesson_lib by reflection, never a pasted copy)."""
    return _Text(inspect.getsource(_exercise(name).solution).rstrip(), "python")
