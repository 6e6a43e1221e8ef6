"""Checks on what a learner passes in, with a Chinese message that names the argument and says what
to do. Overflow and ``MemoryError`` are not predicted (``translated`` says numpy's report in
Chinese); the one size guard is for what the OS kills instead of refusing (runtime.memory)."""

import functools
import math

import numpy as np

from lesson_lib.runtime.memory import free_memory


class LessonInputError(ValueError):
    """An argument the lesson cannot use; the message says what to change."""


class LessonInputTypeError(LessonInputError, TypeError):
    """An argument of the wrong type."""


class AttentionInputError(LessonInputError):
    """Input the attention functions cannot use."""


class AttentionInputTypeError(AttentionInputError, LessonInputTypeError):
    """Attention input of the wrong type (None, text, objects)."""


def _check_scalar(value, name, minimum, maximum, error, kinds, noun, cast):
    """``cast(value)`` in [minimum, maximum] (every caller with a maximum gives a minimum); bool is
    refused, and so is any type outside ``kinds``."""
    allowed = "有限的数" if noun == "数" else noun
    if minimum is not None:
        allowed = f" ≥ {minimum} 的{noun}"
    if maximum is not None:
        allowed = f" {minimum} 到 {maximum} 之间的{noun}"
    if isinstance(value, bool) or not isinstance(value, kinds):
        wrong = AttentionInputTypeError if error is AttentionInputError else LessonInputTypeError
        raise wrong(f"{name} 必须是{allowed}，收到的是 {value!r}（类型 {type(value).__name__}）。")
    value = cast(value)
    outside = (minimum is not None and value < minimum) or (maximum is not None and value > maximum)
    if outside or (cast is float and not math.isfinite(value)):
        raise error(f"{name} 必须是{allowed}，收到的是 {value}。")
    return value


def check_int(value, name: str, minimum=None, maximum=None, error=LessonInputError) -> int:
    """``value`` as an int in [minimum, maximum] (None: no bound); bool and 2.0 are refused."""
    return _check_scalar(value, name, minimum, maximum, error, (int, np.integer), "整数", int)


def check_number(value, name: str, minimum=None, maximum=None) -> float:
    """``value`` as a finite float in [minimum, maximum]; bool, text and NaN are refused."""
    kinds = (int, float, np.integer, np.floating)
    return _check_scalar(value, name, minimum, maximum, LessonInputError, kinds, "数", float)


def check_choice(value, name: str, choices, why: str = ""):
    """``value`` if it is one of ``choices`` (integers match only integers); ``why`` says why."""
    choices = list(choices)
    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    wants_int = all(isinstance(c, int) for c in choices)
    if (wants_int and not is_int) or value not in choices:
        raise LessonInputError(f"{name} 只能取 {choices} 之一{why}，收到的是 {value!r}。")
    return int(value) if wants_int else value


def check_heads(d_model, h) -> int:
    """h as an int that divides d_model (both positive), with the divisors to choose from."""
    d_model = check_int(d_model, "d_model", minimum=1, error=AttentionInputError)
    divisors = [c for c in range(1, min(d_model, 64) + 1) if d_model % c == 0]
    choose = f"请选一个能整除 {d_model} 的头数，例如 {divisors}。"
    try:
        h = check_int(h, "头数 h", minimum=1, error=AttentionInputError)
    except AttentionInputError as exc:  # h = 0 or 8.0: the same choice to make
        raise type(exc)(f"{exc}{choose}") from None
    if d_model % h != 0:
        raise AttentionInputError(f"d_model={d_model} 不能平均分给 h={h} 个头（{d_model} / {h} "
                                  f"不是整数）。{choose}")
    return h


def _as_array(a, name):
    """``a`` as a non-empty real ndarray, dtype kept: no None, text, objects, ragged rows, masks."""
    if a is None:
        raise AttentionInputTypeError(f"{name} 是 None：请传入数值数组，例如 np.array([[1.0, 2.0], "
                                      "[3.0, 4.0]])。")
    if isinstance(a, (str, bytes)):
        raise AttentionInputTypeError(f"{name} 是文字 {a!r}，不是数值数组：请传入 numpy 数组。")
    if isinstance(a, np.ma.MaskedArray):
        if hidden := int(np.ma.count_masked(a)):
            raise AttentionInputError(f"{name} 是带遮罩的数组（numpy.ma），有 {hidden} 个位置被遮"
                                      "住：注意力不会跳过它们。请用 .filled(值) 填上；"
                                      "想让某些词不被关注，请用 mask= 参数。")
        a = np.ma.getdata(a)
    # np.matrix stays 2-D through everything: a plain array; other subclasses kept (tests count)
    try:
        arr = np.asarray(a) if isinstance(a, np.matrix) else np.asanyarray(a)
    except Exception:  # ragged lists and the like: numpy's own message is English
        rows = isinstance(a, (list, tuple)) and all(hasattr(r, "__len__") for r in a)
        lengths = f"（各行的长度是 {[len(r) for r in a][:10]}）" if rows else ""
        raise AttentionInputError(f"{name} 无法转换成数组{lengths}："
                                  "请传入形状整齐的 numpy 数组（每行一样长）。") from None
    if arr.dtype.kind not in "iubfc":
        raise AttentionInputTypeError(f"{name} 的元素类型是 {arr.dtype}，不是数值："
                                      "请传入浮点数数组。")
    if arr.dtype.kind == "c":
        raise AttentionInputError(f"{name} 是复数数组：注意力只定义在实数上，请传入实数数组。")
    if arr.size == 0:
        raise AttentionInputError(f"{name} 的形状是 {arr.shape}：里面没有数。至少要有 1 个词元、"
                                  "每个词元至少 1 维。")
    return arr


def _as_float_array(a, name, min_ndim, what, finite=True):
    """A non-empty float16/32/64 array, ≥ ``min_ndim`` dims, finite if ``finite``; ints: float64."""
    arr = _as_array(a, name)
    if arr.dtype.kind in "iub":
        arr = arr.astype(np.float64)  # exact for integers up to 2**53, and no uint8 wraparound
    elif arr.dtype not in (np.float16, np.float32, np.float64):
        raise AttentionInputTypeError(
            f"{name} 的类型是 {arr.dtype}：本课的内核只算 float16、float32、float64，请用 "
            ".astype(np.float64)。")
    if arr.ndim < min_ndim:
        got = f"标量 {arr.item()!r}" if arr.ndim == 0 else f"形状 {arr.shape}"
        raise AttentionInputError(f"{name} 需要至少 {min_ndim} 维的数组 {what}，收到的是{got}。")
    return _finite(arr, name) if finite else arr


def _finite(arr, name):
    """``arr`` if it has no NaN or ±inf: max and min (they cannot overflow), no temporary array."""
    if not (math.isfinite(float(arr.max())) and math.isfinite(float(arr.min()))):
        bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise AttentionInputError(f"{name} 里有 {bad} 个 NaN 或 inf：注意力会把它们传播到每个输出。"
                                  "请先检查上一步的计算。")
    return arr


def _common_dtype(arrays):
    """Every array in their common float type, so all kernel variants agree on the dtype."""
    return [a.astype(np.result_type(*arrays), copy=False) for a in arrays]


def _heads_array(x, fn, min_ndim, shape):  # dtype kept: integers stay integers
    x = _finite(_as_array(x, "x"), "x")
    if x.ndim < min_ndim:
        raise AttentionInputError(f"{fn} 需要形如 {shape} 的至少 {min_ndim} 维数组，收到的形状是 "
                                  f"{x.shape}。")
    return x


def check_split(x, h):
    x = _heads_array(x, "split_heads", 2, "(..., n, d_model)")
    return x, check_heads(x.shape[-1], h)


def check_merge(x):
    return _heads_array(x, "merge_heads", 3, "(..., h, n, d_k)")


def check_logits(x, axis):
    """softmax's input: a non-empty float array, an axis it has, no NaN, +inf or all −inf row."""
    x = _as_float_array(x, "x", 1, "（一行打分）", finite=False)
    axis = check_int(axis, "axis", minimum=-x.ndim, maximum=x.ndim - 1, error=AttentionInputError)
    if math.isfinite(float(x.max())) and math.isfinite(float(x.min())):
        return x, axis
    for count, what in ((np.count_nonzero(np.isnan(x)), "NaN"),
                        (np.count_nonzero(np.isposinf(x)), "+inf")):
        if count:
            raise AttentionInputError(f"softmax 的输入里有 {count} 个 {what}：结果会是 NaN。"
                                      "请先检查上一步的计算。")
    empty = np.isneginf(x).all(axis=axis)
    if empty.any():
        where = tuple(int(i) for i in np.argwhere(np.atleast_1d(empty))[0])
        raise AttentionInputError(f"softmax 的输入在位置 {where} 的一行全是 −inf：这一行没有可以"
                                  "分配的权重（0/0 = NaN）。每行至少要有一个有限的数。")
    return x, axis


def check_mask(mask, scores_shape):
    """A boolean mask broadcast to the scores' shape, leaving every query at least one key."""
    mask = _as_array(mask, "mask")
    if mask.dtype != bool:
        raise AttentionInputError("mask 应是布尔数组（True = 可以关注），收到的类型是 "
                                  f"{mask.dtype}：请用 mask.astype(bool) 或比较运算得到它。")
    try:
        full = np.broadcast_to(mask, scores_shape)
    except ValueError:
        raise AttentionInputError(f"mask 的形状 {mask.shape} 无法广播到注意力分数的形"
                                  f"状 {tuple(scores_shape)}：最后两维应是 (n_q, n_k)。") from None
    empty_rows = ~full.any(axis=-1)
    if empty_rows.any():
        where = tuple(int(i) for i in np.argwhere(empty_rows)[0])
        raise AttentionInputError(f"mask 在位置 {where} 的这一行不允许关注任何键：softmax 会得到 "
                                  "0/0 = NaN。每个查询至少要能看到一个位置（例如它自己）。")
    return full


def check_qkv(q, k, v, mask=None):
    """Q, K, V that fit, in one float dtype, finite, with room in memory; the mask broadcast."""
    q, k, v = (_as_float_array(a, name, 2, "(n, d)") for a, name in ((q, "Q"), (k, "K"), (v, "V")))
    try:
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise AttentionInputError(f"Q、K、V 前面的批量维度 {q.shape[:-2]}、{k.shape[:-2]}、"
                                  f"{v.shape[:-2]} 对不上："
                                  "它们要么相同，要么是 1（可以广播）。") from None
    if q.shape[-1] != k.shape[-1]:
        raise AttentionInputError(f"Q 的最后一维 d_k={q.shape[-1]} 与 K 的最后一维 {k.shape[-1]} "
                                  "不同：Q Kᵀ 要求两者相同。")
    if k.shape[-2] != v.shape[-2]:
        raise AttentionInputError(f"K 有 {k.shape[-2]} 个位置而 V 有 {v.shape[-2]} 个："
                                  "每个键必须对应一个值，请让两者的 n 相同。")
    q, k, v = _common_dtype([q, k, v])
    scores_shape = (*lead, q.shape[-2], k.shape[-2])
    _check_memory(scores_shape, q.dtype, v.shape[-1])
    return q, k, v, None if mask is None else check_mask(mask, scores_shape)


def check_mha(x, w_q, w_k, w_v, w_o, h, mask=None):
    """Every multi-head variant's input: one float dtype, h an int, the mask (…, h, n, n)."""
    x = _as_float_array(x, "X", 2, "(n, d_model)")
    d = x.shape[-1]
    weights = []
    h = check_heads(d, h)
    for w, name in ((w_q, "W_Q"), (w_k, "W_K"), (w_v, "W_V"), (w_o, "W_O")):
        w = _as_float_array(w, name, 0, "", finite=False)
        if w.shape != (d, d):
            raise AttentionInputError(f"{name} 的形状是 {w.shape}，应为 (d_model, d_model) = "
                                      f"({d}, {d})：它把 {h} 个头各自的投影矩阵并排放在一起。")
        weights.append(_finite(w, name))
    x, *weights = _common_dtype([x, *weights])
    scores_shape = (*x.shape[:-2], h, x.shape[-2], x.shape[-2])
    _check_memory(scores_shape, x.dtype, d // h)
    return (x, *weights, h, None if mask is None else check_mask(mask, scores_shape))


_ALWAYS_FITS = 256 << 20  # below this, do not ask the OS on every call (the §7 sweep calls often)


def _check_memory(scores_shape, dtype, d_v):
    """Refuse sizes whose weights and the 3 temporaries beside them (shifted, exps) do not fit."""
    itemsize = np.dtype(dtype).itemsize
    weights = math.prod(scores_shape) * itemsize
    need = 4 * weights + math.prod(scores_shape[:-1]) * d_v * itemsize
    free = None if need <= _ALWAYS_FITS else free_memory()
    if free is not None and need > free:
        raise AttentionInputError(
            f"这次注意力要算形状为 {tuple(scores_shape)} 的权重（每行 n = {scores_shape[-1]:,} "
            f"个数）：权重本身就要 {_bytes(weights)}，连同中间结果约需 {_bytes(need)}，"
            f"而这台机器现在可用的内存约 {_bytes(free)}。请减少词数 n（或批量大小）后再试。")


def _bytes(n: float) -> str:  # 1536 -> "1.5 KB"
    power = min(4, int(math.log(max(n, 1), 1024)))
    return f"{n / 1024 ** power:.1f} {('B', 'KB', 'MB', 'GB', 'TB')[power]}"


def _overflow_error(dtype) -> AttentionInputError:
    name = dtype.name
    limit = float(np.finfo(dtype).max)
    wider = "" if dtype == np.float64 else "，或先改用更宽的类型 .astype(np.float64)"
    return AttentionInputError(f"输入都是有限的数，但按 {name} 计算时，中间结果超过了 {name} "
                               f"能表示的最大值 {limit:.3g}，结果会变成 inf 和 NaN。请把输入缩小"
                               f"（例如除以它的最大绝对值，或先做层归一化）{wider}。")


def translated(fn):
    """``fn`` with numpy's overflow and ``MemoryError`` said in Chinese; its inputs are finite, so
    NaN or inf in its output is an overflow numpy did not see (in a BLAS thread): reported too."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            with np.errstate(over="raise", invalid="ignore"):
                result = fn(*args, **kwargs)
        except FloatingPointError:
            floats = [a.dtype for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
            raise _overflow_error(np.result_type(*floats)
                                  if floats else np.dtype(np.float64)) from None
        except MemoryError:
            shape = next((a.shape for a in args if isinstance(a, np.ndarray)), "?")
            raise AttentionInputError("这次计算需要的内存超过了这台机器能分配的（输入形状 "
                                      f"{shape}）：请减少词数 n（或批量大小）后再试。") from None
        out = result[0] if isinstance(result, tuple) else result
        if isinstance(out, np.ndarray) and out.dtype.kind == "f" and not np.isfinite(out).all():
            raise _overflow_error(out.dtype)
        return result

    return run
