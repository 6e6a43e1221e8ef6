"""HTML boxes and tables that read well in JupyterLab's light and dark themes.

Every colour is one of JupyterLab's own CSS variables (``--jp-…``), so a box follows the learner's
theme instead of hard-coding near-white text on a light background. Backgrounds mix a little of an
accent colour into the theme's page colour, and text keeps the theme's main font colour, so the
contrast stays that of the theme itself (≥ 4.5:1 in JupyterLab Light and Dark).
"""

from __future__ import annotations

import html as _html
import numbers

import numpy as np

__all__ = ["PAGE_CSS", "TEXT_STYLE", "TONES", "box", "cell_text", "html_table", "text_html"]

# tone -> accent variable (border, and a 10 % tint of the background)
TONES = {
    "note": "--jp-brand-color1",
    "ok": "--jp-success-color1",
    "bad": "--jp-error-color1",
    "warn": "--jp-warn-color1",
}
TEXT_STYLE = "color:var(--jp-content-font-color1);"
_BASE = "var(--jp-layout-color1)"


def _background(tone: str) -> str:
    if tone not in TONES:
        raise ValueError(f"unknown tone {tone!r}; choose one of {sorted(TONES)}")
    return f"color-mix(in srgb, var({TONES[tone]}) 10%, {_BASE})"


def box(inner_html: str, tone: str = "note") -> str:
    """A themed box around ready-made HTML: accent border on the left, tinted background, theme text colour."""
    return (
        f'<div class="lesson-box lesson-box-{tone}" style="{TEXT_STYLE}background:{_background(tone)};'
        f"border-left:3px solid var({TONES[tone]});padding:6px 10px;margin:4px 0;line-height:1.6;"
        f'box-sizing:border-box;max-width:100%;overflow-wrap:break-word">{inner_html}</div>'
    )


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
    """A table whose cells wrap between words, never inside one (no 「A / ttention」); headers wrap only at spaces
    (no 「工 / 作量」); code keeps its spaces and wraps only at them, so an identifier is never cut; numbers line up
    on the right. Wider than the output (a narrow window), the table scrolls inside its own box instead of being cut.
    """
    cell = "padding:3px 12px 3px 0;vertical-align:top;word-break:keep-all;overflow-wrap:normal;"
    def align(i):
        return "text-align:right;font-variant-numeric:tabular-nums;" if i in numeric_columns else "text-align:left;"

    head = "".join(f'<th scope="col" style="{cell}{align(i)}border-bottom:1px solid var(--jp-border-color1)">'
                   f"{_html.escape(str(h))}</th>" for i, h in enumerate(headers))
    body = []
    for row in rows:
        tds = "".join(f'<td style="{cell}{align(i)}{_code(cell_text(v)) if i in code_columns else ""}">'
                      f"{_html.escape(cell_text(v))}</td>" for i, v in enumerate(row))
        body.append(f"<tr>{tds}</tr>")
    return (f'<div class="lesson-table-wrap" style="max-width:100%;overflow-x:auto">'
            f'<table class="lesson-table" style="{TEXT_STYLE}border-collapse:collapse;margin:4px 0">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def _code(text: str) -> str:
    """Code font; a short fragment (a shape, a call) stays on one line, a long line wraps only at its spaces."""
    wrap = "nowrap" if len(text) <= _SHORT_CODE else "pre-wrap"
    return f"white-space:{wrap};font-family:var(--jp-code-font-family);font-size:var(--jp-code-font-size);"


_SHORT_CODE = 32  # characters: (8, 6, 64) or Attention(Q_i, K_i, V_i) is read as one piece


def text_html(text: str) -> str:
    """Plain lines of text as themed HTML (line breaks kept); empty text gives nothing."""
    if not text:
        return ""
    return f'<div style="{TEXT_STYLE}white-space:pre-line;margin:4px 0">{_html.escape(text)}</div>'


# Page-wide rules no inline style can express. The lesson's slider (widgets.slider) carries them in its stylesheet,
# which anywidget adds to the page once the first slider shows (§2, before any answer box); the static page
# (scripts/build_static.py) links them too.
PAGE_CSS = """
/* An empty answer box's hint must not look like a typed answer (Dark High Contrast draws it pure white). */
.jp-OutputArea-output input::placeholder, .jp-OutputArea-output textarea::placeholder,
.jp-RenderedHTMLCommon input::placeholder, .jp-RenderedHTMLCommon textarea::placeholder {
  color: var(--jp-ui-font-color2); font-style: italic; opacity: 0.7; }
/* A row of toggle buttons has its label beside it, as every other control does (ipywidgets stacks it above). */
.lm-Widget.widget-toggle-buttons { display: flex; flex-direction: row; align-items: center; gap: 8px; }
/* A choice's whole text is read before answering: it wraps under itself instead of being cut with 「…」, and its
   circle or box keeps its own room beside the first line. */
.lesson-reader .widget-radio-box label, .lesson-reader .widget-checkbox label,
.lesson-reader .widget-checkbox .widget-label-basic, .lesson-reader .widget-checkbox .widget-label-basic span {
  white-space: normal; overflow: visible; text-overflow: clip; height: auto; line-height: 1.45; }
.lesson-reader .widget-radio-box label, .lesson-reader .widget-checkbox .widget-label-basic {
  display: flex; align-items: flex-start; gap: 6px; padding: 2px 0; }
.lesson-reader .widget-radio-box input[type=radio], .lesson-reader .widget-checkbox input[type=checkbox] {
  flex: 0 0 auto; order: -1; margin: 0.2em 0 0 0; height: auto; align-self: flex-start; }
.lesson-reader .widget-checkbox { height: auto; min-height: var(--jp-widgets-inline-height, 28px); }
/* Printed text wraps between words, never inside one (JupyterLab's word-break: break-all gave 「engi / ne」);
   only an unbroken run longer than the line (a path) is broken. */
.jp-Notebook .jp-OutputArea-output pre { word-break: normal; overflow-wrap: break-word; }
/* Code in the prose is highlighted with JupyterLab's editor palette, whose comment (dark) and bracket (light)
   colours fall below 4.5:1: mixed with the text colour as show_source's listings are (the theme's value is read
   one element up, so the variable does not refer to itself). */
.jp-RenderedMarkdown {
  --lesson-md-comment: color-mix(in srgb, var(--jp-mirror-editor-comment-color, #408080) 55%,
                                 var(--jp-content-font-color1, #000));
  --lesson-md-punctuation: color-mix(in srgb, var(--jp-mirror-editor-punctuation-color, #05a) 55%,
                                     var(--jp-content-font-color1, #000)); }
.jp-RenderedMarkdown pre {
  --jp-mirror-editor-comment-color: var(--lesson-md-comment);
  --jp-mirror-editor-punctuation-color: var(--lesson-md-punctuation); }
/* A display formula wider than the output scrolls inside its own line instead of being cut at the edge. */
.jp-RenderedMarkdown mjx-container[display="true"], .jp-RenderedHTMLCommon mjx-container[display="true"],
.jp-RenderedMarkdown .MathJax_Display, .jp-RenderedHTMLCommon .MathJax_Display {
  max-width: 100%; overflow-x: auto; overflow-y: hidden; }
"""
