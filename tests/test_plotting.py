"""lesson_lib.show.plotting: Chinese text renders without missing glyphs, tiled heat maps, light imports."""

from __future__ import annotations

import io
import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from helpers import assert_chinese_message
from hypothesis import given, settings
from hypothesis import strategies as st

from lesson_lib.show import plotting
from lesson_lib.show.plotting import grid_shape, head_titles, plot_heads, tile_gap, tile_heads

TOKENS = ["我", "喜欢", "注意力", "机制", "Law", "<EOS>", "，", "它的", "应用", "。"]


pytestmark = pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed


def render(fig) -> bytes:
    fig.canvas.draw()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    data = buf.getvalue()
    assert data.startswith(b"\x89PNG")
    return data


def random_weights(h, n, m=None, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.random((h, n, m or n))
    return w / w.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Chinese text: a missing glyph is an error
# ---------------------------------------------------------------------------------------------


def test_missing_glyph_warning_is_what_we_guard_against(plt):
    """Without the CJK font, matplotlib warns "Glyph … missing from font(s)": the check below can fail."""
    import matplotlib

    matplotlib.rcParams["font.family"] = "sans-serif"
    matplotlib.rcParams["font.sans-serif"] = ["DejaVu Sans"]
    fig = plt.figure()
    fig.suptitle("注意力")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match=r"Glyph .* missing from font"):
            fig.canvas.draw()


def test_use_chinese_font_registers_noto_sans_cjk():
    """The font shipped by mplfonts is registered (so no system font is needed) and is the default sans-serif."""
    from matplotlib import font_manager

    assert plotting.use_chinese_font() == plotting.CJK_FONT == "Noto Sans CJK SC"
    shipped = str(plotting.font_path())
    assert shipped.endswith("NotoSansCJKsc-Regular.otf")
    assert any(f.fname == shipped and f.name == plotting.CJK_FONT for f in font_manager.fontManager.ttflist)
    path = font_manager.findfont(font_manager.FontProperties(family=["sans-serif"]), fallback_to_default=False)
    names = {f.name for f in font_manager.fontManager.ttflist if f.fname == str(path)}
    assert plotting.CJK_FONT in names  # the shipped file, or an identical system copy of the same face
    assert plotting.use_chinese_font() == plotting.CJK_FONT  # calling again is harmless


@pytest.mark.parametrize("h", [1, 4, 8, 16, 64])
def test_chinese_figure_renders_without_missing_glyphs(h):
    n = len(TOKENS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # includes matplotlib's "Glyph … missing from font(s)" UserWarning
        fig = plot_heads(random_weights(h, n, seed=h), tokens=TOKENS, suptitle="多头注意力：每个头一张图（第 5 层）")
        png = render(fig)
    assert len(png) > 1000
    texts = {t.get_text().replace("\n", "") for ax in fig.axes for t in ax.texts}  # Chinese key labels: stacked
    assert fig._suptitle.get_text().replace("\n", "") == "多头注意力：每个头一张图（第 5 层）"
    if h > 1:
        assert {f"头 {i + 1}" for i in range(h)} <= texts
    if h <= 4:
        assert set(TOKENS) <= texts  # token labels drawn while tiles are big enough to read
    # labels that would be under 11 px are left out rather than drawn unreadable
    assert min(t.get_fontsize() for ax in fig.axes for t in ax.texts) >= plotting.MIN_FONT_PT
    ax = fig.axes[0]
    assert len(ax.images) == 1  # one tiled image, not h subplots
    assert len(fig.axes) == 2  # the map and its colour bar


def test_chinese_titles_and_separate_key_tokens_render():
    rows, cols = ["它", "的"], ["法律", "会", "完美"]
    w = random_weights(2, 2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_heads(w, tokens=rows, col_tokens=cols, titles=["头 5：指代", "头 6：指代"])
        render(fig)
        png = plotting.figure_png(plot_heads(w[0], tokens=rows, col_tokens=cols))
    assert png.startswith(b"\x89PNG")


def test_plot_heads_into_existing_axes(plt):
    fig, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plot_heads(random_weights(4, 5), tokens=TOKENS[:5], ax=ax) is fig
        render(fig)


def test_sixty_four_heads_is_one_tiled_image():
    h, n = 64, 12
    w = random_weights(h, n)
    fig = plot_heads(w, tokens=[f"词{i}" for i in range(n)])
    render(fig)
    ax = fig.axes[0]
    image = np.asarray(ax.images[0].get_array())
    expected, origins = tile_heads(w, gap=tile_gap(h, n))
    assert image.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(image), np.isnan(expected))
    np.testing.assert_array_equal(image[~np.isnan(image)], expected[~np.isnan(expected)])
    assert len(origins) == h


# ---------------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("h", range(1, 65))
def test_grid_shape(h):
    rows, cols = grid_shape(h)
    assert 1 <= cols <= 8
    assert rows * cols >= h  # room for every head
    assert (rows - 1) * cols < h  # no empty row
    assert rows <= cols  # near-square, never taller than wide for h ≤ 64
    assert cols <= max(4, math.ceil(math.sqrt(h)))


@pytest.mark.parametrize(
    ("h", "shape"), [(1, (1, 1)), (2, (1, 2)), (4, (2, 2)), (8, (2, 4)), (16, (4, 4)), (64, (8, 8))]
)
def test_grid_shape_values(h, shape):
    assert grid_shape(h) == shape


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 20),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 3),
    st.one_of(st.none(), st.integers(1, 6)),
)
def test_tile_heads_geometry(h, n, m, gap, cols_arg):
    w = np.arange(1, h * n * m + 1, dtype=float).reshape(h, n, m)  # no NaN, every cell distinct
    image, origins = tile_heads(w, cols=cols_arg, gap=gap)
    rows, cols = grid_shape(h) if cols_arg is None else (math.ceil(h / cols_arg), cols_arg)
    assert image.shape == (rows * n + (rows - 1) * gap, cols * m + (cols - 1) * gap)
    assert len(origins) == h
    for i, (top, left) in enumerate(origins):
        r, c = divmod(i, cols)
        assert (top, left) == (r * (n + gap), c * (m + gap))
        np.testing.assert_array_equal(image[top : top + n, left : left + m], w[i])  # tile i holds head i
    assert np.count_nonzero(~np.isnan(image)) == h * n * m  # everything else is a NaN separator
    for r in range(1, rows):
        assert np.all(np.isnan(image[r * (n + gap) - gap : r * (n + gap)]))  # separator rows
    for c in range(1, cols):
        assert np.all(np.isnan(image[:, c * (m + gap) - gap : c * (m + gap)]))  # separator columns


def test_tile_heads_single_map():
    w = np.arange(6.0).reshape(2, 3)
    image, origins = tile_heads(w)
    np.testing.assert_array_equal(image, w)
    assert origins == [(0, 0)]


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def assert_chinese(excinfo, *fragments):
    assert_chinese_message(str(excinfo.value), *fragments)


@pytest.mark.parametrize("count", [3, 5])
def test_wrong_token_count(count):
    with pytest.raises(ValueError) as excinfo:
        plot_heads(random_weights(2, 4), tokens=TOKENS[:count])
    assert_chinese(excinfo, count, 4)


def test_wrong_key_token_count():
    with pytest.raises(ValueError) as excinfo:
        plot_heads(random_weights(2, 4, 6), tokens=TOKENS[:4], col_tokens=TOKENS[:5])
    assert_chinese(excinfo, 5, 6)
    with pytest.raises(ValueError) as excinfo:
        plot_heads(random_weights(2, 4, 6), tokens=TOKENS[:4])  # row tokens cannot label 6 key columns
    assert_chinese(excinfo, 4, 6)


def test_wrong_title_count():
    with pytest.raises(ValueError) as excinfo:
        plot_heads(random_weights(3, 4), titles=["头 1", "头 2"])
    assert_chinese(excinfo, 2, 3)


@pytest.mark.parametrize(("h", "n", "gap"), [(1, 12, 1), (8, 4, 2), (8, 12, 3), (64, 12, 3), (2, 30, 8)])
def test_one_gap_and_one_set_of_default_titles(h, n, gap):
    assert tile_gap(h, n) == gap  # a quarter of a map, at least 2 cells, 1 for a lone map
    assert head_titles(None, h) == ([None] if h == 1 else [f"头 {i}" for i in range(1, h + 1)])


@pytest.mark.parametrize("shape", [(4,), (2, 2, 3, 3)])
def test_wrong_weight_dimensions(shape):
    for call in (plot_heads, tile_heads):
        with pytest.raises(ValueError) as excinfo:
            call(np.ones(shape))
        assert_chinese(excinfo, shape)


# ---------------------------------------------------------------------------------------------
# Imports stay light
# ---------------------------------------------------------------------------------------------


def test_importing_any_lesson_lib_module_does_not_import_matplotlib_or_ipywidgets():
    code = (
        "import sys\n"
        "import importlib, pkgutil, lesson_lib\n"
        "for mod in pkgutil.iter_modules(lesson_lib.__path__):\n"
        "    importlib.import_module('lesson_lib.' + mod.name)\n"
        "heavy = sorted(m for m in sys.modules\n"
        "               if m.split('.')[0] in ('matplotlib', 'ipywidgets', 'mplfonts', 'IPython', 'PIL'))\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]", result.stdout


# ---------------------------------------------------------------------------------------------
# Contrast of a figure's text in JupyterLab's three themes, from the CSS the figure's SVG carries
# ---------------------------------------------------------------------------------------------
# The variables theme_colour uses, as JupyterLab 4.6's theme packages set them (theme-light-extension,
# theme-dark-extension, theme-dark-high-contrast-extension), and the page's --lesson-tint (plotting._PICTURE_CSS).
PALETTES = {
    "light": {"--jp-layout-color0": "#ffffff", "--jp-content-font-color1": "rgba(0,0,0,.87)",
              "--jp-content-font-color2": "rgba(0,0,0,.54)", "--jp-border-color1": "#bdbdbd", "--lesson-tint": "100%"},
    "dark": {"--jp-layout-color0": "#111111", "--jp-content-font-color1": "#ffffff",
             "--jp-content-font-color2": "rgba(255,255,255,.7)", "--jp-border-color1": "#616161",
             "--lesson-tint": "22%"},
    "hc": {"--jp-layout-color0": "#111111", "--jp-content-font-color1": "#ffffff",
           "--jp-content-font-color2": "rgba(255,255,255,.7)", "--jp-border-color1": "#ffffff", "--lesson-tint": "22%"},
}


def _css_colour(css: str, palette: dict) -> tuple:
    """(r, g, b, a) of a CSS colour built from #hex, rgba(), var(--x,fallback) and color-mix(in srgb, A p%, B)."""
    import re

    css = css.strip()
    if css.startswith("var("):
        name, _, fallback = css[4:-1].partition(",")
        return _css_colour(palette.get(name.strip(), fallback), palette)
    if css.startswith("color-mix("):
        inner = css[len("color-mix(in srgb,"):-1]
        depth, parts, start = 0, [], 0
        for i, ch in enumerate(inner):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(inner[start:i])
                start = i + 1
        parts.append(inner[start:])
        first, second = parts
        colour, share = first.strip().rsplit(" ", 1)
        p = float((_css_var(share, palette)).rstrip("%")) / 100
        a, b = _css_colour(colour, palette), _css_colour(second, palette)
        alpha = p * a[3] + (1 - p) * b[3]  # premultiplied, as CSS Color 5 mixes
        return (*[(p * a[3] * a[i] + (1 - p) * b[3] * b[i]) / alpha for i in range(3)], alpha)
    if css.startswith("rgba("):
        r, g, b, a = (float(v) for v in re.split(r"\s*,\s*", css[5:-1]))
        return r, g, b, a
    return (*(int(css[i:i + 2], 16) for i in (1, 3, 5)), 1.0)


def _css_var(css: str, palette: dict) -> str:
    if css.startswith("var("):
        name, _, fallback = css[4:-1].partition(",")
        return palette.get(name.strip(), fallback)
    return css


def _over(top, under):
    return tuple(top[i] * top[3] + under[i] * (1 - top[3]) for i in range(3)) + (1.0,)


def _contrast(a, b) -> float:
    def lum(c):
        f = [(v / 255 / 12.92) if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in c[:3]]
        return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _text_on(text_css: str, fill_css: str | None, palette: dict) -> float:
    page = _css_colour("var(--jp-layout-color0)", palette)
    under = page if fill_css is None else _over(_css_colour(fill_css, palette), page)
    return _contrast(_over(_css_colour(text_css, palette), under), under)


def test_the_contrast_helpers_measure_what_wcag_says():
    white = {"--jp-layout-color0": "#ffffff"}
    assert _text_on("#000000", None, white) == pytest.approx(21.0)
    assert _text_on("#767676", None, white) == pytest.approx(4.54, abs=0.01)  # the lightest grey AA allows on white


@pytest.mark.parametrize("theme", sorted(PALETTES))
@pytest.mark.parametrize("colour", ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                    "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#4d4d4d", "#555555"])
def test_text_in_any_matplotlib_colour_reads_on_every_theme_page(theme, colour):
    """A figure's text colour (C0–C9, greys) after theme_colour: ≥ 4.5:1 on the page of light, dark and high
    contrast (issue 30: §7's red note was 3.76:1 on the dark page)."""
    css = plotting.theme_colour(colour, "fill", text=True)
    assert _text_on(css, None, PALETTES[theme]) >= 4.5, (colour, css)


@pytest.mark.parametrize("theme", sorted(PALETTES))
def test_figure_11_1_labels_read_on_their_boxes_in_every_theme(plt, theme):
    """Every box of Figure 11.1 holds text in the theme's text colour: the box's fill, as the themed SVG paints it,
    keeps that text ≥ 4.5:1 (issue 30: 3.98:1 on blue in light, 2.80:1 in dark)."""
    from matplotlib.colors import to_hex

    from lesson_lib.sections.s03_heads import plot_figure_11_1

    fig = plot_figure_11_1()
    fills = {to_hex(t.get_bbox_patch().get_facecolor()) for t in fig.axes[0].texts if t.get_bbox_patch()}
    assert len(fills) >= 5
    text = plotting.theme_colour("#000000", "fill", text=True)
    low = {f: round(_text_on(text, plotting.theme_colour(f, "fill"), PALETTES[theme]), 2) for f in fills}
    assert all(v >= 4.5 for v in low.values()), low
