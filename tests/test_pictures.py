"""Every static figure: sized for a 592 px output, text ≥ 11 px, alt text made from its numbers, themed HTML."""

from __future__ import annotations

import base64
import html
import re

import numpy as np
import pytest

from lesson_lib.sections import s02_averaging as averaging
from lesson_lib.sections import s03_heads as heads
from lesson_lib.sections.s07_ablation import report
from lesson_lib.show import plotting

pytestmark = pytest.mark.usefixtures("plt")

OUTPUT_PX = 592  # JupyterLab's output width at 1024 × 768 with the file browser open
CSS_PX_PER_INCH = 96  # an inline SVG's pt is 4/3 CSS px


def _toy_results():
    rng = np.random.default_rng(0)
    return [{"h": h, "accuracy_mean": float(a), "accuracy_sd": None, "accuracy_per_seed": [float(a)],
             "per_target": {t: float(x) for t, x in zip(("prev", "next", "match"), rng.random(3))}}
            for h, a in zip((1, 2, 4, 8, 16, 32), (0.41, 0.52, 0.97, 0.96, 0.81, 0.66))]


_S = np.linspace(0, 8, 33)
_W = np.random.default_rng(1).dirichlet(np.ones(6), size=(1, 6))  # (1, 6, 6)
FIGURES = {  # name -> a call drawing it (built one at a time: each test closes its figures)
    "figure_11_1": lambda: heads.plot_figure_11_1(512, 8),
    "toy_vs_paper": lambda: report.plot_toy_vs_paper(_toy_results()),
}


def _displayed_scale(fig) -> float:
    return min(1.0, OUTPUT_PX / (fig.get_figwidth() * CSS_PX_PER_INCH))


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_fits_the_output_and_every_text_is_at_least_11_px(name):
    fig = FIGURES[name]()
    scale = _displayed_scale(fig)
    assert scale >= 0.9, f"{name} would be shown at {scale:.0%}"
    fig.canvas.draw()
    texts = [t for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
             if t.get_text().strip() and t.get_visible()]
    assert texts, "nothing to check"
    smallest = min(t.get_fontsize() * CSS_PX_PER_INCH / 72 * scale for t in texts)  # rendered CSS px
    small = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < plotting.MIN_FONT_PT]
    assert not small and smallest >= 11, f"{name}: texts under {plotting.MIN_FONT_PT} pt: {small[:5]}"


@pytest.mark.parametrize("name", list(FIGURES))
def test_every_figure_carries_chinese_alt_text(name):
    alt = FIGURES[name]().lesson_alt
    assert alt and re.search(r"[\u4e00-\u9fff]", alt) and len(alt) > 30


def test_heat_map_alt_names_the_largest_weights():
    w = np.array([[[0.55, 0.06, 0.39], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]]])
    tokens = ["她", "小红", "小明"]
    fig = plotting.heat_map(w, tokens=tokens, titles=["第 8 层 · 头 1"])
    alt = fig.lesson_alt
    she, _, ming = tokens
    assert re.search(rf"{she}\W+\w*\W+{she}\W+0\.55\W+\w*\W+{ming}\W+0\.39", alt)  # the two largest, in order
    _headers, table = fig.lesson_table
    assert table[1][-3:] == [tokens[1], tokens[1], "0.70"]


def test_toy_vs_paper_alt_gives_each_head_counts_level_not_machine_dependent_digits():
    alt = report.plot_toy_vs_paper(_toy_results()).lesson_alt
    # accuracies 0.41, 0.52, 0.97, 0.96, 0.81, 0.66 for h = 1 … 32: levels as §7's checked table states them
    learned, mostly, partly, _ = (label for _, label in report.ACCURACY_LEVELS)
    said = dict(re.findall(r"h = (\d+)\W+(\w+)", alt))
    assert said == {"1": partly, "2": partly, "4": learned, "8": learned, "16": mostly, "32": mostly}
    assert "0.97" not in alt


def test_picture_html_names_the_svg_and_hides_it_until_styles_apply():
    fig = FIGURES["toy_vs_paper"]()
    page = plotting.picture_html(fig)
    alt = html.escape(fig.lesson_alt, quote=True)
    assert f'<svg role="img" aria-label="{alt}"' in page
    assert f'<img class="lesson-ras" alt="{alt}"' in page  # what a sanitized (untrusted) page keeps
    svg_text = page[page.index("<svg"):page.index("</svg>") + 6]
    src = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', page).group(1)
    assert base64.b64decode(src).decode("utf-8").strip() == svg_text  # the same drawing, not a second (PNG) rendering
    assert "image/png" not in page
    assert '<div class="lesson-vec" style="display:none">' in page and "display:block!important" in page
    assert "<details><summary>" in page and report.ROLE_NAMES[2] in page  # the table's column
    assert page == plotting.picture_html(fig)  # deterministic: ids and metadata fixed
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "<text" in svg  # text stays text
    assert not re.search(r"(fill|stroke): #(000000|ffffff)\b", svg)  # no black or white left: theme colours


@pytest.mark.parametrize(("colour", "role", "text", "expected"), [
    ("#000000", "fill", True, "var(--jp-content-font-color1"),
    ("#555555", "fill", True, "var(--jp-content-font-color2"),
    ("#ffffff", "fill", False, "var(--jp-layout-color0"),
    ("#e8eef7", "fill", False, "color-mix(in srgb,#e8eef7 var(--lesson-tint"),
    ("#4c72b0", "fill", False, "#4c72b0"),
    ("#888888", "fill", False, "#888888"),
    ("#b0b0b0", "stroke", False, "var(--jp-border-color1"),
])
def test_theme_colour(colour, role, text, expected):
    assert plotting.theme_colour(colour, role, text).startswith(expected)


def test_describe_requires_alt_text():
    import matplotlib.pyplot as plt

    with pytest.raises(ValueError, match="alt"):
        plotting.describe(plt.figure(), "")


def test_wrap_title_keeps_every_character_and_fits():
    title = "第 6 层 · 头 3 的注意力图（行 = 查询，列 = 键）：一句很长很长的标题不能被切掉"
    lines = plotting.wrap_title(title, 3.0, 11).split("\n")
    assert len(lines) > 1 and "".join(lines).replace(" ", "") == title.replace(" ", "")
    assert all(sum(1 if ord(c) > 0x2E80 else 0.55 for c in line) <= 3.0 * 72 / 11 + 1 for line in lines)


def test_ipython_shows_described_figures_as_html_only():
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.figure import Figure

    shell = InteractiveShell.instance()
    try:
        png = shell.display_formatter.formatters["image/png"]
        png.for_type(Figure, lambda fig: b"\x89PNG")  # what matplotlib-inline registers
        alt = "一张测试图的说明文字"
        fig = plotting.describe(FIGURES["figure_11_1"](), alt)
        plain = Figure()
        data, _ = shell.display_formatter.format(fig)
        assert "image/png" not in data and f'aria-label="{alt}"' in data["text/html"]
        data, _ = shell.display_formatter.format(plain)
        assert "image/png" in data and "text/html" not in data  # the learner's own figures are untouched
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize("heads_", [1, 2])
def test_demo_alt_states_each_heads_largest_weight_and_the_features(heads_):
    d = averaging.demo(heads_, 4.0)
    alt = html.unescape(re.search(r'role="img" aria-label="([^"]*)"', averaging.demo_html(d)).group(1))
    query = averaging.TOKENS[averaging.QUERY]
    for name, row in zip(d.names, d.weights):
        k = int(np.argmax(row[:averaging.QUERY]))
        top = re.escape(averaging.TOKENS[k])
        assert re.search(rf"{re.escape(name)}\W+{query}\W+\w*\W+{top}\W+{row[k]:.2f}", alt), name
    assert all(f"{f} {v:.2f}" in alt for f, v in d.output.items())


def test_widget_heat_map_svg_text_sizes_labels_and_alt():
    w = np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25], [0.2, 0.2, 0.6]])
    tokens, title = ["她", "小红", "law"], "第 8 层 · 头 1"
    page = plotting.heat_map(w, tokens, cell_px=16, highlight_row=0, suptitle=title)
    sizes = [float(x) for x in re.findall(r"font-size:(\d+(?:\.\d+)?)px", page)]
    assert sizes and min(sizes) >= 12  # CSS px as drawn: the picture is never scaled (≤ 592 px wide)
    width = int(re.search(r'<svg[^>]* width="(\d+)"', page).group(1))
    assert width <= 592
    assert re.search(rf"{tokens[0]}\W+\w*\W+{tokens[1]}\W+0\.70", page) and f'aria-label="{title}' in page
    # A key label is one <text> (a word is never split, issue 30): Chinese upright top to bottom, Latin turned
    assert re.search(rf'writing-mode:vertical-rl;text-orientation:upright"[^>]*>{tokens[1]}</text>', page)
    assert re.search(r'rotate\(-90\)"[^>]*>law</text>', page)
    assert "stroke:#d62728" in page and "<details>" in page
