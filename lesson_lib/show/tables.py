"""Tables that line up in Chinese: aligned text (CJK characters two columns wide) as ``text/plain``, which strict
nbval compares, and a themed HTML table where JupyterLab or the static page shows them."""

from __future__ import annotations

import numbers
import unicodedata

import numpy as np

from lesson_lib.show.theme import cell_text, html_table, text_html


def display_width(text: str) -> int:
    """Columns ``text`` occupies in a monospace font: wide (CJK) characters count twice."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


class TextTable(str):
    """Aligned text (the ``str`` itself, and ``text/plain``) that JupyterLab shows as a themed HTML table."""

    def __new__(cls, text: str, html: str):
        table = super().__new__(cls, text)
        table.html = html
        return table

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:  # text/plain: the table itself, not a quoted string
        return str.__str__(self)

    def around(self, before: str = "", after: str = "") -> TextTable:
        """The table with a line of text above and/or below, in both forms."""
        text = "\n".join(part for part in (before, str.__str__(self), after) if part)
        return TextTable(text, text_html(before) + self.html + text_html(after))


def text_table(headers, rows, code_columns=()) -> TextTable:
    """``rows`` under ``headers``, columns padded to line up, numbers on the right (``code_columns``: the code font
    in HTML)."""
    cells = [[cell_text(v) for v in row] for row in rows]
    head = [str(h) for h in headers]
    if any(len(r) != len(head) for r in cells):
        raise ValueError("每一行的列数都应与表头相同。")
    widths = [max(display_width(x) for x in col) for col in zip(head, *cells)]
    numeric = [i for i in range(len(head)) if rows and all(_is_number(r[i]) for r in rows)]

    def line(values, raw=None):
        pads = [" " * (width - display_width(text)) for text, width in zip(values, widths)]
        return "  ".join(pad + text if raw is not None and _is_number(raw[i]) else text + pad
                         for i, (text, pad) in enumerate(zip(values, pads))).rstrip()

    lines = [line(head), "  ".join("-" * w for w in widths), *(line(c, r) for c, r in zip(cells, rows))]
    return TextTable("\n".join(lines), html_table(head, rows, code_columns=code_columns, numeric_columns=numeric))


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
