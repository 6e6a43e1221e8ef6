"""Checks on what learners pass in, shared by every attention variant, ``softmax`` and the builders.

Every check raises before any heavy work, with a Chinese message that names the argument, the
value and what is allowed. The error classes are ``ValueError`` subclasses (the ``…TypeError`` ones
are ``TypeError`` too), so ``except ValueError`` catches every one of them.

What the attention checks promise, for the readable kernel, the per-head reference and the fast
path alike (they all call the same function first, so they fail the same way):

- arrays: ``None``, strings, objects, ragged lists, complex numbers and masked entries are refused;
  ``np.matrix`` and masked arrays without masked entries are used as plain arrays; integers and
  booleans are computed in float64; float16/32/64 keep their type; several arrays are computed in
  their common type, so every variant returns the same dtype;
- values: NaN or ±inf in an input, and finite inputs so large that an intermediate (a projection,
  the scores Q Kᵀ, the output projection) would overflow the dtype — found from the inputs' sizes
  before anything is computed, so the learner sees the magnitude instead of a silent NaN;
- size: the attention weights (…, h, n, n) and the temporaries next to them must fit in the memory
  this machine has free.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np

__all__ = [
    "LessonInputError",
    "LessonInputTypeError",
    "AttentionInputError",
    "AttentionInputTypeError",
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
    "available_memory",
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
    allowed = _allowed(minimum, maximum, "整数")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _type_error_of(error)(f"{name} 必须是{allowed}，收到的是 {value!r}（类型 {type(value).__name__}）。")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise error(f"{name} 必须是{allowed}，收到的是 {value}。")
    return value


def check_number(value, name: str, minimum=None, maximum=None, error=LessonInputError) -> float:
    """``value`` as a finite float in [minimum, maximum]; bool, text and NaN are refused."""
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
    except Exception as exc:  # ragged lists and the like
        raise AttentionInputError(f"{name} 无法转换成数值数组（{exc}）：请传入形状整齐的 numpy 数组。") from None
    if arr.dtype.kind not in "iubfc":
        raise AttentionInputTypeError(f"{name} 的元素类型是 {arr.dtype}，不是数值：请传入浮点数数组。")
    return arr


def _as_real_array(a, name):
    """A real float16/32/64 array (subclasses kept) for ``a``; integers and booleans become float64."""
    arr = _as_array(a, name)
    kind = arr.dtype.kind
    if kind in "iub":
        return arr.astype(np.float64)  # exact for integers up to 2**53, and no uint8 wraparound
    if kind == "c":
        raise AttentionInputError(f"{name} 是复数数组：注意力只定义在实数上，请传入实数数组。")
    if arr.dtype not in _FLOATS:
        raise AttentionInputTypeError(
            f"{name} 的类型是 {arr.dtype}：本课的内核只算 float16、float32、float64，请用 .astype(np.float64)。"
        )
    return arr


def _array(a, name, min_ndim, what):
    arr = _as_real_array(a, name)
    if arr.ndim == 0:
        raise AttentionInputError(f"{name} 是一个标量：请传入至少 {min_ndim} 维的数组（{what}）。")
    if arr.ndim < min_ndim:
        raise AttentionInputError(f"{name} 需要至少 {min_ndim} 维 {what}，收到的形状是 {arr.shape}。")
    return arr


def _common_dtype(arrays):
    """Cast every array to their common float type (subclasses kept), so all variants agree on the dtype."""
    dtype = np.result_type(*arrays)
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrays]


def _max_abs(arr, name) -> float:
    """max |arr| as a float, raising the NaN/inf error; two fast full reductions, no temporary array."""
    plain = np.asarray(arr)
    top, bottom = float(plain.max()), float(plain.min())
    if not (math.isfinite(top) and math.isfinite(bottom)):
        bad = int(plain.size - np.count_nonzero(np.isfinite(plain)))
        raise AttentionInputError(
            f"{name} 里有 {bad} 个 NaN 或 inf：注意力会把它们传播到每个输出。请先检查上一步的计算。"
        )
    return max(top, -bottom)


def check_split(x, h):
    """split_heads' input: an array of at least (n, d_model) and an h that divides d_model (dtype kept)."""
    x = _as_array(x, "x")
    if x.ndim < 2:
        raise AttentionInputError(f"split_heads 需要形如 (..., n, d_model) 的至少 2 维数组，收到的形状是 {x.shape}。")
    return x, check_heads(x.shape[-1], h)


def check_merge(x):
    """merge_heads' input: an array of at least (h, n, d_k) (dtype kept)."""
    x = _as_array(x, "x")
    if x.ndim < 3:
        raise AttentionInputError(
            f"merge_heads 需要形如 (..., h, n, d_k) 的至少 3 维数组，收到的是 {x.ndim} 维 {x.shape}。"
        )
    return x


# ---------------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------------


def check_logits(x, axis):
    """softmax's input: a non-empty real array, an axis it has, no NaN or +inf, no row that is all −inf.

    −inf entries are allowed (a masked key gets weight 0) as long as every row keeps a finite one.
    """
    x = _as_real_array(x, "x")
    if x.ndim == 0:
        raise AttentionInputError(f"softmax 需要至少 1 维的数组（一行打分），收到的是标量 {x!r}。")
    axis = check_int(axis, "axis", minimum=-x.ndim, maximum=x.ndim - 1, error=AttentionInputError)
    if x.size == 0:
        raise AttentionInputError(f"softmax 收到的数组形状是 {x.shape}，里面没有数：至少要有一行、每行至少一个数。")
    plain = np.asarray(x)
    total = plain.sum(dtype=np.float64 if plain.dtype == np.float16 else None)  # one fast pass over everything
    if not math.isfinite(float(total)):  # some entry is NaN or ±inf (or the sum overflowed): look closer
        _check_logit_values(plain, axis)
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
# Attention: Q, K, V / X and the four weights, masks, sizes, overflow
# ---------------------------------------------------------------------------------------------


def check_qkv(q, k, v, mask=None):
    """scaled_dot_product_attention's input: shapes that fit, one float dtype, no NaN/inf, no overflow, room in memory.

    Returns ``(q, k, v, mask)`` with the mask broadcast to the scores' shape (or None).
    """
    arrays = [_array(a, name, 2, "(n, d)") for a, name in ((q, "Q"), (k, "K"), (v, "V"))]
    for arr, name in zip(arrays, "QKV"):
        if arr.size == 0:
            raise AttentionInputError(
                f"{name} 的形状是 {arr.shape}：至少要有 1 个词、每个词至少 1 维，注意力才有东西可算。"
            )
    q, k, v = arrays
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
    top_q, top_k = _max_abs(q, "Q"), _max_abs(k, "K")
    _max_abs(v, "V")
    bound = _log2(q.shape[-1]) + _log2(top_q) + _log2(top_k)  # Σ|q||k| ≤ d_k · max|q| · max|k|
    if bound >= _log2_max(q.dtype):
        _check_scores_exactly(q, k, top_q, top_k)
    return q, k, v, mask


def check_mask(mask, scores_shape):
    """A boolean mask that broadcasts to the scores and leaves every query at least one key."""
    mask = np.asanyarray(mask)
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
    x = _array(x, "X", 2, "(n, d_model)")
    if x.size == 0:
        raise AttentionInputError(f"X 的形状是 {x.shape}：里面没有数。至少要有 1 个词、每个词至少 1 维。")
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
    tops = [_max_abs(a, name) for a, name in zip((x, *weights), ("X", "W_Q", "W_K", "W_V", "W_O"))]
    _check_mha_fits(x, weights, h, tops)
    return (x, *weights, h, mask)


# ---------------------------------------------------------------------------------------------
# Overflow: how large the intermediates can get, from the inputs alone
#
# For a product A B, every partial sum of every entry is at most Σ_k |A_ik| |B_kj|. A first bound
# (inner size × max|A| × max|B|) costs two reductions per input and clears ordinary inputs at once;
# only when it reaches the dtype's largest value is Σ|A||B| computed exactly, in float64 on inputs
# scaled by powers of two (so that computation itself cannot overflow). All sizes are log2.
# ---------------------------------------------------------------------------------------------

_STAGES = {
    "proj": "投影 X W^Q、X W^K、X W^V",
    "scores": "打分 Q Kᵀ",
    "out": "输出投影 Concat(head_i) W^O",
}


def _log2(value) -> float:
    return math.log2(value) if value > 0 else -math.inf


def _log2_max(dtype) -> float:
    return math.log2(float(np.finfo(dtype).max))


def _check_mha_fits(x, weights, h, tops):
    lx, lq, lk, lv, lo = (_log2(t) for t in tops)
    d = x.shape[-1]
    ld, ldk = _log2(d), _log2(d // h)
    sizes = {
        "proj": ld + lx + max(lq, lk, lv),
        "scores": ldk + (ld + lx + lq) + (ld + lx + lk),
        "out": ld + (ld + lx + lv) + lo,
    }
    if max(sizes.values()) < _log2_max(x.dtype):
        return
    _raise_if_too_large(_exact_mha_sizes(x, weights, h), x.dtype, tops, ("X", "W_Q", "W_K", "W_V", "W_O"))


def _scaled(a):
    """(a / 2**e in float64, e) with max|a / 2**e| in [0.5, 1): exact, and safe to multiply."""
    plain = np.asarray(a, dtype=np.float64)
    top = float(np.abs(plain).max())
    e = math.frexp(top)[1] if top > 0 else 0
    return np.ldexp(plain, -e), e


def _log2_max_product(a, b) -> float:
    """log2 of max Σ_k |a_ik| |b_kj| for float64 arrays that cannot overflow."""
    return _log2(float((np.abs(a) @ np.abs(b)).max()))


def _exact_mha_sizes(x, weights, h):
    xs, ex = _scaled(x)
    (wq, eq), (wk, ek), (wv, ev), (wo, eo) = (_scaled(w) for w in weights)
    d_k = x.shape[-1] // h
    q, k, v = xs @ wq, xs @ wk, xs @ wv  # (..., n, d_model) in units of 2**(ex + e_w)
    proj = max(_log2_max_product(xs, w) + ex + e for w, e in ((wq, eq), (wk, ek), (wv, ev)))

    def heads(a):  # (..., n, d_model) -> (..., h, n, d_k)
        return np.swapaxes(a.reshape(*a.shape[:-1], h, d_k), -2, -3)

    scores = _log2_max_product(heads(q), np.swapaxes(heads(k), -1, -2)) + 2 * ex + eq + ek
    v_top = np.abs(v).reshape(-1, v.shape[-1]).max(axis=0)  # every head output is a weighted mean of V's rows
    out = _log2_max_product(v_top[None], wo) + ex + ev + eo
    return {"proj": proj, "scores": scores, "out": out}


def _check_scores_exactly(q, k, top_q, top_k):
    qs, eq = _scaled(q)
    ks, ek = _scaled(k)
    scores = _log2_max_product(qs, np.swapaxes(ks, -1, -2)) + eq + ek
    _raise_if_too_large({"scores": scores}, q.dtype, (top_q, top_k), ("Q", "K"))


def _raise_if_too_large(sizes, dtype, tops, names):
    limit = _log2_max(dtype)
    for stage, size in sizes.items():
        if size >= limit:
            largest = "，".join(f"{name} 约 {_power(_log2(t))}" for name, t in zip(names, tops))
            advice = "请把输入缩小（例如除以它的最大绝对值，或先做层归一化）"
            if dtype != np.float64:
                advice += "，或改用更宽的类型 .astype(np.float64)"
            raise AttentionInputError(
                f"输入都是有限的数，但按 {np.dtype(dtype).name} 计算时，{_STAGES[stage]} 的中间结果会大到约 "
                f"{_power(size)}，超过 {np.dtype(dtype).name} 能表示的最大值 {float(np.finfo(dtype).max):.3g}："
                f"结果会变成 inf 和 NaN。各输入的最大绝对值：{largest}。{advice}。"
            )


def _power(log2_value: float) -> str:
    """2**log2_value written as 1.2e+309, even beyond float64's range."""
    if log2_value == -math.inf:
        return "0"
    exponent10 = log2_value * math.log10(2)
    whole = math.floor(exponent10)
    return f"{10 ** (exponent10 - whole):.1f}e{whole:+d}"


# ---------------------------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------------------------

_TEMPORARIES = 4  # the scores, the shifted scores, their exps and the weights live at the same time
_ALWAYS_FITS = 256 << 20  # below this, do not read /proc and the cgroup on every call (the §7 sweep calls often)
_CGROUP_ROOT = Path("/sys/fs/cgroup")


def _check_memory(scores_shape, dtype, d_v):
    """Refuse sizes whose attention weights (and the temporaries beside them) do not fit in free memory."""
    itemsize = np.dtype(dtype).itemsize
    weights_bytes = math.prod(scores_shape) * itemsize
    need = _TEMPORARIES * weights_bytes + math.prod(scores_shape[:-1]) * d_v * itemsize
    if need <= _ALWAYS_FITS:
        return
    free = available_memory()
    if free is None or need <= free:
        return
    raise AttentionInputError(
        f"这次注意力要算形状为 {tuple(scores_shape)} 的权重（每行 n = {scores_shape[-1]:,} 个数）："
        f"权重本身就要 {_bytes(weights_bytes)}，计算时连同中间结果约需 {_bytes(need)}，"
        f"而这台机器现在可用的内存约 {_bytes(free)}。请减少词数 n（或批量大小）后再试。"
    )


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")


def available_memory() -> int | None:
    """Bytes this process may still allocate: free RAM, capped by a cgroup memory limit; None if unknown."""
    free = _meminfo_available()
    limit = _cgroup_room(_CGROUP_ROOT)
    known = [b for b in (free, limit) if b is not None]
    return min(known) if known else None


def _meminfo_available() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        try:  # macOS and other Unixes: physical memory (no "available" figure without psutil)
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            return None
    match = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _cgroup_room(root: Path) -> int | None:
    """cgroup v2 ``memory.max − memory.current`` (a JupyterHub student's limit); None when unlimited."""
    try:
        limit = (root / "memory.max").read_text().strip()
        used = int((root / "memory.current").read_text())
    except (OSError, ValueError):
        return None
    if limit == "max":
        return None
    return max(0, int(limit) - used)
