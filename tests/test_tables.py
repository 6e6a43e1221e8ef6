"""lesson_lib.show.tables: text tables that line up under Chinese headers (CJK = two columns)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lesson_lib.show.tables import display_width, text_table


@pytest.mark.parametrize(("text", "width"), [
    ("", 0), ("abc", 3), ("头数", 4), ("d_k = 64", 8), ("头数 h", 6),
    ("，", 2), ("（与 h 无关）", 13), ("ＡＢ", 4), ("½", 1),
])
def test_display_width(text, width):
    assert display_width(text) == width


def _field_starts(line):
    """Display columns where the fields of a table line start (fields are separated by ≥ 2 spaces)."""
    starts, col, spaces = [], 0, 0
    for ch in line:
        if ch != " " and (not starts or spaces >= 2):
            starts.append(col)
        spaces = spaces + 1 if ch == " " else 0
        col += display_width(ch)
    return starts


def test_columns_line_up_with_chinese_headers():
    rows = [["小明", 1, "主语"], ["苹果", 1_048_576, "宾语"], ["x", 12, "—"]]
    lines = text_table(["词", "参数", "语法角色"], rows).splitlines()
    assert len(lines) == 2 + len(rows)
    widths = [len(r) for r in lines[1].split("  ")]
    assert widths == [4, 9, 8]  # widest cell per column: "小明", "1,048,576", "语法角色"
    starts = [0, 4 + 2, 4 + 2 + 9 + 2]
    assert _field_starts(lines[0]) == starts
    for line, row in zip(lines[2:], rows):
        fields = _field_starts(line)
        assert fields[0] == 0 and fields[-1] == starts[2]  # text left-aligned under its header
        num = f"{row[1]:,}"  # numbers right-aligned: they end where their column ends
        assert display_width(line.split(num)[0]) + len(num) == starts[1] + widths[1]


def test_no_trailing_spaces_and_rule_matches_widths():
    out = text_table(["名称", "值"], [["长长的名字", "a"], ["b", "很长的值"]])
    for line in out.splitlines():
        assert line == line.rstrip()
    assert out.splitlines()[1] == "-" * 10 + "  " + "-" * 8


@pytest.mark.parametrize(("value", "text"), [
    (1_048_576, "1,048,576"), (0, "0"), (-1234, "-1,234"),
    (0.5, "0.5"), (2.0, "2"), (0.125, "0.125"), (1234.5, "1,234.5"), (0.0, "0"),
    (0.0001234, "0.000123"), (3.14159, "3.142"),
    ("文字", None), (None, "None"),
])
def test_number_formatting(value, text):
    out = text_table(["x"], [[value]])
    assert out.splitlines()[2].strip() == (value if text is None else text)  # text is shown as it is


def test_booleans_are_words_a_reader_tells_apart():
    yes, no = (text_table(["x"], [[v]]).splitlines()[2].strip() for v in (True, False))
    assert yes != no and all(re.fullmatch(r"[\u4e00-\u9fff]", w) for w in (yes, no))  # one Chinese word each


def test_numbers_align_right():
    out = text_table(["宽的表头"], [[1], [22]])
    assert out.splitlines()[2:] == ["       1", "      22"]


def test_numpy_scalars_format_like_python_numbers():
    assert text_table(["参数"], [[np.int64(1_048_576)]]) == text_table(["参数"], [[1_048_576]])
    assert text_table(["参数量"], [[np.float32(0.5)]]) == text_table(["参数量"], [[0.5]])


@pytest.mark.parametrize("rows", [[[1, 2, 3]], [[1]], [[1, 2], [1]]])
def test_row_length_mismatch_raises_in_chinese(rows):
    with pytest.raises(ValueError) as exc:
        text_table(["a", "b"], rows)
    assert re.search(r"[\u4e00-\u9fff]", str(exc.value))


def test_empty_rows():
    headers = ["头数", "d_k"]
    assert text_table(headers, []).splitlines() == [f"{headers[0]}  d_k", "----  ---"]  # a CJK char is 2 columns


def test_a_table_is_its_text_and_shows_as_an_html_table():
    """str (print, nbval's text/plain) is the aligned text; JupyterLab gets an HTML table with every cell."""
    from html.parser import HTMLParser

    from IPython.core.formatters import DisplayFormatter

    headers = ["头数", "名字"]
    table = text_table(headers, [[8, "小红"], [12, "a<b"]])
    data, _meta = DisplayFormatter().format(table)
    assert data["text/plain"] == str(table) == table and table.startswith("头数")

    cells, heads = [], []

    class Cells(HTMLParser):
        tag = None

        def handle_starttag(self, tag, attrs):
            self.tag = tag
            if tag == "td":
                cells.append(dict(attrs)["style"])

        def handle_data(self, text):
            if self.tag == "th":
                heads.append(text)

    Cells().feed(data["text/html"])
    assert heads == headers and len(cells) == 4
    assert "text-align:right" in cells[0] and "text-align:left" in cells[1]  # numbers line up on the right
    assert "a&lt;b" in data["text/html"] and "overflow-x:auto" in data["text/html"]


def test_text_around_a_table_is_in_both_forms():
    before, after = "上面", "（下面）"
    table = text_table(["h"], [[1]]).around(before=before, after=after)
    assert str(table).splitlines()[0] == before and str(table).splitlines()[-1] == after
    html = table._repr_html_()
    assert html.index(before) < html.index("<table") < html.index(after)


def test_every_printer_the_notebook_shows_as_a_table_gives_html():
    """The cells that show tables (§2, §3, §4, §5, §7) get HTML tables, not plain text that zig-zags in Chinese."""
    from lesson_lib.sections import s02_averaging as averaging
    from lesson_lib.sections import s03_heads as heads
    from lesson_lib.sections import s04_costs
    from lesson_lib.sections import s05_head_lab as head_lab
    from lesson_lib.sections.s07_ablation import report

    for table in (averaging.values_table(), averaging.blend_table(averaging.LESSON_WEIGHTS), heads.steps_text(),
                  s04_costs.format_table(50, 512, [1, 8]), head_lab.comparison_table(heads=(1, 8)),
                  report.table3_text()):
        assert "<table" in table._repr_html_()
