"""Checks the unit tests share: ``from helpers import …`` (pytest puts tests/ on sys.path for these files)."""

import os
import re

import numpy as np
import pytest

CJK = re.compile(r"[\u4e00-\u9fff]")  # one Chinese character is enough to tell a Chinese message from an English one


def assert_chinese_message(message: str, *fragments) -> str:
    """``message`` is Chinese and contains ``str(fragment)`` for every fragment; returns it."""
    assert CJK.search(message), f"message is not Chinese: {message!r}"
    for fragment in fragments:
        assert str(fragment) in message, (fragment, message)
    return message


def make_inputs(n, d_model, lead=(), seed=0, dtype=np.float64, scale=1.0):
    """X (*lead, n, d_model) and four (d_model, d_model) weights, scaled so scores stay moderate."""
    rng = np.random.default_rng(seed)
    x = (scale * rng.standard_normal((*lead, n, d_model))).astype(dtype)
    ws = [(rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(dtype) for _ in range(4)]
    return x, ws


def causal(n):
    return np.tril(np.ones((n, n), dtype=bool))  # (n, n) query i may attend to keys 0..i


def require(available: bool, message: str) -> None:
    """Skip with ``message`` (say how to install what is missing) when not ``available``; in CI, fail instead
    (the same rule as tests/e2e: a CI run that silently skips the real-model tests proves nothing)."""
    if available:
        return
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


def load_npz(path) -> dict:
    """A reference fixture (.npz) as {name: array}, read at once so the file is closed."""
    with np.load(path) as data:
        return {key: data[key] for key in data.files}
