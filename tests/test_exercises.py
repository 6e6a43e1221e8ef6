"""The code exercises' checkers: right, wrong (the usual mistakes), raising, garbage and unfilled stubs."""

from __future__ import annotations

import functools
import inspect
import re
import textwrap
import threading
import time
import types

import numpy as np
import pytest

from lesson_lib import attention, paper
from lesson_lib.attention import head_width, multi_head_attention, softmax, split_heads
from lesson_lib.costs import count
from lesson_lib.practice import exercises as ex
from lesson_lib.practice import learner_code

D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
NAMES = list(ex.EXERCISES)


def stub(*args):
    raise NotImplementedError


def test_three_exercises():
    assert set(NAMES) == {"split_heads", "multi_head_attention_loop", "count_multiplies"}


def _retyped(fn):
    """The same source typed in by a learner: a new function compiled from the text, not lesson_lib's object
    (a copy of lesson_lib's own code object is borrowing: see test_copies_of_the_answer_are_borrowed)."""
    source = textwrap.dedent(inspect.getsource(fn)).replace(f"def {fn.__name__}(", f"def my_{fn.__name__}(", 1)
    namespace = dict(fn.__globals__)
    exec(compile(source, f"<learner {fn.__name__}>", "exec"), namespace)
    return namespace[f"my_{fn.__name__}"]


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


# ---------------------------------------------------------------------------------------------
# The attack table: every way a body can try to hang, fool or outlive a check
# ---------------------------------------------------------------------------------------------

ATTACK_BUDGET_S = 0.5  # the per-call budget in these tests; a check must be back by budget + grace + slack
RETURN_LIMIT_S = ATTACK_BUDGET_S + learner_code.GRACE_S + 1.0  # slack: two shared cores, the scan, the other cases


class _LoopingArray:
    def __array__(self, *args, **kwargs):
        while True:
            pass


class _LoopingMessage(Exception):
    def __str__(self):
        while True:
            pass


def _returns_looping_array(x, h):
    return _LoopingArray()


def _raises_looping_message(x, h):
    raise _LoopingMessage()


def _ignores_sigalrm(x, h):
    import signal

    try:
        signal.signal(signal.SIGALRM, signal.SIG_IGN)  # refused outside the main thread; the loop runs anyway
    except ValueError:
        pass
    while True:
        pass


def _clears_itimer(x, h):
    import signal

    signal.setitimer(signal.ITIMER_REAL, 0)
    while True:
        pass


def _one_long_c_call(x, h):
    time.sleep(3 * ATTACK_BUDGET_S + 1)  # like np.ones(10**9): one C call that no exception can interrupt
    return x


def _swallows_every_stop(x, h):
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass


def _long_call_then_loop(x, h):
    time.sleep(ATTACK_BUDGET_S + 0.6)
    while True:
        pass


HANG_ATTACKS = {  # name: (body, status, fragment of the message)
    "__array__ loops": (_returns_looping_array, "timeout", "是不是写了死循环？"),
    "__str__ of the exception loops": (_raises_looping_message, "error", "_LoopingMessage（这个异常的说明文字 __str__"),
    "signal(SIGALRM, SIG_IGN) then loop": (_ignores_sigalrm, "timeout", "是不是写了死循环？"),
    "setitimer(ITIMER_REAL, 0) then loop": (_clears_itimer, "timeout", "是不是写了死循环？"),
    "one long C call": (_one_long_c_call, "timeout", "不是死循环"),
    "except BaseException around the loop": (_swallows_every_stop, "timeout", "是不是写了死循环？"),
    "long C call, then a loop": (_long_call_then_loop, "timeout", "不是死循环"),
}


@pytest.mark.parametrize("attack", list(HANG_ATTACKS))
def test_hang_attacks_return_within_the_budget_in_chinese(attack, monkeypatch):
    monkeypatch.setattr(learner_code, "TIME_BUDGET_S", ATTACK_BUDGET_S)
    body, status, fragment = HANG_ATTACKS[attack]
    start = time.perf_counter()
    result = ex.check("split_heads", body)
    elapsed = time.perf_counter() - start
    assert elapsed < RETURN_LIMIT_S, (attack, elapsed)
    assert result.status == status and fragment in result.message, result.message
    assert "Traceback" not in result.message
    # the next check is not slowed by a worker still inside its C call (CPython's pending-exception flag)
    start = time.perf_counter()
    assert ex.check("split_heads", _retyped(ex.split_heads_solution)).passed
    assert time.perf_counter() - start < RETURN_LIMIT_S


def test_a_long_c_call_names_its_line_and_time(monkeypatch):
    monkeypatch.setattr(learner_code, "TIME_BUDGET_S", ATTACK_BUDGET_S)
    result = ex.check("split_heads", _one_long_c_call)
    assert "耗时已超过" in result.message and "time.sleep(3 * ATTACK_BUDGET_S + 1)" in result.message
    assert "死循环？" not in result.message


def test_a_loop_after_a_long_c_call_is_stopped_when_the_call_returns(monkeypatch):
    """The watchdog gives up waiting, but the worker does not loop on in the background."""
    monkeypatch.setattr(learner_code, "TIME_BUDGET_S", ATTACK_BUDGET_S)
    ex.check("split_heads", _long_call_then_loop)
    deadline = time.perf_counter() + 5
    while time.perf_counter() < deadline and any(t.name == "lesson-learner-code" for t in threading.enumerate()):
        time.sleep(0.05)
    assert not any(t.name == "lesson-learner-code" for t in threading.enumerate())


def _mha_calls(fn_name):
    def body(x, w_q, w_k, w_v, w_o, h):
        return getattr(attention, fn_name)(x, w_q, w_k, w_v, w_o, h)[0]

    return body


def _fast_imported_in_the_body(x, w_q, w_k, w_v, w_o, h):
    from attention_fast import multi_head_attention_fast  # benchmarks/, on the tests' path

    return multi_head_attention_fast(x, w_q, w_k, w_v, w_o, h)[0]


def _split_merge_from_the_lesson(x, w_q, w_k, w_v, w_o, h):
    from lesson_lib.attention import merge_heads

    q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
    return merge_heads(softmax(q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1]), axis=-1) @ v) @ w_o


def _sdpa_per_head(x, w_q, w_k, w_v, w_o, h):
    d_k = x.shape[1] // h
    cols = [slice(i * d_k, (i + 1) * d_k) for i in range(h)]
    heads = [attention.scaled_dot_product_attention(x @ w_q[:, c], x @ w_k[:, c], x @ w_v[:, c])[0] for c in cols]
    return np.concatenate(heads, axis=-1) @ w_o


def _dynamic_lookup(x, h):
    import importlib

    return getattr(importlib.import_module("lesson_lib.attention"), "split" + "_heads")(x, h)


def _default_argument(x, h, f=split_heads):
    return f(x, h)


def _closure():
    borrowed = split_heads

    def my_split_heads(x, h):
        return borrowed(x, h)

    return my_split_heads


def _via_helper():
    def helper(x, h):
        return split_heads(x, h)

    def my_split_heads(x, h):
        return helper(x, h)

    return my_split_heads


def _solution_from_the_registry(n, d_model, h):
    return ex.EXERCISES["count_multiplies"].solution(n, d_model, h)


BORROW_ATTACKS = {  # name: (exercise, body, name in the message)
    "multi_head_attention_reference": ("multi_head_attention_loop", _mha_calls("multi_head_attention_reference"),
                                       "multi_head_attention_reference"),
    "multi_head_attention": ("multi_head_attention_loop", _mha_calls("multi_head_attention"), "multi_head_attention"),
    # benchmarks/attention_fast is outside lesson_lib: named itself once loaded, else caught at the kernel it calls
    "attention_fast imported in the body": ("multi_head_attention_loop", _fast_imported_in_the_body,
                                            ("multi_head_attention_fast", "split_heads")),
    "split_heads / merge_heads of the lesson": ("multi_head_attention_loop", _split_merge_from_the_lesson,
                                                "split_heads"),
    "scaled_dot_product_attention per head": ("multi_head_attention_loop", _sdpa_per_head,
                                              "scaled_dot_product_attention"),
    "the solution's code in a new function": ("split_heads", types.FunctionType(
        ex.split_heads_solution.__code__, {"np": np}, "my_split_heads"), "split_heads_solution"),
    "functools.partial": ("split_heads", functools.partial(split_heads), "split_heads"),
    "default argument": ("split_heads", _default_argument, "split_heads"),
    "closure": ("split_heads", _closure(), "split_heads"),
    "through a helper": ("split_heads", _via_helper(), "split_heads"),
    "importlib + getattr": ("split_heads", _dynamic_lookup, "split_heads"),
    "flops.count": ("count_multiplies", lambda n, d, h: count(n, d, h).matmul_total, "count"),
    "the registry's solution": ("count_multiplies", _solution_from_the_registry, "count_multiplies_solution"),
}  # fmt: skip


@pytest.mark.parametrize("attack", list(BORROW_ATTACKS))
def test_every_kernel_variant_and_solution_is_borrowed(attack):
    exercise, body, used = BORROW_ATTACKS[attack]
    result = ex.check(exercise, body)
    assert result.status == "borrowed" and not result.passed, result.message
    names = used if isinstance(used, tuple) else (used,)
    assert any(f"lesson_lib 自己的 {n}" in result.message for n in names) and "不算通过" in result.message


def test_copies_of_the_answer_are_borrowed():
    """A copy of lesson_lib's own code object is the answer itself, under any name."""
    copy = types.FunctionType(ex.split_heads_solution.__code__, ex.split_heads_solution.__globals__, "mine")
    assert ex.check("split_heads", copy).status == "borrowed"


def _patches_allclose(x, h):
    np.allclose = lambda *a, **k: True
    return x


def _patches_the_checker(x, h):
    ex._same = lambda *a, **k: True
    return np.zeros((h, x.shape[0], x.shape[1] // h))


def _patches_a_builtin(x, h):
    import builtins

    builtins.isinstance = lambda *a: True
    return x


@pytest.mark.parametrize(
    ("body", "patched"),
    [(_patches_allclose, "numpy.allclose"), (_patches_the_checker, "exercises._same"),
     (_patches_a_builtin, "builtins.isinstance")],
)  # fmt: skip
def test_patching_numpy_or_the_checker_cannot_pass_or_stay(body, patched):
    originals = (np.allclose, ex._same, isinstance)
    result = ex.check("split_heads", body)
    assert result.status == "tampered" and patched in result.message and "恢复原样" in result.message
    assert (np.allclose, ex._same, __builtins__["isinstance"] if isinstance(__builtins__, dict)
            else __builtins__.isinstance) == originals  # fmt: skip
    assert ex.check("split_heads", lambda x, h: x).status == "wrong"  # the checker works as before


def test_a_patch_made_before_the_check_is_undone_and_said(monkeypatch):
    real = np.allclose
    np.allclose = lambda *a, **k: True  # what a cell above the check might do
    try:
        result = ex.check("split_heads", lambda x, h: x)
    finally:
        restored = np.allclose is real
        np.allclose = real
    assert restored and result.status == "wrong" and "numpy.allclose 被改动过" in result.message


def test_the_registry_cannot_be_swapped():
    with pytest.raises(TypeError):
        ex.EXERCISES["split_heads"] = None


def test_the_kernel_rebinding_input_for_each_cell_is_not_a_patch(monkeypatch):
    """ipykernel sets builtins.input anew for every cell; the checker must not call that tampering."""
    import builtins

    monkeypatch.setattr(builtins, "input", lambda prompt="": "")
    result = ex.check("split_heads", _retyped(ex.split_heads_solution))
    assert result.passed and "builtins.input" not in result.message and "改动" not in result.message, result.message
