"""lesson_lib.show.theme: boxes and tables coloured only by JupyterLab's theme variables."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from lesson_lib.sections import s02_averaging as averaging
from lesson_lib.sections import s05_head_lab as head_lab
from lesson_lib.sections.s09_paper import KERNELS, formula_view
from lesson_lib.show import tables, theme
from lesson_lib.show.tables import text_table

HARD_COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}\b|\brgba?\(|\b(white|black|gr[ae]y)\b(?!-)")


def colours(html: str) -> list[str]:
    """Every colour value in the inline styles."""
    return re.findall(r"(?:color|background|border[-\w]*)\s*:\s*([^;\"']+)", html)


@pytest.mark.parametrize("tone", sorted(theme.TONES))
def test_box_uses_only_theme_variables(tone):
    html = theme.box("<b>读数</b>", tone)
    ET.fromstring(html)
    assert not HARD_COLOUR.search(html), html
    assert f"var({theme.TONES[tone]})" in html and "var(--jp-content-font-color1)" in html
    assert all("var(--jp-" in c or c.strip() in {"inherit", "collapse"} for c in colours(html)), colours(html)


def test_every_summary_box_of_sections_2_and_5_is_themed():
    for html in (averaging.summary_html(averaging.demo(2, 3.0)),
                 head_lab.summary_html(head_lab.lab_state(8))):
        assert 'class="lesson-box' in html and not HARD_COLOUR.search(html), html
        ET.fromstring(f"<div>{html}</div>")


def test_html_table_escapes_and_does_not_break_words():
    html = tables.html_table(["代码", "项"], [["a < b & c", "head_i = Attention(Q W_i^Q)"]], code_columns=(0,))
    ET.fromstring(html)
    assert "a &lt; b &amp; c" in html
    assert html.count("word-break:keep-all") == 4 and "white-space:nowrap" in html  # 2 headers + 2 cells
    long_code = tables.html_table(["代码"], [["shifted = x - x.max(axis=axis, keepdims=True)"]], code_columns=(0,))
    assert "white-space:pre-wrap" in long_code  # a long line wraps, at its spaces only
    assert "break-all" not in html and not HARD_COLOUR.search(html)


def test_table_text_is_the_text_table_and_html_holds_every_cell():
    rows = [["x @ w", "投影"], ["softmax(s)", "归一化"]]
    title = "标题："
    t = text_table(["代码", "含义"], rows, code_columns=(0,)).around(before=title)
    assert str(t) == repr(t) == f"{title}\n" + text_table(["代码", "含义"], rows)
    html = t._repr_html_()
    assert all(cell in html for row in rows for cell in row) and title in html


def test_formula_view_shows_the_formula_table():
    view = formula_view()
    lines = str(view).splitlines()  # what nbval stores as text/plain: the function's name, then its aligned table
    shown = KERNELS[0][0][0] if isinstance(KERNELS[0][0], tuple) else KERNELS[0][0]  # (public, formula) pair
    assert lines[0].startswith(shown.__name__) and set(lines[2]) == {"-", " "}
    html = view._repr_html_()
    assert html.count("<table") == len(KERNELS) and "merge_heads(heads) @ w_o" in html  # one per kernel function
