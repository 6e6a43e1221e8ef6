"""The code exercises' checker: it survives the learner's accidents, names their mistakes, and shows solutions.

Every check here goes through the worker process, as in the notebook. No test times anything: a check that
is stopped returns because the budget mechanism returns it (timings: benchmarks/bench_exercises.py).
"""

from __future__ import annotations

import ast
import ctypes
import inspect
import linecache
import os
import re
import subprocess
import sys
import threading
import time

import cloudpickle
import numpy as np
import pytest
from helpers import _build_notebook, numbers_in, scaled

from lesson_lib import costs, paper
from lesson_lib.attention import head_width, softmax
from lesson_lib.practice import worker
from lesson_lib.practice.checkers import split_heads_shape_mistake
from lesson_lib.sections import exercises as ex

D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
NAMES = list(ex.EXERCISES)
LINUX = sys.platform.startswith("linux")  # the worker's memory limit (elsewhere the budget ends a huge array)
BUDGET_S = 0.5  # the budget in the accident tests (the notebook's is ex.BUDGET_S)
# This file's functions travel to the worker by value, as a notebook's do (from __main__): by reference the
# worker would first import this module and pytest, inside the check's budget, and a busy machine could time it out.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def stub(*args):
    raise NotImplementedError


def _solution_text(name: str) -> str:
    """What show_solution shows, renamed to the notebook stub's name: a learner who retypes it."""
    return repr(ex.show_solution(name)).replace(f"def {name}_solution(", f"def {ex.EXERCISES[name].learner_name}(")


def _retyped(name: str):
    """The shown solution typed into a cell: a new function compiled from the text, as a notebook makes it."""
    text, cell = _solution_text(name), f"<cell {name}>"
    linecache.cache[cell] = (len(text), None, text.splitlines(True), cell)  # as IPython keeps each cell's text
    namespace = {"np": np, "softmax": softmax, "__name__": __name__}
    exec(compile(text, cell, "exec"), namespace)
    return namespace[ex.EXERCISES[name].learner_name]


def test_three_exercises():
    assert set(NAMES) == {"split_heads", "multi_head_attention_loop", "count_multiplies"}


@pytest.mark.parametrize("name", NAMES)
def test_the_shown_solution_passes_and_the_learners_code_is_kept(name):
    result = ex.check(name, _retyped(name))
    assert result.passed, result.message
    assert result.source.startswith(f"def {ex.EXERCISES[name].learner_name}(")  # the code a report can re-check


@pytest.mark.parametrize("name", NAMES)
def test_solutions_are_in_chinese_and_shown_only_when_asked(name):
    shown = ex.show_solution(name)
    assert shown._repr_markdown_().startswith("```python\n")
    tree = ast.parse(shown)
    docstring = ast.get_docstring(tree.body[0])
    comments = [line.split("#", 1)[1] for line in shown.splitlines() if "#" in line]
    assert docstring and comments
    for text in [docstring, *comments]:
        assert re.search(r"[\u4e00-\u9fff]", text), text  # every comment and the docstring are Chinese
    assert re.search(rf"\b{ex.EXERCISES[name].learner_name}\(", ex.spec(name))  # names the function to write


# ---------------------------------------------------------------------------------------------
# Accidents: each ends its check, and the next check works
# ---------------------------------------------------------------------------------------------


def _forever(x, h):
    while True:
        pass


def _swallowing_loop(x, h):
    while True:
        try:
            time.sleep(1)  # asleep: the kill, not the spin, is what is tested
        except BaseException:
            pass


def _big_power(n, d_model, h):
    return n ** d_model ** h  # the typo for n * d_model * h: one big-int power that holds the GIL


def _exits(x, h):
    os._exit(3)


def _segfault(x, h):
    return ctypes.string_at(0)


def _deep_recursion(x, h):
    sys.setrecursionlimit(10**7)

    def down(k):
        return list(map(down, [k + 1]))  # through C (map): the C stack overflows

    return down(0)


def _huge_allocation(x, h):
    return np.ones((10**6, 10**6))  # 8 TB


def _huge_touched(x, h):
    a = np.empty(4 * 10**9 // 8)  # 4 GB, then written: an allocation the OS may grant lazily
    a[:] = 1.0
    return a


# name: (exercise, function, the statuses that say what happened, for a timeout the line it was stuck on). The ones
# that never end get the short budget (the worker's dump of the stuck line and its end are one event, at the budget:
# no race to stretch by the load); the ones that end at once get the notebook's, so that a busy machine cannot turn
# them into a timeout.
ACCIDENTS = {
    "endless loop": ("split_heads", _forever, {"timeout"}, r"\W(pass|while True:)\W"),
    "loop swallowing every exception": ("split_heads", _swallowing_loop, {"timeout"}, r"time\.sleep\(1\)"),
    "n ** d_model ** h": ("count_multiplies", _big_power, {"timeout"}, re.escape("return n ** d_model ** h")),
    "os._exit": ("split_heads", _exits, {"error"}, ""),
    "segfault": ("split_heads", _segfault, {"error"}, ""),
    "deep recursion, raised limit": ("split_heads", _deep_recursion, {"error", "timeout"}, ""),  # crash, or going on
    "huge allocation": ("split_heads", _huge_allocation, {"error"} if LINUX else {"error", "timeout"}, ""),
    "huge allocation, written": ("split_heads", _huge_touched, {"error"} if LINUX else {"error", "timeout", "wrong"},
                                 ""),
}


@pytest.mark.parametrize("accident", list(ACCIDENTS))
def test_an_accident_ends_the_check_and_the_next_check_works(accident):
    """Each ends its check with a message (a stopped one names the learner's line, a crash the process's own exit
    code); a killed worker is reaped and replaced, and the next check passes."""
    name, fn, statuses, stuck = ACCIDENTS[accident]
    assert ex.check(name, _retyped(name)).passed
    before = worker._child.process
    # the short budget, stretched by the load: the learner's line must be reached before the alarm can name it
    result = ex.check(name, fn, budget=scaled(BUDGET_S) if statuses == {"timeout"} else None)
    assert result.status in statuses, result.message
    lines = [line.strip()[:40] for line in inspect.getsource(fn).splitlines()[1:] if line.strip()]  # quoted: cut
    assert fn.__name__ in result.message or any(line in result.message for line in lines), result.message  # its own
    assert "Traceback" not in result.message
    if statuses == {"timeout"}:
        assert re.search(stuck, result.message), result.message
    if accident == "os._exit":
        assert re.findall(r"\d+", result.message) == ["3"]  # os._exit(3), not the kill
    if before.poll() is not None:  # killed: waited for (no zombie); the next check starts another
        assert not os.path.exists(f"/proc/{before.pid}") or "Z" not in _state(before.pid)
    assert ex.check(name, _retyped(name)).passed  # the kernel, and the checker, go on as before


@pytest.mark.skipif(not LINUX, reason="elsewhere the worker has no memory limit: the budget ends a huge array")
def test_a_huge_array_names_its_shape_and_the_line_not_numpy_s_error():
    """numpy's English line (numpy._core._exceptions._ArrayMemoryError: Unable to allocate …) is not shown: the
    shape it could not build is, after the learner's line that asked for it."""
    result = ex.check("split_heads", _huge_allocation)
    line = inspect.getsource(_huge_allocation).splitlines()[1].split("#")[0].strip()
    assert result.status == "error" and not re.search(r"\w+Error|Unable", result.message), result.message
    assert result.message.index(line) < result.message.index(str((10**6, 10**6))), result.message


@pytest.mark.parametrize("shape", [12**512, [2] * 65, (2**40, 2**40)], ids=["length", "axes", "bytes"])
def test_a_shape_past_numpy_s_limits_is_said_as_a_huge_array_not_numpy_s_english(shape):
    """numpy refuses these shapes with a ValueError in English (Maximum allowed dimension exceeded; maximum supported
    dimension …; array is too big …): the learner gets the huge array's advice instead, after their line."""
    from lesson_lib.practice import exercises as engine

    result = ex.check("split_heads", lambda x, h: np.zeros(shape))
    assert result.status == "error" and not re.search(r"Error|dimension|too big", result.message), result.message
    assert engine._EXTRA_HINT[MemoryError] in result.message and "np.zeros(shape)" in result.message, result.message


def test_a_worker_that_cannot_start_says_why_and_the_next_check_works(monkeypatch):
    worker.stop()  # a running worker keeps running: only a new one loads the preload
    run = worker.run
    monkeypatch.setattr(worker, "run", lambda *a, preload=(): run(*a, preload=("no_such_module_here", *preload)))
    result = ex.check("split_heads", _retyped("split_heads"))
    assert result.status == "error" and "no_such_module_here" in result.message
    assert ex.EXERCISES["split_heads"].learner_name not in result.message  # the learner's function is not blamed
    monkeypatch.undo()
    assert ex.check("split_heads", _retyped("split_heads")).passed


def test_a_worker_whose_start_never_ends_says_so_and_the_next_check_works(monkeypatch, tmp_path):
    """A preload that never finishes importing: the notebook waits START_S for the child's "ready", not forever."""
    (tmp_path / "never_imported.py").write_text("import threading\n\nthreading.Event().wait()\n")
    monkeypatch.syspath_prepend(tmp_path)  # the child's PYTHONPATH is the kernel's sys.path
    worker.stop()
    monkeypatch.setattr(worker, "START_S", 0.5)
    run = worker.run
    monkeypatch.setattr(worker, "run", lambda *a, preload=(): run(*a, preload=("never_imported", *preload)))
    result = ex.check("split_heads", _retyped("split_heads"))
    assert result.status == "error" and ex.EXERCISES["split_heads"].learner_name not in result.message
    assert worker._child is None  # killed: the next check starts another
    monkeypatch.undo()
    assert ex.check("split_heads", _retyped("split_heads")).passed


def _forever_unwatched(x, h):
    import faulthandler
    import time

    faulthandler.cancel_dump_traceback_later()  # the worker's own alarm, turned off
    while True:
        time.sleep(0.05)


def test_a_check_that_turns_off_the_workers_alarm_is_still_stopped(monkeypatch):
    """The notebook's own wait (the budget and GRACE_S, once the child is ready) ends it: never a hang."""
    monkeypatch.setattr(worker, "GRACE_S", 0.5)
    result = ex.check("split_heads", _forever_unwatched, budget=0.2)
    assert result.status == "timeout", result.message
    monkeypatch.undo()
    assert ex.check("split_heads", _retyped("split_heads")).passed


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(line for line in f if line.startswith("State:"))
    except (OSError, StopIteration):
        return ""


IMPORT = """
import sys
from lesson_lib.practice import worker
from lesson_lib.sections import exercises

assert worker._child is None and "cloudpickle" not in sys.modules
"""


def test_nothing_starts_at_import():
    """In a fresh kernel of its own."""
    subprocess.run([sys.executable, "-c", IMPORT], check=True,
                   env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))  # fmt: skip


def test_the_learners_prints_are_shown(capsys):
    def shows_shape(x, h):
        print("x.shape =", x.shape)
        n, d = x.shape
        return x.reshape(n, h, d // h).transpose(1, 0, 2)

    assert ex.check("split_heads", shows_shape).passed
    assert "x.shape = (12, 512)" in capsys.readouterr().out


def test_an_error_names_the_learners_line():
    def typo(x, h):
        n, d = x.shape
        return x.reshape(n, h, d // h).transpose(1, 0, 3)

    result = ex.check("split_heads", typo)
    line = "return x.reshape(n, h, d // h).transpose(1, 0, 3)"  # the function's 3rd line, as the learner wrote it
    assert result.status == "error" and re.search(rf"\b3\D{{1,4}}{re.escape(line)}", result.message)


def test_input_in_the_function_is_an_error_not_a_hang():
    def asks(x, h):
        return input("h? ")

    result = ex.check("split_heads", asks)
    assert result.status == "error" and "EOFError" in result.message
    assert ex.check("split_heads", _retyped("split_heads")).passed


def test_calling_the_check_inside_the_function_is_explained():
    def recursive(x, h):
        return ex.check("split_heads", recursive)

    result = ex.check("split_heads", recursive)
    assert result.status == "error" and "exercises.check" in result.message
    assert ex.EXERCISES["split_heads"].hint not in result.message  # its own message says it all
    assert "CheckedInside" not in result.message  # the engine's own exception: no class path


def test_a_function_that_cannot_travel_is_explained():
    lock = threading.Lock()

    def uses_a_lock(x, h):
        with lock:
            return x

    result = ex.check("split_heads", uses_a_lock)
    assert result.status == "error" and "_thread.lock" in result.message  # the object that cannot go across


# ---------------------------------------------------------------------------------------------
# Diagnoses: each usual mistake is named
# ---------------------------------------------------------------------------------------------


def _raise(exc):
    def fn(*args):
        raise exc

    return fn


def _no_transpose(x, h):
    return np.ones((2, 37)) @ np.ones((41, 4))  # q @ k without .T: 37 against 41


def _typo(x, h):
    return x.reshpe(h, -1)


def _past_the_end(x, h):
    return np.zeros(23)[29]


def _undefined(x, h):
    return xx_unset  # noqa: F821


@pytest.mark.parametrize(
    ("fn", "read"),
    [(_no_transpose, ["37", "41"]), (_typo, ["reshpe"]), (_past_the_end, ["29", "23"]), (_undefined, ["xx_unset"])],
    ids=["matmul", "attribute", "index", "name"],
)
def test_the_usual_slips_are_said_with_what_the_exception_names_not_in_english(fn, read):
    """A matmul whose sizes disagree, a misspelt method, an index past the end, an undefined name: the sizes and
    names numpy or Python gives, without its English line; the learner's line and the exercise's hint as always."""
    result = ex.check("split_heads", fn)
    line = inspect.getsource(fn).splitlines()[1].split("#")[0].strip()
    english = re.search(r"Error|operand|out of bounds|not defined", result.message)
    assert result.status == "error" and not english, result.message
    assert all(word in result.message for word in read) and line in result.message, result.message
    assert ex.EXERCISES["split_heads"].hint in result.message, result.message


def test_another_slip_keeps_its_english_line():
    result = ex.check("split_heads", lambda x, h: np.ones((2, 3)) + np.ones(4))
    assert result.status == "error" and "ValueError: operands could not be broadcast" in result.message


def test_returning_a_function_is_named():
    result = ex.check("split_heads", lambda x, h: np.reshape)
    assert result.status == "wrong" and "reshape" in result.message and result.mistakes == ()


@pytest.mark.parametrize("exc", [GeneratorExit(), SystemExit(3), KeyboardInterrupt(), RecursionError(), MemoryError()])
def test_base_exceptions_are_reported(exc):
    result = ex.check("split_heads", _raise(exc))
    assert result.status == "error" and result.message.startswith("运行出错")
    # named: a MemoryError raised by the function itself is no lack of memory (numpy's, with a shape, is said in
    # Chinese: test_a_huge_array_names_its_shape_and_the_line_not_numpy_s_error)
    assert type(exc).__name__ in result.message, result.message
    own_advice = isinstance(exc, (SystemExit, RecursionError, MemoryError))  # not the exercise's reshape hint
    assert (ex.EXERCISES["split_heads"].hint in result.message) != own_advice, result.message


def test_a_float32_result_is_told_to_use_float64():
    def f32_loop(x, w_q, w_k, w_v, w_o, h):
        return _loop()(*(a.astype(np.float32) for a in (x, w_q, w_k, w_v, w_o)), h).astype(np.float32)

    result = ex.check("multi_head_attention_loop", f32_loop)
    assert result.status == "wrong" and result.mistakes == ("float32",)


def test_float32_inside_a_float64_result_says_use_float64():
    """Not 「应为 0.1859，你的是 0.1859」: the learner is told the difference is float32 round-off."""

    def mixed(x, w_q, w_k, w_v, w_o, h):
        return _loop()(*(a.astype(np.float32) for a in (x, w_q, w_k, w_v, w_o)), h).astype(np.float64)

    result = ex.check("multi_head_attention_loop", mixed)
    assert result.status == "wrong" and result.mistakes == ("float32",) and "float64" in result.message
    want, got = re.findall(r"-?\d+\.\d+", result.message)[:2]  # where it differs: the expected, then theirs
    assert want != got
    (said,) = re.findall(r"\d+e-\d+", result.message)  # the largest relative error it names
    assert 1e-9 < float(said) < 1e-4  # float32's order, computed from this result, not a fixed 1e-5


def test_round_off_difference_says_precision_not_same_number_twice():
    def nearly(x, w_q, w_k, w_v, w_o, h):
        return _loop()(x, w_q, w_k, w_v, w_o, h) * (1 + 3e-6)

    result = ex.check("multi_head_attention_loop", nearly)
    assert result.status == "wrong" and result.mistakes == ("float32",)
    want, got = re.findall(r"-?\d+\.\d+", result.message)[:2]
    assert want != got


def test_odd_dtypes_get_the_right_message():
    """Complex, object, text and boolean arrays: four different diagnoses, none the generic 'not numbers'."""
    odd = [np.ones((8, 12, 64), dtype=complex), np.array([np.ones(3), np.ones(2)], dtype=object),
           np.array(["x"]), np.ones((8, 12, 64), dtype=bool)]
    results = [ex.check("split_heads", lambda x, h, value=value: value) for value in odd]
    assert {r.status for r in results} == {"wrong"}
    assert len({r.message for r in results}) == 4
    assert not any("ndarray" in r.message for r in results)  # the fallback names the type
    assert str(odd[0].dtype) in results[0].message and "object" in results[1].message
    assert sum("np.stack" in r.message for r in results) == 1  # only where several arrays were returned


@pytest.mark.parametrize("name", NAMES)
def test_unfilled_stub_is_not_an_error(name):
    result = ex.check(name, stub)
    assert result.status == "todo" and not result.passed
    assert result.message.startswith("还没实现") and ex.EXERCISES[name].learner_name in result.message
    assert f'exercises.spec("{name}")' in result.message and f'exercises.show_solution("{name}")' in result.message
    assert repr(result) == result.message  # what the notebook cell shows


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
    assert ex.check("split_heads", lambda x, h: None).mistakes == ("no_return",)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", [3, np.ones((2, 2)), "my_split_heads", None])
def test_not_a_function(name, value):
    """Passing the function's result (or its name) instead of the function gets a hint about the parentheses."""
    result = ex.check(name, value)
    assert result.status == "error" and f"check(\"{name}\", {ex.EXERCISES[name].learner_name})" in result.message


def test_split_heads_forgot_transpose():
    d_k = head_width(D, H)
    result = ex.check("split_heads", lambda x, h: x.reshape(x.shape[0], h, -1))
    assert result.status == "wrong" and result.mistakes == ("transpose",)
    assert re.findall(r"\([\d, ]+\)", result.message)[:2] == [f"({H}, 12, {d_k})", f"(12, {H}, {d_k})"]


def test_split_heads_reshape_without_transpose():
    result = ex.check("split_heads", lambda x, h: x.reshape(h, x.shape[0], -1))
    assert result.mistakes == ("reshape_without_transpose",)


def test_split_heads_strided_columns():
    result = ex.check("split_heads", lambda x, h: x.reshape(x.shape[0], -1, h).transpose(2, 0, 1))
    assert result.mistakes == ("strided",)


def test_split_heads_swapped_last_axes_and_unsplit():
    """Each wrong shape gets the §3 shape question's own diagnosis of that shape."""
    n, d_k = 12, head_width(D, H)
    swapped = ex.check("split_heads", lambda x, h: x.reshape(x.shape[0], h, -1).transpose(1, 2, 0))
    assert split_heads_shape_mistake((H, d_k, n), n, H, d_k) in swapped.message
    unsplit = ex.check("split_heads", lambda x, h: x)
    assert split_heads_shape_mistake((n, D), n, H, d_k) in unsplit.message
    assert swapped.mistakes == unsplit.mistakes == ("shape",)


def test_each_split_heads_shape_has_its_own_diagnosis():
    n, h, d_k = 5, 4, 3
    shapes = [(n, h, d_k), (h, d_k, n), (n, h * d_k), (h, n, h * d_k), (n, h), (d_k, h, n)]
    assert len({split_heads_shape_mistake(shape, n, h, d_k) for shape in shapes}) == len(shapes)


def test_a_function_that_modifies_its_input_cannot_change_the_expected_answer():
    """It gets copies: the answer is computed from the inputs as they were."""

    def scribble(x, h):
        n, d = x.shape
        out = x.reshape(n, h, d // h).transpose(1, 0, 2).copy()
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
    ("kwargs", "mistake"),
    [
        ({"scale": False}, "no_scale"),
        ({"w_o": False}, "no_w_o"),
        ({"axis": 0}, "softmax_axis"),
        ({"heads": 1}, "one_head"),
        ({"strided": True}, "strided"),
    ],
)
def test_mha_loop_mistakes_are_named(kwargs, mistake):
    result = ex.check("multi_head_attention_loop", _loop(**kwargs))
    assert result.status == "wrong" and result.mistakes == (mistake,)


def test_named_mistakes_travel_with_the_result_and_into_the_progress_file():
    """The class report counts named mistakes: the checker names each one it recognises."""
    from lesson_lib.practice import progress

    assert ex.check("split_heads", lambda x, h: x.reshape(x.shape[0], h, -1)).mistakes == ("transpose",)
    assert ex.check("multi_head_attention_loop", _loop(scale=False)).mistakes == ("no_scale",)
    assert ex.check("count_multiplies", lambda n, d, h: 3 * n * d * d + 2 * n * n * d).mistakes == ("no_w_o",)
    saved = progress.default_progress().data["exercises"]["count_multiplies"]
    assert saved["mistakes"] == ["no_w_o"] and "3 * n * d * d + 2 * n * n * d" in saved["source"]  # a lambda: its line


def test_mha_loop_right_answers():
    assert ex.check("multi_head_attention_loop", _loop()).passed
    assert ex.check("multi_head_attention_loop", _loop(tuple_out=True)).passed  # (out, weights) is accepted


def test_mha_loop_shapes():
    def per_head(x, w_q, w_k, w_v, w_o, h):
        return np.zeros((h, x.shape[0], x.shape[1] // h))

    assert ex.check("multi_head_attention_loop", per_head).mistakes == ("no_concat",)
    one = ex.check("multi_head_attention_loop", lambda x, *w: np.zeros((x.shape[0], x.shape[1] // w[-1])))
    assert one.mistakes == ("one_head_only",)


def test_mha_loop_wrong_values_say_where():
    result = ex.check("multi_head_attention_loop", lambda x, *w: np.zeros_like(x))
    assert result.mistakes == ("values",)
    n, d = (int(v) for v in re.search(r"n=(\d+), d_model=(\d+)", result.message).groups())  # the case
    row, col = (int(v) for v in re.search(r"\((\d+), (\d+)\)", result.message).groups())  # where it differs
    assert row < n and col < d


@pytest.mark.parametrize(
    ("fn", "mistake"),
    [
        (lambda n, d, h: 2 * n * n * d, "no_projections"),
        (lambda n, d, h: 4 * n * d * d, "no_scores"),
        (lambda n, d, h: 3 * n * d * d + 2 * n * n * d, "no_w_o"),
        (lambda n, d, h: (4 * n * d * d + 2 * n * n * d) * h, "times_h"),
        (lambda n, d, h: 4 * n * d * d + 2 * n * n * d + 3 * h * n * n, "softmax_counted"),
        (lambda n, d, h: 4 * n * d * d + 2 * n * n * (d // h), "one_head"),
        (lambda n, d, h: 12345, "other"),
    ],
)
def test_count_mistakes_are_named(fn, mistake):
    result = ex.check("count_multiplies", fn)
    assert result.status == "wrong" and result.mistakes == (mistake,)


def test_count_accepts_numeric_types_but_not_text():
    assert ex.check("count_multiplies", lambda n, d, h: float(4 * n * d * d + 2 * n * n * d)).passed
    assert ex.check("count_multiplies", lambda n, d, h: np.int64(4 * n * d * d + 2 * n * n * d)).passed
    assert not ex.check("count_multiplies", lambda n, d, h: str(4 * n * d * d + 2 * n * n * d)).passed


@pytest.mark.parametrize("call", [lambda name: ex.check(name, stub), ex.spec, ex.show_solution],
                         ids=["check", "spec", "show_solution"])
def test_a_typo_in_the_exercise_name_is_said_in_the_checkers_box_with_the_closest_name(call):
    """A learner's typo gets the checker's message box, not a KeyError's traceback; nothing is recorded for it."""
    from lesson_lib.practice import progress

    result = call("split_head")
    assert result.status == "error" and result.message.count("'split_heads'") == 2  # the guess, then the list
    assert "lesson-exercise-error" in result._repr_html_()
    assert "split_head" not in progress.default_progress().data["exercises"]
    assert [call("nope").message.count(f"'{name}'") for name in NAMES] == [1] * len(NAMES)  # no guess: the list


def test_the_stub_put_back_after_a_pass_says_the_pass_is_kept(monkeypatch, tmp_path):
    """Restart & Run All with the stub restored: still todo, and the message goes on to say the earlier pass stands."""
    from lesson_lib.practice import progress

    monkeypatch.setenv("LESSON_PROGRESS_FILE", str(tmp_path / "progress.json"))
    fresh = ex.check("split_heads", stub)
    assert ex.check("split_heads", _retyped("split_heads")).passed
    again = ex.check("split_heads", stub)
    assert again.status == "todo" and again.message.startswith(fresh.message) and again.message != fresh.message
    assert progress.default_progress().entry("split_heads")["passed"]


@pytest.mark.parametrize("off", [0.5, 1e-6, -0.25])
def test_a_float_count_is_echoed_exactly_and_said_to_be_no_whole_number(off):
    """54,988,800.5 used to be echoed as 5.49888e+07, the answer's own digits: now every digit it has."""
    right = costs.count(50, D, H).matmul_total  # the first case
    result = ex.check("count_multiplies", lambda n, d, h: 4 * n * d * d + 2 * n * n * d + off)
    echoed = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d+", result.message)]
    assert echoed == [right + off] and result.mistakes == ("other",)
    near_int = ex.check("count_multiplies", lambda n, d, h: 4 * n * d * d + 2 * n * n * d + 1).message
    assert len(re.sub(r"[\d,.]+", "", result.message)) > len(re.sub(r"[\d,.]+", "", near_int))  # says more


def _uncommented(source: str) -> str:
    """A cell with every commented line of code uncommented, as Ctrl + / does (prose comments start in Chinese)."""
    return re.sub(r"^(\s*)# (?=[ -~])", r"\1", source, flags=re.M)


def _code_cells() -> list[str]:
    build = _build_notebook()
    return [c["source"] for src, *_ in build.NOTEBOOKS.values() for c in build.source_cells(src=src)
            if c["kind"] == "code"]


def test_every_scaffold_uncommented_is_python():
    """A scaffold's placeholders are ``...``: uncommented, the cell runs (「……」 was a SyntaxError in English)."""
    cells = _code_cells()
    assert sum("def my_" in c for c in cells) == len(NAMES)  # the exercises' cells are among them
    from IPython.core.inputtransformer2 import TransformerManager  # %matplotlib as IPython runs it

    for cell in cells:
        ast.parse(TransformerManager().transform_cell(_uncommented(cell)))


def test_a_scaffold_run_unchanged_is_told_what_is_missing():
    """Exercise 2's scaffold uncommented and run as it is reaches the checker, which names its ``...`` lines."""
    cell = next(c for c in _code_cells() if "def my_multi_head_attention_loop" in c)
    text = _uncommented(cell).split("exercises.check(")[0]
    linecache.cache["<scaffold>"] = (len(text), None, text.splitlines(True), "<scaffold>")  # as IPython keeps it
    namespace = {"display": lambda *a: None, "__name__": __name__}
    exec(compile(text, "<scaffold>", "exec"), namespace)
    fn = namespace["my_multi_head_attention_loop"]
    result = ex.check("multi_head_attention_loop", fn)
    source = inspect.getsource(fn).splitlines()
    named = [int(n) for n in numbers_in(result.message.split("...")[0])]
    assert result.status == "todo" and named == [i + 1 for i, line in enumerate(source) if "..." in line]
    numpy_ellipsis = ex.check("split_heads", lambda x, h: x[..., :].reshape(len(x), h, -1).transpose(1, 0, 2))
    assert numpy_ellipsis.passed  # x[..., i] is numpy's, no placeholder


def test_a_print_flood_shows_its_first_lines_then_how_many_were_left_out(capsys):
    def chatty(n, d_model, h):
        for i in range(2000):  # 5 cases: 10,000 lines, far below the worker's 1 MB
            print("€", i)
        return 4 * n * d_model * d_model + 2 * n * n * d_model

    assert ex.check("count_multiplies", chatty).passed  # the verdict is as it was
    shown = capsys.readouterr().out.splitlines()
    assert shown[:worker.OUTPUT_LINES] == [f"€ {i}" for i in range(worker.OUTPUT_LINES)]
    assert [numbers_in(line) for line in shown[worker.OUTPUT_LINES:]] == [[10_000 - worker.OUTPUT_LINES]]


def test_a_long_line_of_output_is_cut_between_characters(capsys):
    def one_long_line(n, d_model, h):
        print("€" * 3000)  # 3 bytes each in UTF-8, 9,000 in all: more than the worker shows
        return 4 * n * d_model * d_model + 2 * n * n * d_model

    assert ex.check("count_multiplies", one_long_line).passed
    first, *rest = capsys.readouterr().out.splitlines()
    assert first == "€" * (worker.OUTPUT_BYTES // 3)  # whole characters only, no U+FFFD
    assert [numbers_in(line) for line in rest] == [[5]]  # the 5 cases' lines, none shown whole


def test_results_show_pass_and_fail_colours():
    passed = ex.check("split_heads", _retyped("split_heads"))._repr_html_()
    wrong = ex.check("split_heads", lambda x, h: x)._repr_html_()
    todo = ex.check("split_heads", stub)._repr_html_()
    assert "--jp-success-color1" in passed and "lesson-exercise-passed" in passed
    assert "--jp-warn-color1" in wrong and "lesson-exercise-wrong" in wrong
    assert "--jp-success-color1" not in todo and "--jp-warn-color1" not in todo and "lesson-exercise-todo" in todo




def test_switching_exercises_keeps_the_warm_worker():
    """§3's and §4's exercises live in different modules: going back and forth between them reuses the same worker
    (a restart would cost the learner a fresh interpreter)."""
    ex.check("split_heads", stub_wrong_split)
    ex.check("count_multiplies", stub_wrong_count)
    first = worker._child.process
    for name, fn in [("split_heads", stub_wrong_split), ("count_multiplies", stub_wrong_count)] * 2:
        assert ex.check(name, fn).status == "wrong"
        assert worker._child.process is first


def stub_wrong_split(x, h):
    return x


def stub_wrong_count(n, d_model, h):
    return 0
