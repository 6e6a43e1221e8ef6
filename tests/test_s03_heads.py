"""lesson_lib.sections.s03_heads (§3): every shape on the way through multi-head attention, the forgotten
transpose (checked against C order, not numpy's reshape), and heads that only mix at W^O; then, each under its own
heading, the numbers its prose states and its questions (s03_heads.toml). Its code exercises: test_exercises."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import (
    CJK,
    numbers_in,
    prose_before,
    sentence_with,
    sentences,
)
from own_answers import misjudged, section_questions

from lesson_lib import paper
from lesson_lib.attention import head_width, merge_heads, multi_head_attention, split_heads
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
    with pytest.raises(AttentionInputError, match=r"d_model=512\D+h=3\b") as exc:
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
    boxes = [re.fullmatch(rf"\w+ (\d+)\nd_k = {d_k}", t) for t in texts]  # a head's number and width
    head_boxes = [int(m.group(1)) for m in boxes if m]
    assert head_boxes == [*range(1, min(h, 4) + 1)] + ([h] if h > 4 else [])
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
    assert lines[0].endswith(" [1]")  # correct: head 1 holds only its own columns
    assert lines[1].endswith(f" {owners}")  # forgotten: other heads' columns
    assert lines[2].endswith(f" {tokens}")  # ... from the first tokens only


def test_heads_mix_text_states_the_identity():
    text = heads.heads_mix_text(n=4, d_model=32, h=4)
    values = [line.split("：", 1)[1] for line in text.splitlines()]
    assert re.match(r"< 1e-12\W", values[0])  # Concat·W^O = Σ head_i·W^O_i up to round-off
    assert re.match(r"0\W", values[1])  # head 1 unchanged when the other heads' W^Q change
    others = heads.heads_mix_only_at_wo(n=4, d_model=32, h=4)["others_change"]
    assert values[2] == f"{others:.2f}"


ROUND_OFF = {"max_difference": 0.0, "head1_change": 3e-16, "others_change": 2.5}
REAL = {"max_difference": 2e-3, "head1_change": 0.5, "others_change": 0.0}


@pytest.mark.parametrize(("check", "patterns"), [
    (ROUND_OFF, [r"< 1e-12\W", r"< 1e-12\W", r"2\.50$"]),
    (REAL, [r"2\.0e-03\W", r"0\.50$", r"0\W"]),
])
def test_heads_mix_text_prints_bounds_not_round_off_digits(monkeypatch, check, patterns):
    """Round-off is printed as a bound (its digits follow the BLAS kernel); a real difference is not hidden."""
    monkeypatch.setattr(heads, "heads_mix_only_at_wo", lambda **_: check)
    values = [line.split("：", 1)[1] for line in heads.heads_mix_text().splitlines()]
    assert all(re.match(p, v) for p, v in zip(patterns, values, strict=True)), values


def test_a_real_difference_is_not_called_round_off(monkeypatch):
    def first_verdict(check):
        monkeypatch.setattr(heads, "heads_mix_only_at_wo", lambda **_: check)
        value = heads.heads_mix_text().splitlines()[0].split("：", 1)[1]
        return re.sub(r"^[<\s\d.e+-]+", "", value)  # the words after the number

    assert first_verdict(ROUND_OFF) != first_verdict(REAL)


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


# ---------------------------------------------------------------------------------------------
# The prose: numbers read back from the section's sentences (found by structure) and recomputed
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def markdown(cells) -> str:
    return "\n\n".join(c["source"] for c in cells if c["kind"] == "md")


D, H = paper.BASE_D_MODEL, paper.BASE_HEADS
D_K = head_width(D, H)


def test_section_3_says_what_the_batch_cell_prints(markdown, cells):
    """§3: 「(B, n, d_model)」 and the PyTorch view(B, n, h, d_k).transpose(1, 2) give the kernel's batched shapes."""
    assert "(B, n, d_model)" in markdown and ".view(B, n, h, d_k).transpose(1, 2)" in markdown
    x = np.zeros((2, 6, D))
    assert split_heads(x, H).shape == (2, H, 6, D_K) and merge_heads(split_heads(x, H)).shape == x.shape
    said = sentences(prose_before(cells, "heads_mix_text("))[-1]  # 再改动其他 7 个头的查询矩阵，看头 1 变不变
    assert numbers_in(said) == [H - 1, 1], said


def test_section_3_head_1_does_not_change():
    assert heads.heads_mix_only_at_wo(n=5, d_model=D, h=H)["head1_change"] == 0.0
    line = sentence_with(heads.heads_mix_text(n=5, d_model=D, h=H), "W^Q")  # after changing the others' W^Q
    assert numbers_in(line) == [1, 0.0], line  # head 1 changed by 0


def test_attention_ignores_order_until_positions_are_added():
    """§3 「方向与位置」: reversing the tokens only reverses the outputs; with a position table it does not."""
    for n, d, h in [(6, 512, 8), (5, 12, 3), (9, 16, 1)]:
        check = heads.order_and_position(n=n, d_model=d, h=h, seed=n)
        assert check["without_position"] < heads.ROUNDOFF and check["with_position"] > 0.1
    check = heads.order_and_position(n=6, d_model=512, h=8)
    reversed_only, with_position = heads.order_text(n=6, d_model=512, h=8).splitlines()
    assert numbers_in(reversed_only) == [6, heads.ROUNDOFF] and f"< {heads.ROUNDOFF:.0e}" in reversed_only
    assert numbers_in(with_position) == [round(check["with_position"], 2)]


def test_section_3_residual_stream_keeps_the_token_and_adds_each_head():
    """§3: 新向量 = X + MultiHead(X), and MultiHead(X) = Σ_i head_i W^O_i: each head writes its own share."""
    rng = np.random.default_rng(0)
    n, d, h = 5, 16, 4
    x = rng.standard_normal((n, d))
    w_q, w_k, w_v, w_o = (rng.standard_normal((d, d)) / 4 for _ in range(4))
    out, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, h)
    heads_out = weights @ split_heads(x @ w_v, h)  # (h, n, d_k)
    shares = [heads_out[i] @ w_o[i * d // h:(i + 1) * d // h] for i in range(h)]  # head_i W^O_i, (n, d) each
    np.testing.assert_allclose(out, sum(shares), atol=1e-12)
    np.testing.assert_allclose((x + out) - x, sum(shares), atol=1e-12)


# ---------------------------------------------------------------------------------------------
# The section's questions (sections/s03_heads.toml), each against the answers kept in its data
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question", section_questions("s03_heads.toml"), ids=lambda q: q.id)
def test_each_question_judges_its_own_answers(question, monkeypatch):
    assert misjudged(question, monkeypatch) == []
