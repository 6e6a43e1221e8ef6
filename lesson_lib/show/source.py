"""Show library code in the notebook by reflection, so the lesson never pastes a copy that can drift.

The listing is highlighted here rather than by JupyterLab's editor palette, whose bracket (light) and comment
(dark) colours fall below 4.5:1 contrast: every token colour is a ``--jp-mirror-editor-…`` variable mixed with
the theme's text colour, which keeps the theme's hues and lifts the contrast in light and dark themes alike.
"""

from __future__ import annotations

import html
import inspect

__all__ = ["Listing", "source_of", "show_source", "token_colour"]

# How much of the editor's own colour a token keeps; the rest is --jp-content-font-color1 (black in light themes,
# white in dark ones), so a token is never fainter than this share of the editor colour.
_KEEP = 55
_TEXT = "var(--jp-content-font-color1, #000)"
# (pygments token type name, short CSS property on the listing, JupyterLab variable, fallback): first prefix wins.
_PALETTE = (
    ("Comment", "--ls-c", "--jp-mirror-editor-comment-color", "#408080"),
    ("Literal.String", "--ls-s", "--jp-mirror-editor-string-color", "#ba2121"),
    ("Literal.Number", "--ls-n", "--jp-mirror-editor-number-color", "#080"),
    ("Keyword", "--ls-k", "--jp-mirror-editor-keyword-color", "#008000"),
    ("Operator.Word", "--ls-k", "--jp-mirror-editor-keyword-color", "#008000"),
    ("Operator", "--ls-o", "--jp-mirror-editor-operator-color", "#aa22ff"),
    ("Punctuation", "--ls-p", "--jp-mirror-editor-punctuation-color", "#05a"),
    ("Name.Builtin", "--ls-b", "--jp-mirror-editor-builtin-color", "#008000"),
    ("Name.Function", "--ls-d", "--jp-mirror-editor-def-color", "#00f"),
    ("Name.Class", "--ls-d", "--jp-mirror-editor-def-color", "#00f"),
    ("Name.Decorator", "--ls-m", "--jp-mirror-editor-meta-color", "#aa22ff"),
)


def source_of(obj) -> str:
    """The exact source text of a function, class or module."""
    return inspect.getsource(obj)


def token_colour(kind: str) -> str | None:
    """CSS colour for a pygments token type name such as ``"Comment.Single"`` (None: the plain text colour)."""
    for prefix, _short, var, fallback in _PALETTE:
        if kind == prefix or kind.startswith(prefix + "."):
            return f"color-mix(in srgb, var({var}, {fallback}) {_KEEP}%, {_TEXT})"
    return None


def _short_property(kind: str) -> str | None:
    for prefix, short, _var, _fallback in _PALETTE:
        if kind == prefix or kind.startswith(prefix + "."):
            return short
    return None


def _palette_css() -> str:
    """The listing's own custom properties, one per token kind (so each span only says ``var(--ls-k)``)."""
    seen = {}
    for prefix, short, _var, _fallback in _PALETTE:
        seen.setdefault(short, token_colour(prefix))
    return "".join(f"{short}:{colour};" for short, colour in seen.items())


def _highlight(text: str) -> str:
    """Highlighted HTML, one block per source line with a hanging indent: a line too long for the output wraps
    under its own indentation plus 4 columns (not back to column 0), so the code's structure stays visible."""
    from pygments.lexers import PythonLexer

    lines, spans = [], []
    for kind, value in PythonLexer(stripnl=False, ensurenl=False).get_tokens(text):
        name = str(kind).removeprefix("Token.")
        short = _short_property(name)
        italic = ";font-style:italic" if name.startswith("Comment") else ""
        for i, piece in enumerate(value.split("\n")):  # a docstring token spans several lines
            if i:
                lines.append(spans)
                spans = []
            if piece:
                escaped = html.escape(piece)
                spans.append(f'<span style="color:var({short}){italic}">{escaped}</span>' if short else escaped)
    lines.append(spans)
    return "".join(_line(text_line, parts) for text_line, parts in zip(text.split("\n"), lines))


def _line(source_line: str, parts: list[str]) -> str:
    hang = len(source_line) - len(source_line.lstrip(" ")) + 4
    body = "".join(parts) or " "  # a blank line keeps its height (a preserved space)
    return f'<span class="ls-line" style="display:block;padding-left:{hang}ch;text-indent:-{hang}ch">{body}</span>'


class Listing:
    """A highlighted source listing: HTML in the notebook, the plain source as text (what nbval compares)."""

    def __init__(self, text: str, folded: str | None = None):
        self.text = text
        self.folded = folded

    def _repr_html_(self) -> str:
        style = (f"{_palette_css()}color:{_TEXT};background:var(--jp-layout-color1, #fff);"
                 "border:1px solid var(--jp-border-color2, #e0e0e0);border-radius:2px;padding:6px 8px;margin:0;"
                 "font-family:var(--jp-code-font-family, monospace);font-size:var(--jp-code-font-size, 13px);"
                 "line-height:var(--jp-code-line-height, 1.3846);"
                 # JupyterLab's output <pre> breaks anywhere (word-break: break-all): wrap long lines at spaces
                 "white-space:pre-wrap;word-break:normal;overflow-wrap:break-word")
        listing = f'<pre class="lesson-source" style="{style}">{_highlight(self.text)}</pre>'
        if self.folded:
            return f"<details><summary>{html.escape(self.folded)}</summary>{listing}</details>"
        return listing

    def __repr__(self) -> str:
        return self.text


def show_source(obj, lines: tuple[int, int] | None = None, folded: str | None = None) -> Listing:
    """``obj``'s source as a highlighted listing (optionally only lines ``[a, b)``); with ``folded``, closed
    under that summary line until the learner opens it (an exercise's answer stays out of sight)."""
    text = source_of(obj)
    if lines is not None:
        text = "\n".join(text.splitlines()[lines[0] : lines[1]])
    return Listing(text.rstrip("\n"), folded)
