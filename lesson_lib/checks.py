"""Checks on what learners pass in, at the door: once per learner call, with a Chinese message.

Every check raises before any heavy work, with a Chinese message that names the argument, the value
and what is allowed. The error classes are ``ValueError`` subclasses (the ``…TypeError`` ones are
``TypeError`` too), so ``except ValueError`` catches every one of them.

**At the door, once.** A public lesson function wrapped by ``at_the_door`` is a door. The checks run
in the function the learner called; when that function calls another lesson function (a kernel
function calling ``split_heads``, the §5 lab calling the kernel), the callee's checks return at once:
its caller already checked what it passes on. The outermost door also runs the computation under
``np.errstate(over="raise")`` and turns numpy's ``FloatingPointError`` and a ``MemoryError`` into
the lesson's Chinese message, so overflow is found where it happens instead of predicted.

What the attention checks promise, for the readable kernel, the per-head reference and the
benchmarks' fast path alike (they all call the same check first, so they fail the same way):

- arrays: ``None``, strings, objects, ragged lists, complex numbers and masked entries are refused;
  ``np.matrix`` and masked arrays without masked entries are used as plain arrays; integers and
  booleans are computed in float64; float16/32/64 keep their type; several arrays are computed in
  their common type, so every variant returns the same dtype;
- values: NaN or ±inf in an input; finite inputs whose intermediates overflow the dtype are named
  with the stage and its size (worked out only after numpy reported the overflow);
- size: the attention weights (…, h, n, n) and the temporaries next to them must fit in the memory
  the operating system would give before killing the process (free RAM, a cgroup v1/v2 limit,
  ``ulimit -v``); what numpy can refuse itself (``MemoryError``) is translated.
"""

from __future__ import annotations

import functools
import math
import threading

import numpy as np

from lesson_lib.runtime.memory import available_memory

__all__ = [
    "LessonInputError",
    "LessonInputTypeError",
    "AttentionInputError",
    "AttentionInputTypeError",
    "at_the_door",
    "check_int",
    "check_number",
    "check_choice",
    "check_heads",
    "check_logits",
    "check_qkv",
    "check_mask",
    "check_mha",
    "check_split",
    "check_merge",
    "available_memory",  # re-exported from lesson_lib.runtime.memory: the guard reads it here
]


class LessonInputError(ValueError):
    """An argument a learner or instructor passed that the lesson cannot use; the message says what to change."""


class LessonInputTypeError(LessonInputError, TypeError):
    """An argument of the wrong type (also a ``TypeError``)."""


class AttentionInputError(LessonInputError):
    """Input that the attention functions cannot use; the message says what to change."""


class AttentionInputTypeError(AttentionInputError, LessonInputTypeError):
    """Attention input of the wrong type (None, text, objects; also a ``TypeError``)."""


# ---------------------------------------------------------------------------------------------
# The door: how deep in lesson functions this thread is, and what the outermost kernel check saw
# ---------------------------------------------------------------------------------------------

_door = threading.local()  # .depth: lesson doors entered; .seen: (kind, checked arrays) for the error path


def _nested() -> bool:
    """True inside a lesson function called by another one: its caller already checked the arguments."""
    return getattr(_door, "depth", 0) > 1


def at_the_door(fn):
    """Make ``fn`` a door: its checks run only when the learner calls it, not when lesson code does.

    The outermost door runs ``fn`` under ``np.errstate(over="raise")`` and translates numpy's
    ``FloatingPointError`` and ``MemoryError`` into ``AttentionInputError``s with the lesson's words.
    """

    @functools.wraps(fn)
    def door(*args, **kwargs):
        depth = getattr(_door, "depth", 0)
        _door.depth = depth + 1
        try:
            if depth:
                return fn(*args, **kwargs)
            _door.seen = None
            try:
                with np.errstate(over="raise", invalid="ignore"):  # NaN is found in the output, named below
                    result = fn(*args, **kwargs)
            except FloatingPointError:
                raise _overflow_error(_door.seen) from None
            except MemoryError:
                raise _memory_error(_door.seen) from None
            _check_output(result, _door.seen)
            return result
        finally:
            _door.depth = depth

    return door


def _seen(kind, arrays, names=()):
    """Remember what the outermost kernel check accepted, for the output check and the error messages."""
    if getattr(_door, "depth", 0):
        _door.seen = (kind, arrays, names)


def _check_output(result, seen):
    """NaN or ±inf in the inputs reaches every output they touch, so the small output (n, d) is scanned
    instead of the large inputs (the four d_model × d_model matrices); only when it is not finite are the
    inputs scanned, to name the one to fix."""
    if not seen or not seen[2]:
        return
    out = np.asarray(result[0])
    if math.isfinite(float(out.max())) and math.isfinite(float(out.min())):
        return
    _kind, arrays, names = seen
    for arr, name in zip(arrays, names):
        _check_finite(arr, name)
    raise _overflow_error(seen)


# ---------------------------------------------------------------------------------------------
# Plain arguments: integers, numbers, choices
# ---------------------------------------------------------------------------------------------


def _allowed(minimum, maximum, noun) -> str:
    """'≥ 1 的整数', '0 到 10 之间的数', … (with a leading space, after 「必须是」)."""
    if minimum is not None and maximum is not None:
        return f" {minimum} 到 {maximum} 之间的{noun}"
    if minimum is not None:
        return f" ≥ {minimum} 的{noun}"
    if maximum is not None:
        return f" ≤ {maximum} 的{noun}"
    return noun


def check_int(value, name: str, minimum=None, maximum=None, error=LessonInputError) -> int:
    """``value`` as an int in [minimum, maximum] (either bound may be None); bool and 2.0 are refused."""
    if _nested():
        return value
    allowed = _allowed(minimum, maximum, "整数")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _type_error_of(error)(f"{name} 必须是{allowed}，收到的是 {value!r}（类型 {type(value).__name__}）。")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise error(f"{name} 必须是{allowed}，收到的是 {value}。")
    return value


def check_number(value, name: str, minimum=None, maximum=None, error=LessonInputError) -> float:
    """``value`` as a finite float in [minimum, maximum]; bool, text and NaN are refused."""
    if _nested():
        return value
    allowed = _allowed(minimum, maximum, "数") if minimum is not None or maximum is not None else "有限的数"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _type_error_of(error)(f"{name} 必须是{allowed}，收到的是 {value!r}（类型 {type(value).__name__}）。")
    value = float(value)
    if not math.isfinite(value) or (minimum is not None and value < minimum) or (
            maximum is not None and value > maximum):
        raise error(f"{name} 必须是{allowed}，收到的是 {value}。")
    return value


def check_choice(value, name: str, choices, why: str = "", error=LessonInputError):
    """``value`` if it is one of ``choices``; when the choices are integers, only an integer matches.

    ``why`` (Chinese) says where the choices come from, e.g. 「（能整除 d_model = 512 的头数）」.
    """
    if _nested():
        return value
    choices = list(choices)
    wants_int = all(isinstance(c, int) for c in choices)
    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if (wants_int and not is_int) or value not in choices:
        raise error(f"{name} 只能取 {choices} 之一{why}，收到的是 {value!r}。")
    return int(value) if wants_int else value


def _type_error_of(error):
    return AttentionInputTypeError if issubclass(error, AttentionInputError) else LessonInputTypeError


def check_heads(d_model, h) -> int:
    """h as an int that divides d_model (both positive), with the divisors to choose from."""
    if _nested():
        return h
    d_model = check_int(d_model, "d_model", minimum=1, error=AttentionInputError)
    h = check_int(h, "头数 h", minimum=1, error=AttentionInputError)
    if d_model % h != 0:
        divisors = [c for c in range(1, min(d_model, 64) + 1) if d_model % c == 0]
        raise AttentionInputError(
            f"d_model={d_model} 不能平均分给 h={h} 个头（{d_model} / {h} 不是整数）。"
            f"请选一个能整除 {d_model} 的头数，例如 {divisors}。"
        )
    return h


# ---------------------------------------------------------------------------------------------
# Arrays: type, dtype, emptiness, finiteness
# ---------------------------------------------------------------------------------------------

_FLOATS = (np.float16, np.float32, np.float64)


def _as_array(a, name):
    """``a`` as a numeric ndarray (subclasses kept, dtype unchanged): no None, text, objects or hidden entries."""
    if a is None:
        raise AttentionInputTypeError(f"{name} 是 None：请传入数值数组，例如 np.array([[1.0, 2.0], [3.0, 4.0]])。")
    if isinstance(a, (str, bytes)):
        raise AttentionInputTypeError(f"{name} 是文字 {a!r}，不是数值数组：请传入 numpy 数组。")
    if isinstance(a, np.ma.MaskedArray):
        hidden = int(np.ma.count_masked(a))
        if hidden:
            raise AttentionInputError(
                f"{name} 是带遮罩的数组（numpy.ma），有 {hidden} 个位置被遮住：注意力不会跳过它们。"
                "请用 .filled(值) 填上；想让某些词不被关注，请用 mask= 参数。"
            )
        a = np.ma.getdata(a)
    if isinstance(a, np.matrix):
        a = np.asarray(a)  # np.matrix stays 2-D through every operation: use a plain array
    try:
        arr = np.asanyarray(a)
    except Exception:  # ragged lists and the like: numpy's own message is English
        raise AttentionInputError(
            f"{name} 无法转换成数组{_ragged(a)}：请传入形状整齐的 numpy 数组（每行一样长）。"
        ) from None
    if arr.dtype.kind not in "iubfc":
        raise AttentionInputTypeError(f"{name} 的元素类型是 {arr.dtype}，不是数值：请传入浮点数数组。")
    return arr


def _ragged(a) -> str:
    """「（各行的长度是 [4, 1]）」 for a list of rows of different lengths, else nothing."""
    if isinstance(a, (list, tuple)) and all(hasattr(row, "__len__") for row in a):
        return f"（各行的长度是 {[len(row) for row in a][:10]}）"
    return ""


def _not_complex(arr, name):
    if arr.dtype.kind == "c":
        raise AttentionInputError(f"{name} 是复数数组：注意力只定义在实数上，请传入实数数组。")
    return arr


def _as_real_array(a, name):
    """A real float16/32/64 array (subclasses kept) for ``a``; integers and booleans become float64."""
    arr = _not_complex(_as_array(a, name), name)
    if arr.dtype.kind in "iub":
        return arr.astype(np.float64)  # exact for integers up to 2**53, and no uint8 wraparound
    if arr.dtype not in _FLOATS:
        raise AttentionInputTypeError(
            f"{name} 的类型是 {arr.dtype}：本课的内核只算 float16、float32、float64，请用 .astype(np.float64)。"
        )
    return arr


def _array(a, name, min_ndim, what):
    """A real float array of at least ``min_ndim`` dimensions with at least one number (NaN: see _check_output)."""
    arr = _as_real_array(a, name)
    if arr.ndim == 0:
        raise AttentionInputError(f"{name} 是一个标量：请传入至少 {min_ndim} 维的数组（{what}）。")
    if arr.ndim < min_ndim:
        raise AttentionInputError(f"{name} 需要至少 {min_ndim} 维 {what}，收到的形状是 {arr.shape}。")
    return _not_empty(arr, name)


def _not_empty(arr, name):
    if arr.size == 0:
        raise AttentionInputError(f"{name} 的形状是 {arr.shape}：里面没有数。至少要有 1 个词、每个词至少 1 维。")
    return arr


def _common_dtype(arrays):
    """Cast every array to their common float type (subclasses kept), so all variants agree on the dtype."""
    dtype = np.result_type(*arrays)
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrays]


def _check_finite(arr, name):
    """Raise the NaN/inf error; two fast reductions (max and min cannot overflow), no temporary array."""
    if arr.dtype.kind != "f":
        return
    plain = np.asarray(arr)
    if not (math.isfinite(float(plain.max())) and math.isfinite(float(plain.min()))):
        bad = int(plain.size - np.count_nonzero(np.isfinite(plain)))
        raise AttentionInputError(
            f"{name} 里有 {bad} 个 NaN 或 inf：注意力会把它们传播到每个输出。请先检查上一步的计算。"
        )


def check_split(x, h):
    """split_heads' input: a real, finite, non-empty array of at least (n, d_model) and an h dividing d_model.

    The dtype is kept (cutting into heads is a reshape: an integer array stays integer).
    """
    if _nested():
        return x, h
    x = _not_complex(_as_array(x, "x"), "x")
    if x.ndim < 2:
        raise AttentionInputError(f"split_heads 需要形如 (..., n, d_model) 的至少 2 维数组，收到的形状是 {x.shape}。")
    _check_finite(_not_empty(x, "x"), "x")
    return x, check_heads(x.shape[-1], h)


def check_merge(x):
    """merge_heads' input: a real, finite, non-empty array of at least (h, n, d_k) (dtype kept)."""
    if _nested():
        return x
    x = _not_complex(_as_array(x, "x"), "x")
    if x.ndim < 3:
        raise AttentionInputError(
            f"merge_heads 需要形如 (..., h, n, d_k) 的至少 3 维数组，收到的是 {x.ndim} 维 {x.shape}。"
        )
    _check_finite(_not_empty(x, "x"), "x")
    return x


# ---------------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------------


def check_logits(x, axis):
    """softmax's input: a non-empty real array, an axis it has, no NaN or +inf, no row that is all −inf.

    −inf entries are allowed (a masked key gets weight 0) as long as every row keeps a finite one.
    """
    if _nested():
        return x, axis
    x = _as_real_array(x, "x")
    if x.ndim == 0:
        raise AttentionInputError(f"softmax 需要至少 1 维的数组（一行打分），收到的是标量 {x!r}。")
    axis = check_int(axis, "axis", minimum=-x.ndim, maximum=x.ndim - 1, error=AttentionInputError)
    if x.size == 0:
        raise AttentionInputError(f"softmax 收到的数组形状是 {x.shape}，里面没有数：至少要有一行、每行至少一个数。")
    plain = np.asarray(x)
    if not (math.isfinite(float(plain.max())) and math.isfinite(float(plain.min()))):  # NaN, ±inf: look closer
        _check_logit_values(plain, axis)
    _seen("softmax", (x, axis))
    return x, axis


def _check_logit_values(x, axis):
    nan = int(np.count_nonzero(np.isnan(x)))
    if nan:
        raise AttentionInputError(f"softmax 的输入里有 {nan} 个 NaN：结果会整行变成 NaN。请先检查上一步的计算。")
    pos = int(np.count_nonzero(np.isposinf(x)))
    if pos:
        raise AttentionInputError(
            f"softmax 的输入里有 {pos} 个 +inf：inf − inf 没有定义，结果会是 NaN。请先检查上一步的计算。"
        )
    empty = np.isneginf(x).all(axis=axis)
    if empty.any():
        where = tuple(int(i) for i in np.argwhere(np.atleast_1d(empty))[0])
        raise AttentionInputError(
            f"softmax 的输入在位置 {where} 的一行全是 −inf：这一行没有可以分配的权重（0/0 = NaN）。"
            "每行至少要有一个有限的数。"
        )


# ---------------------------------------------------------------------------------------------
# Attention: Q, K, V / X and the four weights, masks, sizes
# ---------------------------------------------------------------------------------------------


def check_qkv(q, k, v, mask=None):
    """scaled_dot_product_attention's input: shapes that fit, one float dtype, no NaN/inf, room in memory.

    Returns ``(q, k, v, mask)`` with the mask broadcast to the scores' shape (or None).
    """
    if _nested():
        return q, k, v, mask
    q, k, v = (_array(a, name, 2, "(n, d)") for a, name in ((q, "Q"), (k, "K"), (v, "V")))
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise AttentionInputError(
            f"Q、K、V 前面的批量维度 {q.shape[:-2]}、{k.shape[:-2]}、{v.shape[:-2]} 对不上："
            "它们要么相同，要么是 1（可以广播）。"
        ) from None
    if q.shape[-1] != k.shape[-1]:
        raise AttentionInputError(
            f"Q 的最后一维 d_k={q.shape[-1]} 与 K 的最后一维 {k.shape[-1]} 不同：Q Kᵀ 要求两者相同。"
        )
    if k.shape[-2] != v.shape[-2]:
        raise AttentionInputError(
            f"K 有 {k.shape[-2]} 个位置而 V 有 {v.shape[-2]} 个：每个键必须对应一个值，请让两者的 n 相同。"
        )
    q, k, v = _common_dtype([q, k, v])
    scores_shape = (*lead, q.shape[-2], k.shape[-2])
    _check_memory(scores_shape, q.dtype, v.shape[-1])
    mask = None if mask is None else check_mask(mask, scores_shape)
    _seen("qkv", (q, k, v), ("Q", "K", "V"))
    return q, k, v, mask


def check_mask(mask, scores_shape):
    """A boolean mask that broadcasts to the scores and leaves every query at least one key."""
    mask = _as_array(mask, "mask")
    if mask.dtype != bool:
        raise AttentionInputError(
            f"mask 应是布尔数组（True = 可以关注），收到的类型是 {mask.dtype}："
            "请用 mask.astype(bool) 或比较运算得到它。"
        )
    try:
        full = np.broadcast_to(mask, scores_shape)
    except ValueError:
        raise AttentionInputError(
            f"mask 的形状 {mask.shape} 无法广播到注意力分数的形状 {tuple(scores_shape)}：最后两维应是 (n_q, n_k)。"
        ) from None
    empty_rows = ~full.any(axis=-1)
    if empty_rows.any():
        where = tuple(int(i) for i in np.argwhere(empty_rows)[0])
        raise AttentionInputError(
            f"mask 在位置 {where} 的这一行不允许关注任何键：softmax 会得到 0/0 = NaN。"
            "每个查询至少要能看到一个位置（例如它自己）。"
        )
    return full


def check_mha(x, w_q, w_k, w_v, w_o, h, mask=None):
    """Every multi-head variant's input, checked the same way before any work.

    Returns ``(x, w_q, w_k, w_v, w_o, h, mask)``: arrays in one float dtype, h an int, the mask
    broadcast to the weights' shape (…, h, n, n) or None.
    """
    if _nested():
        return x, w_q, w_k, w_v, w_o, h, mask
    x = _array(x, "X", 2, "(n, d_model)")
    d_model = x.shape[-1]
    h = check_heads(d_model, h)
    weights = []
    for w, name in ((w_q, "W_Q"), (w_k, "W_K"), (w_v, "W_V"), (w_o, "W_O")):
        w = _as_real_array(w, name)
        if w.ndim == 0:
            raise AttentionInputError(f"{name} 是一个标量：请传入 (d_model, d_model) = ({d_model}, {d_model}) 的矩阵。")
        if w.shape != (d_model, d_model):
            raise AttentionInputError(
                f"{name} 的形状是 {w.shape}，应为 (d_model, d_model) = ({d_model}, {d_model})："
                f"它把 {h} 个头各自的投影矩阵并排放在一起。"
            )
        weights.append(w)
    x, *weights = _common_dtype([x, *weights])
    *lead, n, _ = x.shape
    scores_shape = (*lead, h, n, n)
    _check_memory(scores_shape, x.dtype, d_model // h)
    mask = None if mask is None else check_mask(mask, scores_shape)
    _seen("mha", (x, *weights, h), ("X", "W_Q", "W_K", "W_V", "W_O"))
    return (x, *weights, h, mask)


# ---------------------------------------------------------------------------------------------
# Overflow, after numpy reported it: which stage, and how large
#
# For a product A B, every partial sum of every entry is at most Σ_k |A_ik| |B_kj|; that bound is
# computed in float64 on inputs scaled by powers of two (so it cannot overflow itself) to name the
# stage and its size. This runs only on the error path. All sizes are log2.
# ---------------------------------------------------------------------------------------------

_STAGES = {
    "proj": "投影 X W^Q、X W^K、X W^V",
    "scores": "打分 Q Kᵀ",
    "out": "输出投影 Concat(head_i) W^O",
}


def _log2(value) -> float:
    return math.log2(value) if value > 0 else -math.inf


def _scaled(a):
    """(a / 2**e in float64, e) with max|a / 2**e| in [0.5, 1): exact, and safe to multiply."""
    plain = np.asarray(a, dtype=np.float64)
    top = float(np.abs(plain).max())
    e = math.frexp(top)[1] if top > 0 else 0
    return np.ldexp(plain, -e), e


def _log2_max_product(a, b) -> float:
    """log2 of max Σ_k |a_ik| |b_kj| for float64 arrays that cannot overflow."""
    return _log2(float((np.abs(a) @ np.abs(b)).max()))


def _mha_sizes(x, w_q, w_k, w_v, w_o, h):
    xs, ex = _scaled(x)
    (wq, eq), (wk, ek), (wv, ev), (wo, eo) = (_scaled(w) for w in (w_q, w_k, w_v, w_o))
    d_k = x.shape[-1] // h
    q, k, v = xs @ wq, xs @ wk, xs @ wv  # (..., n, d_model) in units of 2**(ex + e_w)
    proj = max(_log2_max_product(xs, w) + ex + e for w, e in ((wq, eq), (wk, ek), (wv, ev)))

    def heads(a):  # (..., n, d_model) -> (..., h, n, d_k)
        return np.swapaxes(a.reshape(*a.shape[:-1], h, d_k), -2, -3)

    scores = _log2_max_product(heads(q), np.swapaxes(heads(k), -1, -2)) + 2 * ex + eq + ek
    v_top = np.abs(v).reshape(-1, v.shape[-1]).max(axis=0)  # every head output is a weighted mean of V's rows
    out = _log2_max_product(v_top[None], wo) + ex + ev + eo
    return {"proj": proj, "scores": scores, "out": out}, (x, w_q, w_k, w_v, w_o), ("X", "W_Q", "W_K", "W_V", "W_O")


def _qkv_sizes(q, k, _v):
    (qs, eq), (ks, ek) = _scaled(q), _scaled(k)
    return {"scores": _log2_max_product(qs, np.swapaxes(ks, -1, -2)) + eq + ek}, (q, k), ("Q", "K")


def _overflow_error(seen) -> AttentionInputError:
    """The Chinese message for an overflow numpy reported, naming the stage and its size where it can."""
    kind, arrays, _names = seen if seen else ("", (), ())
    floats = [a for a in arrays if isinstance(a, np.ndarray)]
    dtype = np.result_type(*floats) if floats else np.dtype(np.float64)
    name, limit = np.dtype(dtype).name, float(np.finfo(dtype).max)
    advice = "请把输入缩小（例如除以它的最大绝对值，或先做层归一化）"
    if dtype != np.float64:
        advice += "，或改用更宽的类型 .astype(np.float64)"
    if kind == "softmax":
        return _softmax_overflow(*arrays, name, limit)
    sizes, inputs, names = {"mha": _mha_sizes, "qkv": _qkv_sizes}.get(kind, lambda *a: ({}, (), ()))(*arrays)
    tops = "，".join(f"{n} 约 {_power(_log2(float(np.abs(np.asarray(a, dtype=np.float64)).max())))}"
                    for n, a in zip(names, inputs))
    for stage, size in sizes.items():
        if size >= math.log2(limit):
            return AttentionInputError(
                f"输入都是有限的数，但按 {name} 计算时，{_STAGES[stage]} 的中间结果会大到约 "
                f"{_power(size)}，超过 {name} 能表示的最大值 {limit:.3g}："
                f"结果会变成 inf 和 NaN。各输入的最大绝对值：{tops}。{advice}。"
            )
    return AttentionInputError(
        f"输入都是有限的数，但按 {name} 计算时，中间结果超过了 {name} 能表示的最大值 {limit:.3g}："
        f"结果会变成 inf 和 NaN。{('各输入的最大绝对值：' + tops + '。') if tops else ''}{advice}。"
    )


def _softmax_overflow(x, axis, name, limit) -> AttentionInputError:
    n = x.shape[axis]
    if n > limit:  # every exp is at most 1, so only a row longer than the dtype's largest value can overflow its sum
        return AttentionInputError(
            f"softmax 按 {name} 计算时，一行有 {n:,} 个数，它们的 exp 之和超过了 {name} 能表示的最大值 {limit:.3g}："
            "每行的权重会变成 0，加起来不再是 1。请先 .astype(np.float32) 再算 softmax。"
        )
    return AttentionInputError(
        f"softmax 的输入里，同一行最大和最小的数相差超过 {name} 能表示的最大值 {limit:.3g}："
        "减去最大值这一步就会溢出。请把输入缩小（例如除以它的最大绝对值）后再算。"
    )


def _power(log2_value: float) -> str:
    """2**log2_value written as 1.2e+309, even beyond float64's range."""
    if log2_value == -math.inf:
        return "0"
    exponent10 = log2_value * math.log10(2)
    whole = math.floor(exponent10)
    return f"{10 ** (exponent10 - whole):.1f}e{whole:+d}"


# ---------------------------------------------------------------------------------------------
# Memory: a guard for what the operating system would kill instead of refusing, and MemoryError
# ---------------------------------------------------------------------------------------------

_TEMPORARIES = 4  # the scores, the shifted scores, their exps and the weights live at the same time
_ALWAYS_FITS = 256 << 20  # below this, do not read /proc and the cgroup on every call (the §7 sweep calls often)


def _need(scores_shape, dtype, d_v):
    """(bytes of the weights, bytes of the weights with the temporaries and the heads' outputs)."""
    itemsize = np.dtype(dtype).itemsize
    weights_bytes = math.prod(scores_shape) * itemsize
    return weights_bytes, _TEMPORARIES * weights_bytes + math.prod(scores_shape[:-1]) * d_v * itemsize


def _check_memory(scores_shape, dtype, d_v):
    """Refuse sizes whose attention weights (and the temporaries beside them) do not fit in free memory."""
    _, need = _need(scores_shape, dtype, d_v)
    if need <= _ALWAYS_FITS:
        return
    free = available_memory()
    if free is not None and need > free:
        raise _too_large(scores_shape, dtype, d_v, free)


def _too_large(scores_shape, dtype, d_v, free) -> AttentionInputError:
    weights_bytes, need = _need(scores_shape, dtype, d_v)
    room = f"而这台机器现在可用的内存约 {_bytes(free)}" if free is not None else "而这台机器分配不出这么多内存"
    return AttentionInputError(
        f"这次注意力要算形状为 {tuple(scores_shape)} 的权重（每行 n = {scores_shape[-1]:,} 个数）："
        f"权重本身就要 {_bytes(weights_bytes)}，计算时连同中间结果约需 {_bytes(need)}，"
        f"{room}。请减少词数 n（或批量大小）后再试。"
    )


def _memory_error(seen) -> AttentionInputError:
    """numpy could not allocate: the same message as the guard, with the sizes of the call that failed."""
    kind, arrays, _names = seen if seen else ("", (), ())
    if kind == "mha":
        x, h = arrays[0], arrays[-1]
        *lead, n, d_model = x.shape
        return _too_large((*lead, h, n, n), x.dtype, d_model // h, available_memory())
    if kind == "qkv":
        q, k, v = arrays
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        return _too_large((*lead, q.shape[-2], k.shape[-2]), q.dtype, v.shape[-1], available_memory())
    return AttentionInputError("这次计算需要的内存超过了这台机器能分配的：请减少词数 n（或批量大小）后再试。")


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")
