"""lesson_lib.show.plotting: Chinese text renders without missing glyphs, tiled heat maps, light imports."""

from __future__ import annotations

import io
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_chinese_message, scaled

from lesson_lib.show import plotting
from lesson_lib.show.plotting import heat_map

TOKENS = ["我", "喜欢", "注意力", "机制", "Law", "<EOS>", "，", "它的", "应用", "。"]


pytestmark = pytest.mark.usefixtures("plt")  # conftest: Agg, rcParams restored, figures closed


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
    """Noto Sans CJK (the system's or the pip package's) is registered and its SC face is the default sans-serif."""
    import matplotlib as mpl
    from matplotlib import font_manager

    plotting.use_chinese_font()
    assert mpl.rcParams["font.sans-serif"][0] == plotting.CJK_FONT == "Noto Sans CJK SC"
    shipped = str(plotting.font_path())
    assert shipped.endswith("NotoSansCJK-Regular.ttc")
    assert any(f.fname == shipped and f.name == plotting.CJK_FONT for f in font_manager.fontManager.ttflist)
    path = font_manager.findfont(font_manager.FontProperties(family=["sans-serif"]), fallback_to_default=False)
    names = {f.name for f in font_manager.fontManager.ttflist if f.fname == str(path)}
    assert plotting.CJK_FONT in names  # the shipped file, or an identical system copy of the same face
    plotting.use_chinese_font()  # calling again is harmless
    assert mpl.rcParams["font.sans-serif"][0] == plotting.CJK_FONT


def test_the_environment_has_one_free_cjk_font_file_and_no_more_than_20_mb_of_fonts():
    """No mplfonts and no non-free font (SimHei) in the lesson's environment: its font files over 1 MB are the
    one Noto Sans CJK collection (OFL), under 20 MB (the small ones are matplotlib's and JupyterLab's own)."""
    from importlib import metadata

    fonts = [Path(folder, name) for folder, _, names in os.walk(sys.prefix)  # names first: 6x less CPU than rglob
             for name in names if name.lower().endswith((".ttf", ".otf", ".ttc"))]
    fonts = [p for p in fonts if p.is_file()]
    large = [p for p in fonts if p.stat().st_size > 1_000_000]
    assert {p.name for p in large} <= {"NotoSansCJK-Regular.ttc"}
    assert sum(p.stat().st_size for p in large) <= 20_000_000
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.version("mplfonts")


SVG = "{http://www.w3.org/2000/svg}"


def svg_of(picture):
    import xml.etree.ElementTree as ET

    return ET.fromstring(picture[picture.index("<svg"):picture.index("</svg>") + 6])


def texts_of(svg) -> list[str]:
    return ["".join(t.itertext()) for t in svg.iter(f"{SVG}text")]


@pytest.mark.parametrize("h", [1, 4, 8, 16, 64])
def test_heat_map_labels_titles_and_text_sizes(h):
    n = len(TOKENS)
    title = "多头注意力：每个头一张图（第 5 层）"
    picture = plotting.heat_map(random_weights(h, n, seed=h), tokens=TOKENS, suptitle=title)
    svg = svg_of(picture)
    texts = texts_of(svg)
    assert "".join(texts).count("多头注意力") == 1
    if h > 1:
        assert {f"头 {i + 1}" for i in range(h)} <= set(texts)
    if h <= 4:
        assert set(TOKENS) <= set(texts)  # each token one <text> (a word is never split into two labels)
    sizes = [float(x) for x in re.findall(r"font-size:(\d+(?:\.\d+)?)px", picture)]
    assert min(sizes) >= 12 and int(svg.get("width")) <= 592  # never scaled down in a 592 px output
    assert len(list(svg.iter(f"{SVG}image"))) == h + 1  # one image per head, and the colour bar


def test_separate_key_tokens_and_titles():
    rows, cols = ["它", "的"], ["法律", "会", "完美"]
    titles = ["头 5：指代", "头 6：指代"]
    picture = plotting.heat_map(random_weights(2, 2, 3), tokens=rows, col_tokens=cols, titles=titles)
    assert {*titles, *rows, *cols} <= set(texts_of(svg_of(picture)))


def test_a_picture_is_html_for_a_widget_and_a_cell():
    picture = plotting.heat_map(random_weights(1, 3), tokens=["她", "小红", "小明"])
    assert picture.startswith("<style>") and 'role="img"' in picture and "<img" not in picture  # a widget's value
    assert '<img class="lesson-ras"' in picture._repr_html_() and repr(picture).startswith("<图：注意力热图")
    alt = "另一句说明"
    again = plotting.heat_map(random_weights(1, 3), alt=alt, table=(["a"], [["1"]]))  # the caller's own words
    assert again.lesson_alt == alt and f'aria-label="{alt}"' in again and "<details>" in again


def test_sixty_four_heads_each_tile_is_that_heads_cells():
    import base64

    from PIL import Image

    h, n = 64, 12
    w = random_weights(h, n)
    tokens = [f"词{i}" for i in range(n)]
    svg = svg_of(plotting.heat_map(w, tokens=tokens))
    images = list(svg.iter(f"{SVG}image"))[:-1]  # the last is the colour bar
    assert len(images) == h
    boxes = set()
    for i, image in enumerate(images):
        rgba = np.asarray(Image.open(io.BytesIO(base64.b64decode(image.get("href").split(",", 1)[1]))))
        np.testing.assert_array_equal(rgba[..., :3], plotting.colormap_lut()[np.rint(w[i] * 255).astype(int)])
        x, y, side = float(image.get("x")), float(image.get("y")), float(image.get("width"))
        assert 0 <= x and x + side <= int(svg.get("width")) and 0 <= y
        boxes.add((x, y))
    assert len(boxes) == h  # no two heads on one spot
    assert not set(tokens) & set(texts_of(svg))  # 64 tiles are too small to label: the alt text and table do


# ---------------------------------------------------------------------------------------------
# Geometry
# ---------------------------------------------------------------------------------------------


def tiles(h, n=4):
    """(rows, cols, gap between tiles in cells) of a default heat map's tiles, read off its <image>s."""
    images = list(svg_of(heat_map(random_weights(h, n))).iter(f"{SVG}image"))[:-1]  # the last is the colour bar
    xs, ys = sorted({float(i.get("x")) for i in images}), sorted({float(i.get("y")) for i in images})
    cell = float(images[0].get("width")) / n
    return len(ys), len(xs), (xs[1] - xs[0] - n * cell) / cell if len(xs) > 1 else None


@pytest.mark.parametrize("h", range(1, 65))
def test_grid_shape(h):
    rows, cols, _gap = tiles(h)
    assert 1 <= cols <= 8
    assert rows * cols >= h  # room for every head
    assert (rows - 1) * cols < h  # no empty row
    assert rows <= cols  # near-square, never taller than wide for h ≤ 64
    assert cols <= max(4, math.ceil(math.sqrt(h)))


@pytest.mark.parametrize(
    ("h", "shape"), [(1, (1, 1)), (2, (1, 2)), (4, (2, 2)), (8, (2, 4)), (16, (4, 4)), (64, (8, 8))]
)
def test_grid_shape_values(h, shape):
    assert tiles(h)[:2] == shape


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def assert_chinese(excinfo, *fragments):
    assert_chinese_message(str(excinfo.value), *fragments)


@pytest.mark.parametrize("count", [3, 5])
def test_wrong_token_count(count):
    with pytest.raises(ValueError) as excinfo:
        heat_map(random_weights(2, 4), tokens=TOKENS[:count])
    assert_chinese(excinfo, count, 4)


def test_wrong_key_token_count():
    with pytest.raises(ValueError) as excinfo:
        heat_map(random_weights(2, 4, 6), tokens=TOKENS[:4], col_tokens=TOKENS[:5])
    assert_chinese(excinfo, 5, 6)
    with pytest.raises(ValueError) as excinfo:
        heat_map(random_weights(2, 4, 6), tokens=TOKENS[:4])  # row tokens cannot label 6 key columns
    assert_chinese(excinfo, 4, 6)


def test_wrong_title_count():
    with pytest.raises(ValueError) as excinfo:
        heat_map(random_weights(3, 4), titles=["头 1", "头 2"])
    assert_chinese(excinfo, 2, 3)


@pytest.mark.parametrize(("h", "n", "gap"), [(1, 12, None), (8, 4, 2), (8, 12, 3), (64, 12, 3), (2, 30, 8)])
def test_one_gap_and_one_set_of_default_titles(h, n, gap):
    assert tiles(h, n)[2] == gap  # a quarter of a map, at least 2 cells
    titles = {t for t in texts_of(svg_of(heat_map(random_weights(h, n)))) if t.startswith("头")}
    assert titles == {f"头 {i}" for i in range(1, h + 1)} if h > 1 else not titles


@pytest.mark.parametrize("shape", [(4,), (2, 2, 3, 3)])
def test_wrong_weight_dimensions(shape):
    with pytest.raises(ValueError) as excinfo:
        heat_map(np.ones(shape))
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
        "               if m.split('.')[0] in ('matplotlib', 'ipywidgets', 'noto_cjk_sans_otc', 'IPython', 'PIL'))\n"
        "print(heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=scaled(60),
                            check=True)
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
