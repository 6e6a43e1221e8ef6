"""lesson_lib.sections.s03_heads (§3): every shape on the way through multi-head attention, owners of each number,
the forgotten transpose, and heads that only mix at W^O.

What a plain reshape does is derived here from C order (flat index = a·n·d_k + b·d_k + e), not from
numpy's reshape, so the "忘了 transpose" picture is checked against an independent account.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import CJK
from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib.attention import split_heads
from lesson_lib.checks import AttentionInputError
from lesson_lib.sections import s03_heads as heads

CASES = [(6, 512, 8), (4, 16, 4), (3, 12, 3), (5, 64, 1), (2, 64, 64), (7, 24, 6)]


def expected_shapes(n, d, h, forget):
    d_k = d // h
    if forget:
        return [(n, d), (n, d), (h, n, d_k), (h, n, d_k), (n, d), (n, d)]
    return [(n, d), (n, d), (n, h, d_k), (h, n, d_k), (h, n, d_k), (n, h, d_k), (n, d), (n, d)]


def reshape_owner_token(n, d, h):
    """Owner head and token of every number after reshaping (n, d) straight to (h, n, d_k)."""
    d_k = d // h
    a, b, e = np.indices((h, n, d_k))
    flat = a * n * d_k + b * d_k + e  # position in the row-major (n, d) buffer
    return (flat % d) // d_k, flat // d  # column block of that position, row of that position


@pytest.mark.parametrize("forget", [False, True])
@pytest.mark.parametrize(("n", "d", "h"), CASES)
def test_shape_steps_shapes(n, d, h, forget):
    steps = heads.shape_steps(n, d, h, forget_transpose=forget)
    assert [s.shape for s in steps] == expected_shapes(n, d, h, forget)
    for s in steps:
        assert s.owner.shape == s.shape and s.token.shape == s.shape, s.title
        assert s.title and s.code
    assert steps[0].code == "X" and steps[-1].code == "concat @ W_O"


@pytest.mark.parametrize(("n", "d", "h"), CASES)
def test_correct_split_gives_each_head_only_its_own_columns_and_every_token(n, d, h):
    steps = heads.shape_steps(n, d, h)
    per_token, split = steps[2], steps[3]
    assert per_token.code == "Q.reshape(n, h, d_k)" and per_token.shape == (n, h, d // h)
    assert split.code == "split_heads(Q, h)" and split.shape == (h, n, d // h)
    for i in range(h):
        assert (split.owner[i] == i).all()
        assert (split.token[i] == np.arange(n)[:, None]).all()  # row t of every head is token t
        assert (per_token.owner[:, i, :] == i).all()
    for t in range(n):
        assert (per_token.token[t] == t).all()
    # after attention every output row mixes tokens; after W^O heads mix too
    assert (steps[4].token == -1).all() and (steps[4].owner == split.owner).all()
    back = steps[5]  # transposed back: token axis first, head i still in slot i of every token
    assert back.shape == (n, h, d // h) and all((back.owner[:, i, :] == i).all() for i in range(h))
    assert (steps[6].owner == np.arange(d) // (d // h)).all()  # Concat puts head i back in column block i
    assert (steps[7].owner == -1).all() and (steps[7].token == -1).all()


@pytest.mark.parametrize(("n", "d", "h"), CASES)
def test_forgotten_transpose_owners_follow_c_order(n, d, h):
    steps = heads.shape_steps(n, d, h, forget_transpose=True)
    wrong = steps[2]
    assert wrong.code == "Q.reshape(h, n, d_k)" and "transpose" in wrong.title
    owner, token = reshape_owner_token(n, d, h)
    assert (wrong.owner == owner).all()
    assert (wrong.token == token).all()


def test_forgotten_transpose_default_head_one_is_a_jumble_of_one_token():
    """n = 6, d = 512, h = 8: head 1 gets the first 6·64 = 384 numbers, all from token 0, six column blocks."""
    wrong = heads.shape_steps(6, 512, 8, forget_transpose=True)[2]
    assert set(np.unique(wrong.owner[0])) == {0, 1, 2, 3, 4, 5}
    assert set(np.unique(wrong.token[0])) == {0}
    right = heads.shape_steps(6, 512, 8)[3]
    assert set(np.unique(right.owner[0])) == {0}
    assert set(np.unique(right.token[0])) == set(range(6))


@settings(max_examples=40, deadline=None)
@given(h=st.sampled_from([1, 2, 3, 4, 6, 8]), d_k=st.integers(1, 5), n=st.integers(2, 6), seed=st.integers(0, 99))
def test_wrong_split_same_shape_other_numbers(h, d_k, n, seed):
    x = np.random.default_rng(seed).standard_normal((n, h * d_k))
    wrong, right = heads.wrong_split(x, h), split_heads(x, h)
    assert wrong.shape == right.shape == (h, n, d_k)
    for a in range(h):
        assert (right[a] == x[:, a * d_k : (a + 1) * d_k]).all()  # head a = column block a
        assert (wrong[a] == x.ravel()[a * n * d_k : (a + 1) * n * d_k].reshape(n, d_k)).all()  # next n·d_k numbers
    assert np.array_equal(wrong, right) == (h == 1)


@pytest.mark.parametrize(("d_model", "h"), [(512, 8), (64, 2), (64, 64), (48, 3)])
def test_heads_mix_only_at_wo(d_model, h):
    r = heads.heads_mix_only_at_wo(n=5, d_model=d_model, h=h)
    assert set(r) == {"max_difference", "head1_change", "others_change"}
    assert r["max_difference"] < 1e-9  # Concat·W^O = Σ head_i W^O_i up to rounding
    assert r["head1_change"] == 0.0  # head 1's columns of W^Q untouched: head 1 cannot notice
    assert r["others_change"] > 1e-3


def test_heads_mix_only_at_wo_single_head():
    r = heads.heads_mix_only_at_wo(n=5, d_model=64, h=1)
    assert r["max_difference"] < 1e-9 and r["head1_change"] == 0.0


@pytest.mark.parametrize("call", [
    lambda: heads.shape_steps(6, 512, 3),
    lambda: heads.shape_steps(6, 512, 3, forget_transpose=True),
    lambda: heads.heads_mix_only_at_wo(5, 512, 3),
])
def test_bad_head_count_raises_kernel_chinese_error(call):
    with pytest.raises(AttentionInputError, match=r"d_model=512 不能平均分给 h=3 个头") as exc:
        call()
    assert "[1, 2, 4, 8, 16, 32, 64]" in str(exc.value)  # names the choices that work


# ---------------------------------------------------------------------------------------------
# Figures (warnings are errors: a missing CJK glyph fails the test)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", [1, 2, 4, 8, 16, 32, 64])
def test_plot_figure_11_1_one_box_per_shown_head(plt, h):
    fig = heads.plot_figure_11_1(512, h)
    if h in (8, 64):
        fig.canvas.draw()  # Chinese text and mathtext render without warnings
    texts = [t.get_text() for t in fig.axes[0].texts]
    d_k = 512 // h
    head_boxes = [t for t in texts if re.fullmatch(rf"头 \d+\nd_k = {d_k}", t)]
    want = [f"头 {i}\nd_k = {d_k}" for i in range(1, min(h, 4) + 1)] + ([f"头 {h}\nd_k = {d_k}"] if h > 4 else [])
    assert head_boxes == want
    assert f"Concat\n{h} × {d_k}\n= 512" in texts
    assert any(CJK.search(t) for t in texts)


def test_steps_text_lists_every_step_with_its_shape():
    text = heads.steps_text(n=5, d_model=64, h=4)
    steps = heads.shape_steps(n=5, d_model=64, h=4)
    lines = text.splitlines()[2:]  # under the header and its rule
    assert len(lines) == len(steps)
    for line, s in zip(lines, steps):
        assert s.code in line and str(s.shape) in line
    assert "(4, 5, 16)" in text


def test_transpose_text_contrasts_the_two_splits():
    lines = heads.transpose_text(n=6, d_model=512, h=8).splitlines()
    # 1-based, as the lesson counts heads and words
    assert lines[0].endswith("头 [1]")  # correct: head 1 holds only its own columns
    assert lines[1].endswith("头 [1, 2, 3, 4, 5, 6]")  # forgotten: six heads' columns (6·64 numbers = 6 blocks)
    assert lines[2].endswith("词元 [1, 1, 1, 1, 1, 1]")  # ... all from the first token


def test_heads_mix_text_states_the_identity():
    text = heads.heads_mix_text(n=4, d_model=32, h=4)
    assert text.splitlines()[:2] == [
        "Concat·W^O 与 Σ head_i·W^O_i 的最大差：< 1e-12，只是浮点舍入",
        "改动其他头的 W^Q 后，头 1 的输出变化：0（一位都没变）",
    ]
    others = heads.heads_mix_only_at_wo(n=4, d_model=32, h=4)["others_change"]
    assert text.splitlines()[2] == f"其他头自己的输出变化：{others:.2f}"


@pytest.mark.parametrize(("check", "lines"), [
    ({"max_difference": 0.0, "head1_change": 3e-16, "others_change": 2.5},
     ["< 1e-12，只是浮点舍入", "< 1e-12，只是浮点舍入", "2.50"]),
    ({"max_difference": 2e-3, "head1_change": 0.5, "others_change": 0.0},
     ["2.0e-03，不止是浮点舍入！", "0.50", "0（一位都没变）"]),
])
def test_heads_mix_text_prints_bounds_not_round_off_digits(monkeypatch, check, lines):
    """Round-off is printed as a bound (its digits follow the BLAS kernel); a real difference is not hidden."""
    monkeypatch.setattr(heads, "heads_mix_only_at_wo", lambda **_: check)
    assert [line.split("：", 1)[1] for line in heads.heads_mix_text().splitlines()] == lines


@pytest.mark.parametrize(("call", "fragments"), [
    (lambda: heads.shape_steps(n=0), ["n", "0", "≥ 1"]),
    (lambda: heads.shape_steps(d_model=-512), ["d_model", "-512"]),
    (lambda: heads.shape_steps(seed=-1), ["seed", "-1"]),
    (lambda: heads.heads_mix_only_at_wo(n=2.5), ["n", "2.5"]),
    (lambda: heads.plot_figure_11_1(d_model=0), ["d_model", "0"]),
    (lambda: heads.wrong_split(np.zeros((3, 8)), 0), ["h", "0"]),
], ids=["shape_steps n=0", "d_model=-512", "seed=-1", "mix n=2.5", "figure d_model=0",
        "wrong_split h=0"])
def test_arguments_are_checked_in_chinese(raises_chinese, call, fragments):
    raises_chinese(call, *fragments)
