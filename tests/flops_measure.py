"""Count the work the lesson's kernel actually executes, to check lesson_lib.sections.s04_costs' closed form against it.

A test oracle, not lesson code: ``measure(n, d_model, h)`` runs a kernel on arrays that record every
matmul, exp and division as it happens.
"""

from __future__ import annotations

import numpy as np

from lesson_lib.attention import head_width
from lesson_lib.checks import LessonInputTypeError, check_int

__all__ = ["measure"]


def _positive(value, name):
    return check_int(value, name, minimum=1)


# ---------------------------------------------------------------------------------------------
# Counting by observation
# ---------------------------------------------------------------------------------------------


class _Tally:
    def __init__(self):
        self.matmuls: list[tuple[tuple[int, ...], tuple[int, ...], int]] = []
        self.exps = 0
        self.divisions = 0
        self.scalings = 0  # the divisions by one number (1/√d_k), apart from softmax's row sums


class _Counted(np.ndarray):
    """An ndarray that reports each matmul, exp and division it takes part in to a tally."""

    tally: _Tally | None = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out", ())
        tally = next(a.tally for a in (*inputs, *out) if isinstance(a, _Counted))
        plain = [a.view(np.ndarray) if isinstance(a, _Counted) else a for a in inputs]
        if out:
            kwargs["out"] = tuple(a.view(np.ndarray) if isinstance(a, _Counted) else a for a in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if method == "__call__":
            _record(tally, ufunc, plain, result)
        if out:
            return out[0] if len(out) == 1 else out  # in place: hand back the caller's (counted) arrays
        if isinstance(result, np.ndarray):
            result = result.view(_Counted)
            result.tally = tally
        return result

    def __array_finalize__(self, obj):
        self.tally = getattr(obj, "tally", None)


def _record(tally, ufunc, inputs, result):
    if ufunc is np.matmul:
        a, b = np.shape(inputs[0]), np.shape(inputs[1])
        inner = a[-1]
        tally.matmuls.append((a, b, int(np.size(result)) * inner))  # one multiply per output × inner dim
    elif ufunc is np.exp:
        tally.exps += int(np.size(result))
    elif ufunc in (np.true_divide, np.divide):
        tally.divisions += int(np.size(result))
        if np.ndim(inputs[1]) == 0:
            tally.scalings += int(np.size(result))


def measure(n: int, d_model: int, h: int, kernel=None, seed: int = 0) -> dict:
    """Run ``kernel`` (default: the lesson's multi_head_attention) and count what it executed.

    Returns ``matmul_multiplies`` (total), ``matmul_shapes`` (each call's operand shapes and
    multiplies), ``exps``, ``divisions`` and ``scalings`` (the divisions by one number).
    In-place operations (``out=``) are counted too.
    """
    from lesson_lib.attention import multi_head_attention

    n, d_model = _positive(n, "n"), _positive(d_model, "d_model")
    head_width(d_model, h)
    seed = check_int(seed, "seed", minimum=0)
    kernel = kernel or multi_head_attention
    if not callable(kernel):
        raise LessonInputTypeError(f"kernel 必须是一个注意力函数（例如 multi_head_attention），收到的是 {kernel!r}。")
    rng = np.random.default_rng(seed)
    tally = _Tally()

    def counted(shape):
        arr = rng.standard_normal(shape).view(_Counted)
        arr.tally = tally
        return arr

    x = counted((n, d_model))
    w_q, w_k, w_v, w_o = (counted((d_model, d_model)) for _ in range(4))
    kernel(x, w_q, w_k, w_v, w_o, h)
    return {
        "matmul_multiplies": sum(m for _, _, m in tally.matmuls),
        "matmul_shapes": list(tally.matmuls),
        "exps": tally.exps,
        "divisions": tally.divisions,
        "scalings": tally.scalings,
    }
