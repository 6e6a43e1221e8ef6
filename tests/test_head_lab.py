"""lesson_lib.sections.head_lab (§5) and the Pillow fast paths (plotting.render_lab_png, plotting.render_heads_png).

The lab's promises: the slider only offers head counts that divide d_model; for every h the
parameters and matmul multiplies stay put while softmax work grows as 3·h·n²; one fixed set of
parameters is only cut differently; the fast picture shows the same tiles in the same colours as
the matplotlib reference ``plot_heads``.
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from helpers import CJK

from lesson_lib.display import plotting
from lesson_lib.kernel.attention import AttentionInputError
from lesson_lib.sections import head_lab

N = len(head_lab.SENTENCE)  # 11 tokens
D = 512
CHOICES = [1, 2, 4, 8, 16, 32, 64]  # divisors of 512 = 2^9 up to 64


@pytest.fixture(scope="module")
def states():
    return {h: head_lab.lab_state(h) for h in CHOICES}


def decode(png: bytes) -> np.ndarray:
    from PIL import Image

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


# ---------------------------------------------------------------------------------------------
# Slider choices
# ---------------------------------------------------------------------------------------------


def test_head_choices_are_divisors_of_512_up_to_64():
    assert head_lab.head_choices() == CHOICES


@pytest.mark.parametrize(("d_model", "max_heads", "want"), [
    (768, 64, [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]),  # 768 = 2^8 · 3
    (6, 64, [1, 2, 3, 6]),
    (512, 16, [1, 2, 4, 8, 16]),
    (7, 64, [1, 7]),
])
def test_head_choices_other_widths(d_model, max_heads, want):
    assert head_lab.head_choices(d_model, max_heads) == want


# ---------------------------------------------------------------------------------------------
# lab_state
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", CHOICES)
def test_lab_state_numbers(states, h):
    s = states[h]
    assert s.h == h and s.d_k == D // h and s.d_k * h == D
    assert s.tokens == head_lab.SENTENCE
    assert s.weights.shape == (h, N, N)
    assert (s.weights >= 0).all()
    np.testing.assert_allclose(s.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert s.parameters == 4 * D * D == 1_048_576
    assert s.matmul_multiplies == 4 * N * D * D + 2 * N * N * D  # projections + QKᵀ + weights·V
    assert s.softmax_ops == 3 * h * N * N
    assert 0 <= s.mean_entropy_bits <= math.log2(N)


def test_costs_constant_except_softmax(states):
    assert len({s.parameters for s in states.values()}) == 1
    assert len({s.matmul_multiplies for s in states.values()}) == 1
    softmax = [states[h].softmax_ops for h in CHOICES]
    assert softmax == sorted(softmax) and softmax[-1] == 64 * softmax[0]


def test_same_parameters_only_cut_differently(states):
    """Σ_i √d_k · log w_i equals X W^Q (X W^K)ᵀ up to a per-row constant, whatever h is.

    log softmax(S_i) = S_i - c(row), and Σ_i √d_k·S_i = Σ_i Q_i K_iᵀ = Q Kᵀ: the full-width scores.
    So if every h cuts the same W^Q, W^K, this row-centred sum is the same matrix for every h.
    """
    def full_scores(s):
        z = (math.sqrt(s.d_k) * np.log(s.weights)).sum(axis=0)  # (n, n)
        return z - z.mean(axis=-1, keepdims=True)

    ref = full_scores(states[1])
    for h in CHOICES[1:]:
        np.testing.assert_allclose(full_scores(states[h]), ref, atol=1e-8, err_msg=f"h={h}")


def test_heads_differ_and_diversity(states):
    assert states[1].diversity_bits is None
    for h in CHOICES[1:]:
        d = states[h].diversity_bits
        assert 0 < d <= 1, h
        w = states[h].weights
        assert not np.allclose(w[0], w[1])  # different column blocks, different maps


@pytest.mark.parametrize("h", CHOICES)
def test_reading_names_d_k_in_chinese(states, h):
    r = states[h].reading
    assert f"d_k = {D // h}" in r
    assert CJK.search(r)
    if h > 1:
        assert f"{states[h].diversity_bits:.2f} 比特" in r
    if h not in (1, 8):
        assert f"8 头的 {h / 8:g} 倍" in r  # softmax work relative to the base model's 8 heads


def test_lab_state_is_deterministic_per_seed():
    a, b, c = head_lab.lab_state(8, seed=0), head_lab.lab_state(8, seed=0), head_lab.lab_state(8, seed=1)
    assert np.array_equal(a.weights, b.weights) and a.reading == b.reading
    assert not np.allclose(a.weights, c.weights)


def test_lab_state_other_tokens():
    s = head_lab.lab_state(4, tokens=["a", "b", "c"])
    assert s.weights.shape == (4, 3, 3) and s.softmax_ops == 3 * 4 * 9


@pytest.mark.parametrize("h", [3, 5, 7, 48, 0, -8, 2.0, "8"])
def test_lab_state_rejects_heads_that_do_not_divide_in_chinese(h):
    with pytest.raises(AttentionInputError) as exc:
        head_lab.lab_state(h)
    assert "头数" in str(exc.value) or "不能平均分给" in str(exc.value)
    assert CJK.search(str(exc.value))


# ---------------------------------------------------------------------------------------------
# summary_html and lab_png
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", CHOICES)
def test_summary_html(states, h):
    s = states[h]
    html = head_lab.summary_html(s)
    assert f"d_k = {D // h}" in html
    assert "1,048,576" in html
    assert f"{3 * h * N * N:,}" in html
    assert s.reading in html
    assert "<script" not in html.lower()
    assert not re.search(r"\bid\s*=", html)  # no ids: two lab widgets on a page must not clash
    ET.fromstring(f"<div>{html}</div>")  # balanced, well-formed markup


def test_render_png_same_size_for_every_h(states):
    """The page must not jump when the slider moves: one picture size for every h and every zoomed head."""
    sizes = {(h, z): decode(head_lab.lab_png(states[h], zoom=z)).shape for h in CHOICES for z in {1, h}}
    assert set(sizes.values()) == {(plotting.LAB_SIZE[1], plotting.LAB_SIZE[0], 3)}
    assert head_lab.lab_png(states[8]) == head_lab.lab_png(head_lab.lab_state(8))  # same h, same bytes
    assert head_lab.lab_png(states[8]) != head_lab.lab_png(states[16])
    assert head_lab.lab_png(states[8], zoom=1) != head_lab.lab_png(states[8], zoom=2)


def _zoom_cells(img, lay, n):
    x, y, c = *lay.zoom_origin, lay.zoom_cell
    rows, cols = np.indices((n, n))
    return img[y + rows * c + c // 2, x + cols * c + c // 2].astype(int)  # (n, n, 3) cell centres


@pytest.mark.parametrize("h,zoom", [(1, 1), (8, 3), (64, 64), (64, 17)])
def test_render_png_zoomed_head_is_that_heads_map(states, h, zoom):
    s = states[h]
    img = decode(head_lab.lab_png(s, zoom=zoom))
    lay = plotting.lab_layout(h, N, s.tokens)
    lut = plotting.colormap_lut("viridis")
    want = lut[np.rint(s.weights[zoom - 1] * 255).astype(int)].astype(int)
    assert np.array_equal(_zoom_cells(img, lay, N), want)
    assert lay.zoom_cell >= 20  # one row per token label, at every h


@pytest.mark.parametrize("h", [2, 16, 64])
def test_render_png_overview_tiles_every_head_and_frames_the_zoomed_one(states, h):
    s, zoom = states[h], h // 2
    img = decode(head_lab.lab_png(s, zoom=zoom))
    lay = plotting.lab_layout(h, N, s.tokens)
    lut = plotting.colormap_lut("viridis")
    c = lay.tile_cell
    rows, cols = np.indices((N, N))
    for k, (x, y) in enumerate(lay.tiles):
        got = img[y + rows * c + c // 2, x + cols * c + c // 2].astype(int)
        assert np.array_equal(got, lut[np.rint(s.weights[k] * 255).astype(int)].astype(int)), f"head {k + 1}"
        assert x + N * c <= plotting.LAB_SIZE[0] and y + N * c <= plotting.LAB_SIZE[1]
    x, y = lay.tiles[zoom - 1]
    assert tuple(img[y - 2, x + 5]) == plotting._HIGHLIGHT  # the red frame around the zoomed head
    x, y = lay.tiles[zoom]
    assert tuple(img[y - 2, x + 5]) == (255, 255, 255)  # and around no other


@pytest.mark.parametrize("zoom", [0, 9, -1])
def test_render_png_rejects_a_head_that_is_not_there_in_chinese(states, zoom):
    with pytest.raises(ValueError, match="1 到 8"):
        head_lab.lab_png(states[8], zoom=zoom)


# ---------------------------------------------------------------------------------------------
# Fast path vs reference: same tile layout, same colours
# ---------------------------------------------------------------------------------------------


def fast_layout(h, n, tokens, suptitle):
    """(left, top, cell, canvas (height, width)) of render_heads_png's grid, from its own layout function."""
    lay = plotting.heads_png_layout(h, n, tokens, suptitle)
    image, _ = plotting.tile_heads(np.zeros((h, n, n)), gap=lay.gap)
    canvas = (lay.top + image.shape[0] * lay.cell + lay.bottom, lay.left + image.shape[1] * lay.cell + lay.bar_width)
    return lay.left, lay.top, lay.cell, canvas


def _tiled_png(state):
    return plotting.render_heads_png(state.weights, state.tokens, suptitle=head_lab._title(state))


def _fast_grid(state):
    """The fast tiled picture sampled at the centre of every cell of the tiled array: (H, W, 3)."""
    img = decode(_tiled_png(state))
    left, top, cell, canvas = fast_layout(state.h, N, state.tokens, head_lab._title(state))
    assert img.shape[:2] == canvas, "render_heads_png's layout changed: update fast_layout()"
    tiled, origins = plotting.tile_heads(state.weights, gap=plotting.tile_gap(state.h, N))
    rows, cols = np.indices(tiled.shape)
    return img[top + rows * cell + cell // 2, left + cols * cell + cell // 2], tiled, origins


@pytest.mark.parametrize("h", CHOICES)
def test_fast_path_cell_colours(states, h):
    s = states[h]
    grid, _, origins = _fast_grid(s)
    from matplotlib import colormaps

    lut = plotting.colormap_lut("viridis")
    viridis = colormaps["viridis"]
    for k, (top, left) in enumerate(origins):
        got = grid[top : top + N, left : left + N].astype(int)  # (n, n, 3) head k's cells
        want = lut[np.rint(s.weights[k] * 255).astype(int)].astype(int)
        assert np.array_equal(got, want), f"head {k + 1}"
        mpl = np.rint(viridis(s.weights[k])[..., :3] * 255).astype(int)  # what plot_heads maps w to
        assert np.abs(got - mpl).max() <= 3, f"head {k + 1}: more than one colormap step from matplotlib"


@pytest.mark.parametrize("h", [8, 64])
def test_fast_path_matches_reference_layout_and_pixels(states, h, plt):
    """plot_heads' image array, drawn by matplotlib, against the fast PNG cell by cell (gaps included)."""
    s = states[h]
    fig = head_lab.plot_lab(s)
    try:
        ax = fig.axes[0]
        ref = np.ma.filled(ax.images[0].get_array().astype(float), np.nan)  # (H, W) tiled, NaN gaps
        grid, tiled, _ = _fast_grid(s)
        assert ref.shape == tiled.shape
        assert np.array_equal(np.isnan(ref), np.isnan(tiled))
        np.testing.assert_array_equal(ref[~np.isnan(ref)], tiled[~np.isnan(tiled)])
        rows, cols = np.indices(ref.shape)
        beside = np.isnan(ref) & (rows % (N + plotting.tile_gap(h, N)) < N)  # separators between tiles
        assert beside.any() and (grid[beside] == 255).all()  # white in the fast picture too
        fig.canvas.draw()
        buf = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
        xy = ax.transData.transform(np.column_stack([cols.ravel(), rows.ravel()]))  # cell centres, display px
        px = np.floor(xy[:, 0]).astype(int)
        py = buf.shape[0] - 1 - np.floor(xy[:, 1]).astype(int)  # display y runs up, image rows run down
        drawn = buf[py, px].reshape(*ref.shape, 3)
        cells = ~np.isnan(ref)  # the gaps hold each path's own head titles
        assert np.abs(drawn[cells] - grid[cells].astype(int)).max() <= 3  # same colour up to one colormap step
    finally:
        plt.close(fig)


def test_fast_path_rejects_non_square():
    with pytest.raises(ValueError, match="方阵"):
        plotting.render_heads_png(np.full((2, 3, 4), 0.25))


def test_fast_path_single_map_2d():
    w = np.full((4, 4), 0.25)
    img = decode(plotting.render_heads_png(w, ["我", "们", "好", "。"]))
    assert img.ndim == 3 and img.shape[2] == 3


def test_comparison_table_uses_lab_state():
    text = head_lab.comparison_table(heads=(1, 64))
    rows = [line.split() for line in text.splitlines()[2:]]
    for row, h in zip(rows, (1, 64)):
        s = head_lab.lab_state(h)
        assert row[:5] == [str(h), str(s.d_k), f"{s.parameters:,}", f"{s.matmul_multiplies:,}", f"{s.softmax_ops:,}"]


@pytest.mark.parametrize(("call", "fragments"), [
    (lambda: head_lab.lab_state(8, seed=-1), ["seed", "-1", "≥ 0"]),
    (lambda: head_lab.lab_state(8, seed="0"), ["seed", "'0'"]),
    (lambda: head_lab.lab_state(8, d_model=-512), ["d_model", "-512"]),
    (lambda: head_lab.lab_state(8, tokens=[]), ["tokens", "0"]),
    (lambda: head_lab.lab_state(8, tokens="小明把苹果"), ["tokens", "字符串的列表"]),
    (lambda: head_lab.lab_state(8, tokens=["小明", 3]), ["tokens"]),
    (lambda: head_lab.head_choices(d_model=-512), ["d_model", "-512"]),
    (lambda: head_lab.head_choices(max_heads=0), ["max_heads", "0"]),
], ids=["seed=-1", "seed='0'", "d_model=-512", "tokens=[]", "tokens=str", "tokens=[str, int]", "choices d_model",
        "choices max_heads"])
def test_lab_arguments_are_checked_in_chinese(raises_chinese, call, fragments):
    raises_chinese(call, *fragments)


def test_lab_parts_are_the_picture_cut_in_two(states):
    """The widget's two halves side by side are exactly the one lab picture, for every h."""
    for h in (1, 8, 64):
        zoomed, overview = (decode(p) for p in head_lab.lab_parts(states[h], zoom=h))
        whole = decode(head_lab.lab_png(states[h], zoom=h))
        lay = plotting.lab_layout(h, N, states[h].tokens)
        assert zoomed.shape[:2] == (lay.zoom_bottom, plotting.LAB_SPLIT)
        assert overview.shape[:2] == (plotting.LAB_SIZE[1], plotting.LAB_SIZE[0] - plotting.LAB_SPLIT)
        left = whole[:, :plotting.LAB_SPLIT]
        assert np.array_equal(zoomed, left[:lay.zoom_bottom])
        assert np.array_equal(overview, whole[:, plotting.LAB_SPLIT:])
        # the zoomed half is cut only where it is blank, so nothing is lost and a wrapped overview follows closely
        assert (left[lay.zoom_bottom:] == 255).all() and not (zoomed[-12:] == 255).all()
        # nothing of the zoomed half (title, labels, colour bar) crosses the cut; the overview starts after it
        assert min(x for x, _ in lay.tiles) - 3 > plotting.LAB_SPLIT
        assert (overview[:, :2] == 255).all()
