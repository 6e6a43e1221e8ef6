"""Tables that line up in Chinese: aligned text (CJK characters two columns wide) as ``text/plain``,
which strict nbval compares, and a themed HTML table (``show.theme``'s colours) where JupyterLab or
the static page shows them."""

from __future__ import annotations

import html as _html
import numbers
import unicodedata

import numpy as np

from lesson_lib.show.theme import TEXT_STYLE

# characters: (8, 6, 64) or Attention(Q_i, K_i, V_i) stays on one line; longer code wraps at spaces
SHORT_CODE = 32


def display_width(text: str) -> int:
    """Columns ``text`` occupies in a monospace font: wide (CJK) characters count twice."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


class TextTable(str):
    """Text (the ``str`` itself, and ``text/plain``) that JupyterLab shows as ``html``: an aligned
    table as a themed HTML table, library source (``show.source``) highlighted."""

    def __new__(cls, text: str, html: str):
        table = super().__new__(cls, text)
        table.html = html
        return table

    def _repr_html_(self) -> str:
        return self.html

    __repr__ = str.__str__  # text/plain: the text itself, not a quoted string

    def around(self, before: str = "", after: str = "") -> TextTable:
        text = "\n".join(part for part in (before, str.__str__(self), after) if part)
        return TextTable(text, text_html(before) + self.html + text_html(after))


def text_table(headers, rows, code_columns=()) -> TextTable:
    """``rows`` under ``headers``, padded to line up, numbers right; ``code_columns``: code font."""
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

    lines = [line(head), "  ".join("-" * w for w in widths),
             *(line(c, r) for c, r in zip(cells, rows))]
    return TextTable("\n".join(lines),
                     html_table(head, rows, code_columns=code_columns, numeric_columns=numeric))


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def cell_text(value) -> str:
    """A cell as text: 是/否 for booleans, thousands separators, 3 places, no trailing zeros."""
    if isinstance(value, (bool, np.bool_)):
        return "是" if value else "否"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        value = float(value)
        if abs(value) < 1e-3 and value != 0:
            return f"{value:,.3g}"
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return str(value)


def html_table(headers, rows, code_columns=(), numeric_columns=()) -> str:
    """A table whose cells wrap between words, never inside one (「A / ttention」, 「工 / 作量」),
    code wrapping only at its spaces, numbers right; too wide, it scrolls in its own box."""
    cell = "padding:3px 12px 3px 0;vertical-align:top;word-break:keep-all;overflow-wrap:normal;"
    right = "text-align:right;font-variant-numeric:tabular-nums;"
    align = [right if i in numeric_columns else "text-align:left;" for i in range(len(headers))]
    code = ("white-space:{};font-family:var(--jp-code-font-family);font-size:"
            "var(--jp-code-font-size);")
    border = "border-bottom:1px solid var(--jp-border-color1)"
    head = "".join(f'<th scope="col" style="{cell}{align[i]}{border}">{_html.escape(str(h))}</th>'
                   for i, h in enumerate(headers))
    body = []
    for row in rows:
        tds = []
        for i, text in enumerate(cell_text(v) for v in row):
            wrap = ""
            if i in code_columns:
                wrap = code.format("nowrap" if len(text) <= SHORT_CODE else "pre-wrap")
            tds.append(f'<td style="{cell}{align[i]}{wrap}">{_html.escape(text)}</td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    table_style = f"{TEXT_STYLE}border-collapse:collapse;margin:4px 0"
    return (f'<div class="lesson-table-wrap" style="max-width:100%;overflow-x:auto">'
            f'<table class="lesson-table" style="{table_style}">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def text_html(text: str) -> str:
    """Plain lines of text as themed HTML (line breaks kept); empty text gives nothing."""
    if not text:
        return ""
    return f'<div style="{TEXT_STYLE}white-space:pre-line;margin:4px 0">{_html.escape(text)}</div>'
