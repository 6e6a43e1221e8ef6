"""The code exercises' checkers: right, wrong (the usual mistakes), raising, garbage and unfilled stubs."""

from __future__ import annotations

import re
import threading
import time
import types

import numpy as np
import pytest

from lesson_lib import paper
from lesson_lib.kernel import attention
from lesson_lib.kernel.attention import head_width, multi_head_attention, softmax, split_heads
from lesson_lib.kernel.flops import count
from lesson_lib.selftest import exercises as ex
from lesson_lib.selftest import learner_code

D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
NAMES = list(ex.EXERCISES)


def stub(*args):
    raise NotImplementedError


def test_three_exercises():
    assert set(NAMES) == {"split_heads", "multi_head_attention_loop", "count_multiplies"}


def _retyped(fn):
    """The same code as a learner's own function (not the lesson_lib object itself)."""
    return types.FunctionType(fn.__code__, fn.__globals__, "my_" + fn.__name__)


@pytest.mark.parametrize("name", NAMES)
def test_reference_solution_passes(name):
    result = ex.check(name, _retyped(ex.EXERCISES[name].solution))
    assert result.passed and result.message.startswith("全部通过")


@pytest.mark.parametrize("name", NAMES)
def test_passing_lesson_lib_itself_does_not_pass(name):
    """Handing in the reference solution, or a body that calls the kernel's own function, is named, not passed."""
    own = {"split_heads": split_heads, "multi_head_attention_loop": multi_head_attention,
           "count_multiplies": count}[name]  # fmt: skip
    for fn, used in [(ex.EXERCISES[name].solution, f"{name}_solution"), (own, own.__name__)]:
        result = ex.check(name, fn)
        assert result.status == "borrowed" and not result.passed and used in result.message, result.message
        assert "不算通过" in result.message and "全部通过" not in result.message


def test_body_calling_the_kernel_is_named():
    result = ex.check("split_heads", lambda x, h: split_heads(x, h))
    assert result.status == "borrowed" and "split_heads" in result.message
    result = ex.check("split_heads", lambda x, h: attention.split_heads(x, h))  # through the module
    assert result.status == "borrowed"
    # a body that names np.object etc. is looked up without triggering numpy's deprecation hooks
    assert ex.check("split_heads", lambda x, h: np.array([np.ones(3), np.ones(2)], dtype=object)).status == "wrong"
    # using softmax inside the loop exercise is allowed (its spec says so)
    assert ex.check("multi_head_attention_loop", _loop()).passed


def test_returning_a_function_is_named():
    result = ex.check("split_heads", lambda x, h: np.transpose)
    assert result.status == "wrong" and "返回的是一个函数（transpose）" in result.message


@pytest.fixture
def short_budget(monkeypatch):
    monkeypatch.setattr(learner_code, "TIME_BUDGET_S", 0.3)


def _forever(*args):
    while True:
        pass


@pytest.mark.parametrize("name", NAMES)
def test_endless_loop_is_stopped_with_a_chinese_message(name, short_budget):
    start = time.perf_counter()
    result = ex.check(name, _forever)
    assert time.perf_counter() - start < 5
    assert result.status == "timeout" and "是不是写了死循环？" in result.message
    assert "Traceback" not in result.message and "lesson_lib" not in result.message


def test_a_loop_that_catches_exceptions_is_still_stopped(short_budget):
    def stubborn(x, h):
        while True:
            try:
                while True:
                    pass
            except Exception:
                pass

    assert ex.check("split_heads", stubborn).status == "timeout"


def test_endless_loop_in_a_worker_thread_is_stopped(short_budget):
    """Outside the main thread (no SIGALRM) the budget still holds."""
    box = []
    worker = threading.Thread(target=lambda: box.append(ex.check("split_heads", _forever)))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive() and box[0].status == "timeout"


def test_keyboard_interrupt_is_reported_without_traceback():
    def interrupted(x, h):
        raise KeyboardInterrupt

    result = ex.check("split_heads", interrupted)
    assert result.status == "interrupted" and "是不是写了死循环？" in result.message


@pytest.mark.parametrize("exc", [GeneratorExit(), type("Custom", (BaseException,), {})("boom"), SystemExit(3)])
def test_base_exceptions_are_reported(exc):
    result = ex.check("split_heads", _raise(exc))
    assert result.status == "error" and result.message.startswith("运行出错") and type(exc).__name__ in result.message


def test_recursive_check_is_guarded():
    calls = []

    def recursive(x, h):
        calls.append(1)
        return ex.check("split_heads", recursive)

    result = ex.check("split_heads", recursive)
    assert len(calls) == 1 and result.status == "error" and "不要再调用检查器" in result.message
    assert ex.check("split_heads", _retyped(ex.split_heads_solution)).passed  # the guard is released afterwards


def test_float32_is_compared_at_float32_precision():
    def f32_split(x, h):
        n, d = x.shape
        return x.astype(np.float32).reshape(n, h, d // h).transpose(1, 0, 2)

    result = ex.check("split_heads", f32_split)
    assert result.passed and "float32" in result.message

    def f32_loop(x, w_q, w_k, w_v, w_o, h):
        return _loop()(*(a.astype(np.float32) for a in (x, w_q, w_k, w_v, w_o)), h).astype(np.float32)

    result = ex.check("multi_head_attention_loop", f32_loop)
    assert result.passed and "float32" in result.message


def test_float32_inside_a_float64_result_says_use_float64():
    """Not 「应为 0.1859，你的是 0.1859」: the learner is told the difference is float32 round-off."""

    def mixed(x, w_q, w_k, w_v, w_o, h):
        return _loop()(*(a.astype(np.float32) for a in (x, w_q, w_k, w_v, w_o)), h).astype(np.float64)

    result = ex.check("multi_head_attention_loop", mixed)
    assert result.status == "wrong" and "精度不够，请用 float64" in result.message and "逐项检查" not in result.message
    shown = re.findall(r"应为 (\S+)，你的是 (\S+?)，", result.message)
    assert shown and shown[0][0] != shown[0][1]


def test_round_off_difference_says_precision_not_same_number_twice():
    def nearly(x, w_q, w_k, w_v, w_o, h):
        return _loop()(x, w_q, w_k, w_v, w_o, h) * (1 + 3e-6)

    result = ex.check("multi_head_attention_loop", nearly)
    assert result.status == "wrong" and "精度不够" in result.message
    shown = re.findall(r"应为 (\S+)，你的是 (\S+?)，", result.message)
    assert shown and shown[0][0] != shown[0][1]


@pytest.mark.parametrize(
    ("value", "fragment"),
    [(np.ones((8, 12, 64), dtype=complex), "复数"), (np.array([np.ones(3), np.ones(2)], dtype=object), "dtype=object"),
     (np.array(["x"]), "返回的是文字"), (np.ones((8, 12, 64), dtype=bool), "布尔")],
)  # fmt: skip
def test_odd_dtypes_get_the_right_message(value, fragment):
    result = ex.check("split_heads", lambda x, h: value)
    assert result.status == "wrong" and fragment in result.message and "是 ndarray" not in result.message


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


def test_a_function_that_modifies_its_input_is_told_so():
    """It cannot change the expected answer (it gets a copy), and the learner hears about it."""

    def scribble(x, h):
        n, d = x.shape
        out = x.reshape(n, h, d // h).transpose(1, 0, 2).copy()
        x[...] = 0
        return out

    result = ex.check("split_heads", scribble)
    assert result.status == "wrong" and "改动了传进来的 x" in result.message

    def scale_in_place(x, w_q, w_k, w_v, w_o, h):
        w_q *= 1.0
        w_k[0, 0] += 1
        return _loop()(x, w_q, w_k, w_v, w_o, h)

    assert "改动了传进来的 w_k" in ex.check("multi_head_attention_loop", scale_in_place).message


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
    assert ex.check("count_multiplies", lambda n, d, h: float(4 * n * d * d + 2 * n * n * d)).passed
    assert ex.check("count_multiplies", lambda n, d, h: np.int64(4 * n * d * d + 2 * n * n * d)).passed
    assert not ex.check("count_multiplies", lambda n, d, h: str(4 * n * d * d + 2 * n * n * d)).passed


def test_solutions_are_shown_only_when_asked():
    for name in NAMES:
        shown = ex.show_solution(name)
        assert repr(shown).startswith(f"def {name}_solution(")
        assert shown._repr_markdown_().startswith("```python\n")
        assert ex.spec(name).text.startswith("实现 my_")


def test_unknown_exercise():
    with pytest.raises(KeyError, match="split_heads"):
        ex.check("nope", stub)


def test_results_show_pass_and_fail_colours():
    passed = ex.check("split_heads", _retyped(ex.split_heads_solution))._repr_html_()
    wrong = ex.check("split_heads", lambda x, h: x)._repr_html_()
    todo = ex.check("split_heads", stub)._repr_html_()
    assert "--jp-success-color1" in passed and "lesson-exercise-passed" in passed
    assert "--jp-warn-color1" in wrong and "lesson-exercise-wrong" in wrong
    assert "--jp-success-color1" not in todo and "--jp-warn-color1" not in todo and "还没实现" in todo
