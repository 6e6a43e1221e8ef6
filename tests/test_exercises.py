"""The code exercises' checkers: right, wrong (the usual mistakes), raising, garbage and unfilled stubs."""

from __future__ import annotations

import numpy as np
import pytest

from lesson_lib import exercises as ex
from lesson_lib import paper
from lesson_lib.attention import head_width, softmax
from lesson_lib.flops import count

D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
NAMES = list(ex.EXERCISES)


def stub(*args):
    raise NotImplementedError


def test_three_exercises():
    assert set(NAMES) == {"split_heads", "multi_head_attention_loop", "count_multiplies"}


@pytest.mark.parametrize("name", NAMES)
def test_reference_solution_passes(name):
    result = ex.check(name, ex.EXERCISES[name].solution)
    assert result.passed and result.message.startswith("全部通过")


@pytest.mark.parametrize("name", NAMES)
def test_unfilled_stub_is_not_an_error(name):
    result = ex.check(name, stub)
    assert result.status == "todo" and not result.passed
    assert result.message.startswith("还没实现") and ex.EXERCISES[name].learner_name in result.message
    assert repr(result) == result.message  # what the notebook cell shows


def _raise(exc):
    def fn(*args):
        raise exc

    return fn


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "fn",
    [
        _raise(ValueError("bad")),
        _raise(KeyError("k")),
        _raise(RecursionError()),
        _raise(SystemExit(2)),
        _raise(MemoryError()),
        lambda *a: 1 / 0,
    ],
    ids=["ValueError", "KeyError", "RecursionError", "SystemExit", "MemoryError", "ZeroDivision"],
)
def test_raising_functions_get_a_message(name, fn):
    result = ex.check(name, fn)
    assert result.status == "error" and result.message.startswith("运行出错")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "value",
    [None, "abc", "54988800", [[1, 2], [3]], object(), {"a": 1}, 1 + 2j, True, np.array(["x"]), float("nan"), ()],
    ids=lambda v: type(v).__name__,
)
def test_garbage_results_get_a_message(name, value):
    result = ex.check(name, lambda *a: value)
    assert isinstance(result, ex.ExerciseResult) and result.status == "wrong" and result.message


def test_none_result_asks_for_return():
    assert "忘了写 return" in ex.check("split_heads", lambda x, h: None).message


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", [3, np.ones((2, 2)), "my_split_heads", None])
def test_not_a_function(name, value):
    """Passing the function's result (or its name) instead of the function gets a hint about the parentheses."""
    result = ex.check(name, value)
    assert result.status == "error" and "不要加括号" in result.message


def test_split_heads_forgot_transpose():
    d_k = head_width(D, H)
    result = ex.check("split_heads", lambda x, h: x.reshape(x.shape[0], h, -1))
    assert result.status == "wrong"
    assert f"形状应为 ({H}, 12, {d_k})，你的是 (12, {H}, {d_k})：是不是忘了 transpose？" in result.message


def test_split_heads_reshape_without_transpose():
    result = ex.check("split_heads", lambda x, h: x.reshape(h, x.shape[0], -1))
    assert "形状对了，但内容不对" in result.message and "交换前两个轴" in result.message


def test_split_heads_strided_columns():
    result = ex.check("split_heads", lambda x, h: x.reshape(x.shape[0], -1, h).transpose(2, 0, 1))
    assert "连续的一块列" in result.message


def test_split_heads_swapped_last_axes_and_unsplit():
    swapped = ex.check("split_heads", lambda x, h: x.reshape(x.shape[0], h, -1).transpose(1, 2, 0))
    assert "后两个轴反了" in swapped.message
    assert "拆分之前" in ex.check("split_heads", lambda x, h: x).message


def test_split_heads_does_not_see_mutation():
    """A learner function that scribbles on its input cannot change the expected answer."""

    def scribble(x, h):
        out = ex.split_heads_solution(x, h).copy()
        x[...] = 0
        return out

    assert ex.check("split_heads", scribble).passed


def _loop(scale=True, w_o=True, axis=-1, heads=None, strided=False, tuple_out=False):
    def fn(x, w_q, w_k, w_v, w_out, h):
        h = heads or h
        d = x.shape[1]
        d_k = d // h
        outs = []
        for i in range(h):
            cols = np.arange(i, d, h) if strided else slice(i * d_k, (i + 1) * d_k)
            s = (x @ w_q[:, cols]) @ (x @ w_k[:, cols]).T
            if scale:
                s = s / np.sqrt(d_k)
            outs.append(softmax(s, axis=axis) @ (x @ w_v[:, cols]))
        out = np.concatenate(outs, axis=-1)
        out = out @ w_out if w_o else out
        return (out, None) if tuple_out else out

    return fn


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"scale": False}, "忘了除以 √d_k"),
        ({"w_o": False}, "忘了最后乘 W^O"),
        ({"axis": 0}, "softmax 的方向不对"),
        ({"heads": 1}, "单头"),
        ({"strided": True}, "连续的列块"),
    ],
)
def test_mha_loop_mistakes_are_named(kwargs, fragment):
    result = ex.check("multi_head_attention_loop", _loop(**kwargs))
    assert result.status == "wrong" and fragment in result.message


def test_mha_loop_right_answers():
    assert ex.check("multi_head_attention_loop", _loop()).passed
    assert ex.check("multi_head_attention_loop", _loop(tuple_out=True)).passed  # (out, weights) is accepted


def test_mha_loop_shapes():
    def per_head(x, w_q, w_k, w_v, w_o, h):
        return np.zeros((h, x.shape[0], x.shape[1] // h))

    assert "拼接（Concat）" in ex.check("multi_head_attention_loop", per_head).message
    one = ex.check("multi_head_attention_loop", lambda x, *w: np.zeros((x.shape[0], x.shape[1] // w[-1])))
    assert "只返回了一个头" in one.message


def test_mha_loop_wrong_values_say_where():
    result = ex.check("multi_head_attention_loop", lambda x, *w: np.zeros_like(x))
    assert "数值不对" in result.message and "例如位置" in result.message


@pytest.mark.parametrize(
    ("fn", "fragment"),
    [
        (lambda n, d, h: 2 * n * n * d, "漏了四个投影"),
        (lambda n, d, h: 4 * n * d * d, "漏了 QKᵀ 与 weights × V"),
        (lambda n, d, h: 3 * n * d * d + 2 * n * n * d, "漏了输出投影"),
        (lambda n, d, h: (4 * n * d * d + 2 * n * n * d) * h, "多乘了一个 h"),
        (lambda n, d, h: 4 * n * d * d + 2 * n * n * d + 3 * h * n * n, "softmax"),
        (lambda n, d, h: 4 * n * d * d + 2 * n * n * (d // h), "只算了一个头"),
        (lambda n, d, h: 12345, "提示"),
    ],
)
def test_count_mistakes_are_named(fn, fragment):
    result = ex.check("count_multiplies", fn)
    assert result.status == "wrong" and fragment in result.message


def test_count_accepts_numeric_types_but_not_text():
    assert ex.check("count_multiplies", lambda n, d, h: float(count(n, d, h).matmul_total)).passed
    assert ex.check("count_multiplies", lambda n, d, h: np.int64(count(n, d, h).matmul_total)).passed
    assert not ex.check("count_multiplies", lambda n, d, h: str(count(n, d, h).matmul_total)).passed


def test_solutions_are_shown_only_when_asked():
    for name in NAMES:
        shown = ex.show_solution(name)
        assert repr(shown).startswith(f"def {name}_solution(")
        assert shown._repr_markdown_().startswith("```python\n")
        assert ex.spec(name).text.startswith("实现 my_")


def test_unknown_exercise():
    with pytest.raises(KeyError, match="split_heads"):
        ex.check("nope", stub)
