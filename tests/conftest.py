"""Fixtures shared by the unit tests (the browser test has its own conftest in tests/e2e)."""

import os
import sys
import tempfile
from pathlib import Path

import pytest

# The benchmarks' fast attention path is tested for parity with the lesson's kernel; it is not part of lesson_lib.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

# The learner's progress file: never the developer's own (kernels started by nbval and the browser test
# inherit this too).
os.environ["LESSON_PROGRESS_FILE"] = str(Path(tempfile.mkdtemp(prefix="day11-progress-")) / "progress.json")


@pytest.fixture
def plt():
    """matplotlib.pyplot on the Agg backend, with rcParams restored and figures closed afterwards."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as pyplot

    with matplotlib.rc_context():
        yield pyplot
        pyplot.close("all")


@pytest.fixture
def kernel_calls(monkeypatch):
    """``kernel_calls(module)`` wraps that module's scaled_dot_product_attention and returns the list of
    query shapes it is called with, to prove a model's attention goes through the lesson's kernel."""

    def spy_on(module):
        calls = []
        kernel = module.scaled_dot_product_attention

        def spy(q, k, v, mask=None):
            calls.append(q.shape)
            return kernel(q, k, v, mask)

        monkeypatch.setattr(module, "scaled_dot_product_attention", spy)
        return calls

    return spy_on


@pytest.fixture
def raises_chinese():
    """``raises_chinese(call, *fragments, cls=ValueError)``: ``call()`` raises ``cls`` with a Chinese message
    containing every fragment; returns the message."""
    from helpers import assert_chinese_message

    def check(call, *fragments, cls=ValueError):
        with pytest.raises(cls) as excinfo:
            call()
        return assert_chinese_message(str(excinfo.value), *fragments)

    return check
