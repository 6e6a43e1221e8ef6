"""Plain-text tables that line up with Chinese headers (CJK characters take two columns).

The notebook prints tables as text so that strict nbval compares every number in them.
"""

from __future__ import annotations

import numbers
import unicodedata

import numpy as np

__all__ = ["cell_text", "display_width", "text_table"]


def display_width(text: str) -> int:
    """Columns ``text`` occupies in a monospace font: wide (CJK) characters count twice."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def cell_text(value) -> str:
    """One table cell as text: 是/否 for booleans, thousands separators, 3 places without trailing zeros."""
    if isinstance(value, (bool, np.bool_)):
        return "是" if value else "否"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        value = float(value)
        return f"{value:,.3g}" if abs(value) < 1e-3 and value != 0 else f"{value:,.3f}".rstrip("0").rstrip(".")
    return str(value)


def text_table(headers, rows, align_right_numbers: bool = True) -> str:
    """Render ``rows`` (sequences of values) under ``headers`` with columns padded to line up."""
    cells = [[cell_text(v) for v in row] for row in rows]
    head = [str(h) for h in headers]
    if any(len(r) != len(head) for r in cells):
        raise ValueError("每一行的列数都应与表头相同。")
    widths = [max(display_width(x) for x in col) for col in zip(head, *cells)]

    def line(values, raw=None):
        out = []
        for i, (text, width) in enumerate(zip(values, widths)):
            pad = " " * (width - display_width(text))
            numeric = raw is not None and isinstance(raw[i], numbers.Real) and not isinstance(raw[i], (bool, np.bool_))
            out.append(pad + text if (numeric and align_right_numbers) else text + pad)
        return "  ".join(out).rstrip()

    lines = [line(head), "  ".join("-" * w for w in widths)]
    lines += [line(c, r) for c, r in zip(cells, rows)]
    return "\n".join(lines)
