"""HTML boxes and tables in JupyterLab's own theme variables (``--jp-…``): text keeps the theme's colour and
backgrounds mix a little accent into its page colour, so the contrast stays the theme's own (≥ 4.5:1)."""

from __future__ import annotations

import html as _html
import numbers
from pathlib import Path

import numpy as np

# tone -> accent variable (border, and a 10 % tint of the background)
TONES = {"note": "--jp-brand-color1", "ok": "--jp-success-color1", "warn": "--jp-warn-color1"}
TEXT_STYLE = "color:var(--jp-content-font-color1);"
SHORT_CODE = 32  # characters: (8, 6, 64) or Attention(Q_i, K_i, V_i) stays on one line; longer code wraps at spaces
# Page-wide rules no inline style can express (page.css): in the widgets' stylesheets and on the static page.
PAGE_CSS = (Path(__file__).parent / "page.css").read_text(encoding="utf-8")


def box(inner_html: str, tone: str = "note") -> str:
    """A themed box around ready-made HTML: accent border on the left, tinted background, theme text colour."""
    background = f"color-mix(in srgb, var({TONES[tone]}) 10%, var(--jp-layout-color1))"
    return (f'<div class="lesson-box lesson-box-{tone}" style="{TEXT_STYLE}background:{background};'
            f"border-left:3px solid var({TONES[tone]});padding:6px 10px;margin:4px 0;line-height:1.6;"
            f'box-sizing:border-box;max-width:100%;overflow-wrap:break-word">{inner_html}</div>')


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


def html_table(headers, rows, code_columns=(), numeric_columns=()) -> str:
    """A table whose cells and headers wrap between words, never inside one (no 「A / ttention」, no 「工 / 作量」),
    code in the code font wrapping only at its spaces, numbers on the right; too wide, it scrolls in its own box."""
    cell = "padding:3px 12px 3px 0;vertical-align:top;word-break:keep-all;overflow-wrap:normal;"
    def align(i):
        return "text-align:right;font-variant-numeric:tabular-nums;" if i in numeric_columns else "text-align:left;"

    code = "white-space:{};font-family:var(--jp-code-font-family);font-size:var(--jp-code-font-size);"
    head = "".join(f'<th scope="col" style="{cell}{align(i)}border-bottom:1px solid var(--jp-border-color1)">'
                   f"{_html.escape(str(h))}</th>" for i, h in enumerate(headers))
    body = []
    for row in rows:
        texts = [cell_text(v) for v in row]
        wraps = [code.format("nowrap" if len(t) <= SHORT_CODE else "pre-wrap") if i in code_columns else ""
                 for i, t in enumerate(texts)]
        body.append("<tr>" + "".join(f'<td style="{cell}{align(i)}{wraps[i]}">{_html.escape(t)}</td>'
                                     for i, t in enumerate(texts)) + "</tr>")
    return (f'<div class="lesson-table-wrap" style="max-width:100%;overflow-x:auto">'
            f'<table class="lesson-table" style="{TEXT_STYLE}border-collapse:collapse;margin:4px 0">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def text_html(text: str) -> str:
    """Plain lines of text as themed HTML (line breaks kept); empty text gives nothing."""
    return f'<div style="{TEXT_STYLE}white-space:pre-line;margin:4px 0">{_html.escape(text)}</div>' if text else ""
