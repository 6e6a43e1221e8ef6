"""lesson_lib.sections.s03_heads (§3): every shape on the way through multi-head attention, the forgotten
transpose (checked against C order, not numpy's reshape), and heads that only mix at W^O."""

from __future__ import annotations

import re

import pytest
from helpers import CJK

from lesson_lib.checks import AttentionInputError
from lesson_lib.sections import s03_heads as heads

CASES = [(6, 512, 8), (4, 16, 4), (3, 12, 3), (5, 64, 1), (2, 64, 64), (7, 24, 6)]


def expected_shapes(n, d, h):
    d_k = d // h
    return [(n, d), (n, d), (n, h, d_k), (h, n, d_k), (h, n, d_k), (n, h, d_k), (n, d), (n, d)]


@pytest.mark.parametrize(("n", "d", "h"), CASES)
def test_shape_steps_shapes(n, d, h):
    steps = heads.shape_steps(n, d, h)
    assert [shape for _, shape, _ in steps] == expected_shapes(n, d, h)
    assert all(code and title for code, _, title in steps)
    assert [steps[i][0] for i in (0, 3, -1)] == ["X", "split_heads(Q, h)", "concat @ W_O"]


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
    lambda: heads.transpose_text(6, 512, 3),
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
    for line, (code, shape, _) in zip(lines, steps):
        assert code in line and str(shape) in line
    assert "(4, 5, 16)" in text


@pytest.mark.parametrize(("n", "d", "h", "owners", "tokens"), [
    (6, 512, 8, [1, 2, 3, 4, 5, 6], [1] * 6),  # head 1 gets the first 6·64 numbers: six blocks of token 1
    (6, 12, 3, [1, 2, 3], [1, 1, 1, 2, 2, 2]),  # 6·4 numbers: two whole tokens
])
def test_transpose_text_contrasts_the_two_splits(n, d, h, owners, tokens):
    """The forgotten transpose, counted in C order (flat index r·d_k of head 1's row r), not by numpy's reshape."""
    lines = heads.transpose_text(n=n, d_model=d, h=h).splitlines()
    d_k = d // h
    assert owners == sorted({(r * d_k % d) // d_k + 1 for r in range(n)})
    assert tokens == [r * d_k // d + 1 for r in range(n)]
    # 1-based, as the lesson counts heads and words
    assert lines[0].endswith("头 [1]")  # correct: head 1 holds only its own columns
    assert lines[1].endswith(f"头 {owners}")  # forgotten: other heads' columns
    assert lines[2].endswith(f"词元 {tokens}")  # ... from the first tokens only


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
    (lambda: heads.transpose_text(n=0), ["n", "0", "≥ 1"]),
    (lambda: heads.order_and_position(seed=-1), ["seed", "-1"]),
    (lambda: heads.heads_mix_only_at_wo(n=2.5), ["n", "2.5"]),
    (lambda: heads.plot_figure_11_1(d_model=0), ["d_model", "0"]),
], ids=["shape_steps n=0", "d_model=-512", "transpose n=0", "seed=-1", "mix n=2.5", "figure d_model=0"])
def test_arguments_are_checked_in_chinese(raises_chinese, call, fragments):
    raises_chinese(call, *fragments)
